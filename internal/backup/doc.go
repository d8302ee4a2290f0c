// Package backup saves the local server's data directory as a backup
// directory and brings one back.
//
// A backup directory holds three files, each readable by its owner alone
// (0600, the directory 0700):
//
//	heddle.db      the embedded store as one read transaction saw it (every
//	               tenant's catalog, users, key hashes, clusters, jobs; the
//	               provider secrets and node credentials still sealed)
//	master.key     the data directory's master key, which unseals them
//	manifest.json  what was saved, when, by which heddle, and the store's
//	               length and SHA-256
//
// The store is fetched from the running server (GET /v1/backup): bbolt locks
// its file against every other process, so the server is the only one that
// can read it while it runs. The master key is never sent over the API: it
// is copied from the data directory, which is why the backup is taken on the
// server's machine. Neither file is ever printed. A store and a key that do
// not belong together are refused (ErrWrongKey): the server records its
// key's id in the store (KeyItem), and a store from before the record is
// scanned for the key ids its sealed values name.
//
// Restore refuses a data directory that holds anything unless forced, and a
// store another process (a running server) holds open even then. It checks
// the store's length and checksum and that it opens before anything in the
// data directory is replaced, and replaces the two files by rename.
package backup
