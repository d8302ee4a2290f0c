package main

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/backup"
	"github.com/heddle-io/heddle/internal/secrets"
)

func newBackupCommand(a *app) *cobra.Command {
	var dataDir, out string
	cmd := &cobra.Command{
		Use:   "backup --out DIR",
		Short: "Save the local server's store and master key while it runs (superadmin)",
		Long: `Save a consistent copy of heddle server's embedded store, fetched from the
running server (GET /v1/backup, superadmin key), and the master key that
unseals its secrets, copied from the data directory: run it on the server's
machine, with --data-dir the server's own data directory: a key that did
not seal the server's store is refused. DIR must not exist or be empty; it gets heddle.db, master.key and
manifest.json, each readable by its owner alone. The master key is never
printed. Whoever holds DIR can read every secret heddle keeps: store it as
you store the data directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			// The key's id, to compare with the server's before the
			// download; a key that cannot be read is Save's to report.
			var keyID string
			if k, err := secrets.ReadKeyFile(filepath.Join(dataDir, backup.MasterKeyFile)); err == nil {
				keyID = k.ID()
			}
			m, err := backup.Save(out, dataDir, buildVersion(), func(w io.Writer) (int64, error) {
				return fetchBackup(cmd, c, keyID, dataDir, w)
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "saved %s (%d bytes, sha256 %s)\nsaved the master key to %s (mode 0600): it unseals the secrets in the store; keep the directory private\n",
				out+"/"+m.Store.Name, m.Store.Bytes, m.Store.SHA256, out+"/"+m.MasterKey)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", envOr("HEDDLE_DATA_DIR", ".heddle"), "the server's data directory, where the master key is (HEDDLE_DATA_DIR)")
	cmd.Flags().StringVar(&out, "out", "", "the backup directory to create (required)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// fetchBackup streams GET /v1/backup into w. The server says the length up
// front, so a copy cut short is an error here, not a short file; and the
// id of the key that seals its store, so a dataDir holding another key
// (keyID) is refused before the download. A server that does not say is
// checked by Save on the copy.
func fetchBackup(cmd *cobra.Command, c *Client, keyID, dataDir string, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(cmd.Context(), http.MethodGet, c.Endpoint+"/v1/backup", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	req.Header.Set("User-Agent", "heddle-cli/"+buildVersion())
	// No overall timeout: a large store takes what it takes; Ctrl-C ends it.
	hc := *c.HTTP
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("cannot reach heddle at %s: %w", c.Endpoint, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return 0, responseError(resp.StatusCode, data)
	}
	if server := resp.Header.Get(api.BackupKeyHeader); server != "" && keyID != "" && server != keyID {
		return 0, fmt.Errorf("%w: the store is sealed by master key %s, the key offered with it is %s; %s is not the master key of the server at %s: --data-dir must be that server's data directory (nothing was saved)",
			backup.ErrWrongKey, server, keyID, filepath.Join(dataDir, backup.MasterKeyFile), c.Endpoint)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("the server's copy broke off after %d bytes: %w", n, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("the server's copy broke off after %d of %d bytes", n, resp.ContentLength)
	}
	return n, nil
}

func newRestoreCommand() *cobra.Command {
	var dataDir, from string
	var force bool
	cmd := &cobra.Command{
		Use:   "restore --from DIR",
		Short: "Bring a backup back into a data directory (the server stopped)",
		Long: `Restore a backup made by heddle backup into a data directory: its store and
master key. The data directory must be missing or empty unless --force, which
replaces the store and master key and keeps the rest (the local provider's
nodes). A store that a running server holds is never replaced: stop it first.
The backup's length and checksum are checked, and the store opened, before
anything is replaced.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := backup.Restore(from, dataDir, force)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored the store of %s (heddle %s) and its master key into %s; start heddle server --data-dir %s\n",
				m.CreatedAt.Format("2006-01-02 15:04:05 MST"), m.HeddleVersion, dataDir, dataDir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", envOr("HEDDLE_DATA_DIR", ".heddle"), "the data directory to restore into (HEDDLE_DATA_DIR)")
	cmd.Flags().StringVar(&from, "from", "", "the backup directory (required)")
	cmd.Flags().BoolVar(&force, "force", false, "replace the store and master key of a data directory that is not empty")
	_ = cmd.MarkFlagRequired("from")
	return cmd
}
