package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/heddle-io/heddle/internal/store"
)

var (
	itemsBucket = []byte("items")
	indexBucket = []byte("index")
)

// Options tune Open. The zero value is the durable default.
type Options struct {
	// LockTimeout bounds the wait for another process's lock on the file;
	// zero means one second. bbolt would otherwise wait forever.
	LockTimeout time.Duration
	// NoSync skips fsync on commit: a crash can lose recent writes or
	// corrupt the file. Only for throwaway stores (benchmarks of the layers
	// above, where the disk is not what is measured).
	NoSync bool
	// ReadOnly opens the file without writing anything to it, beside
	// other readers: for checking a copy (a backup) whose bytes must stay
	// those that were checksummed. Writes answer an error.
	ReadOnly bool
}

// Store is a store.Store on one bbolt file.
type Store struct {
	db *bolt.DB

	mu       sync.RWMutex // guards closed against sends on requests
	closed   bool
	requests chan *writeRequest
	loopDone chan struct{}
}

var _ store.Store = (*Store)(nil)

// Open opens or creates the store file at path.
func Open(path string, opts Options) (*Store, error) {
	timeout := opts.LockTimeout
	if timeout == 0 {
		timeout = time.Second
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: timeout,
		NoSync:  opts.NoSync,
		// The freelist is rebuilt on open instead of written on every
		// commit: fewer pages per small write.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		ReadOnly:       opts.ReadOnly,
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	update := db.Update
	if opts.ReadOnly {
		update = db.View
	}
	err = update(func(tx *bolt.Tx) error {
		if opts.ReadOnly {
			for _, name := range [][]byte{itemsBucket, indexBucket} {
				if tx.Bucket(name) == nil {
					return fmt.Errorf("it has no %s bucket: not a heddle store", name)
				}
			}
			return nil
		}
		for _, name := range [][]byte{itemsBucket, indexBucket} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: create buckets in %s: %w", path, err)
	}
	s := &Store{
		db:       db,
		requests: make(chan *writeRequest, maxGroup),
		loopDone: make(chan struct{}),
	}
	go s.commitLoop()
	return s, nil
}

// Close waits for queued writes to commit, then closes the file. Calls after
// Close return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.requests)
	s.mu.Unlock()
	<-s.loopDone
	return s.db.Close()
}

// write queues fn for the writer goroutine and waits for its commit.
func (s *Store) write(ctx context.Context, fn writeFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &writeRequest{fn: fn, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	select {
	case s.requests <- req:
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	s.mu.RUnlock()
	// Once queued, the request runs (or sees ctx canceled and writes
	// nothing) within one commit; waiting for it keeps the outcome certain.
	return <-req.done
}

func (s *Store) read(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	return s.db.View(fn)
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if err := store.CheckKey(k); err != nil {
		return store.Item{}, err
	}
	var it *store.Item
	err := s.read(ctx, func(tx *bolt.Tx) error {
		var err error
		it, err = getItem(tx.Bucket(itemsBucket), k)
		return err
	})
	if err != nil {
		return store.Item{}, err
	}
	if it == nil {
		return store.Item{}, fmt.Errorf("%w: %s", store.ErrNotFound, k)
	}
	return *it, nil
}

// getItem reads the item at k, nil when absent.
func getItem(items *bolt.Bucket, k store.Key) (*store.Item, error) {
	raw := items.Get(joinKey(k.PK, k.SK))
	if raw == nil {
		return nil, nil
	}
	it, err := decodeRecord(raw)
	if err != nil {
		return nil, fmt.Errorf("item %s: %w", k, err)
	}
	it.Key = k
	return &it, nil
}

// Write implements store.Store.
func (s *Store) Write(ctx context.Context, op store.Op) (store.Item, error) {
	if err := store.CheckOp(op); err != nil {
		return store.Item{}, err
	}
	if op.Kind == store.OpCheck {
		return store.Item{}, fmt.Errorf("%w: a check only makes sense in a transaction", store.ErrInvalidOp)
	}
	var written store.Item
	err := s.write(ctx, func(tx *bolt.Tx) (result, abort error) {
		written = store.Item{}
		if err := ctx.Err(); err != nil {
			return err, nil
		}
		items, index := tx.Bucket(itemsBucket), tx.Bucket(indexBucket)
		cur, err := getItem(items, op.Key)
		if err != nil {
			return nil, err
		}
		if !op.Cond.Holds(cur) {
			return &store.ConditionError{Key: op.Key, Current: cur}, nil
		}
		it, keep, err := next(op, cur)
		if err != nil {
			return err, nil
		}
		if err := apply(items, index, op.Key, cur, it, keep); err != nil {
			return nil, err
		}
		written = it
		return nil, nil
	})
	if err != nil {
		return store.Item{}, err
	}
	return written, nil
}

// Transact implements store.Store.
func (s *Store) Transact(ctx context.Context, ops []store.Op) error {
	if err := store.ValidateTransaction(ops); err != nil {
		return err
	}
	for i, op := range ops {
		if err := store.CheckOp(op); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	return s.write(ctx, func(tx *bolt.Tx) (result, abort error) {
		if err := ctx.Err(); err != nil {
			return err, nil
		}
		items, index := tx.Bucket(itemsBucket), tx.Bucket(indexBucket)
		// Every condition is evaluated before anything is written, so a
		// failure leaves the transaction untouched and reports every op
		// whose condition fails, as DynamoDB does.
		current := make([]*store.Item, len(ops))
		var reasons []error
		for i, op := range ops {
			cur, err := getItem(items, op.Key)
			if err != nil {
				return nil, err
			}
			current[i] = cur
			if !op.Cond.Holds(cur) {
				if reasons == nil {
					reasons = make([]error, len(ops))
				}
				reasons[i] = &store.ConditionError{Key: op.Key, Current: cur}
			}
		}
		if reasons != nil {
			return &store.TransactionError{Reasons: reasons}, nil
		}
		type change struct {
			it   store.Item
			keep bool
		}
		changes := make([]change, len(ops))
		for i, op := range ops {
			if op.Kind == store.OpCheck {
				continue
			}
			it, keep, err := next(op, current[i])
			if err != nil {
				return fmt.Errorf("op %d: %w", i, err), nil
			}
			changes[i] = change{it, keep}
		}
		for i, op := range ops {
			if op.Kind == store.OpCheck {
				continue
			}
			if err := apply(items, index, op.Key, current[i], changes[i].it, changes[i].keep); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
}

// apply writes it (or deletes the item when !keep) and moves its index entry.
func apply(items, index *bolt.Bucket, k store.Key, cur *store.Item, it store.Item, keep bool) error {
	recordKey := joinKey(k.PK, k.SK)
	if cur != nil && cur.Index != nil && (!keep || it.Index == nil || *it.Index != *cur.Index) {
		if err := index.Delete(joinKey(cur.Index.Partition, cur.Index.Sort, k.PK, k.SK)); err != nil {
			return err
		}
	}
	if !keep {
		if cur == nil {
			return nil
		}
		return items.Delete(recordKey)
	}
	if it.Index != nil && (cur == nil || cur.Index == nil || *it.Index != *cur.Index) {
		if err := index.Put(joinKey(it.Index.Partition, it.Index.Sort, k.PK, k.SK), recordKey); err != nil {
			return err
		}
	}
	return items.Put(recordKey, encodeRecord(it))
}

// Query implements store.Store.
func (s *Store) Query(ctx context.Context, pk string, q store.Query) (store.Page, error) {
	if err := store.CheckPartition("partition key", pk); err != nil {
		return store.Page{}, err
	}
	limit, err := store.PageSize(q.Limit)
	if err != nil {
		return store.Page{}, err
	}
	if err := store.CheckAfter(q); err != nil {
		return store.Page{}, err
	}
	var after []byte // the last key already returned, when resuming
	if q.After != "" {
		after = joinKey(pk, q.After)
	}
	if q.Cursor != "" {
		c, err := queryCursorFor(q.Cursor, pk, q)
		if err != nil {
			return store.Page{}, err
		}
		after = joinKey(pk, c.Sort)
	}
	// Every key of the partition with the sort-key prefix starts with
	// scope: the escaping keeps prefixes prefixes.
	scope := appendComponent(partitionPrefix(pk), q.Prefix)
	var page store.Page
	err = s.read(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(itemsBucket).Cursor()
		var k, v []byte
		switch {
		case !q.Descending && after == nil:
			k, v = c.Seek(scope)
		case !q.Descending:
			if k, v = c.Seek(after); bytes.Equal(k, after) {
				k, v = c.Next()
			}
		default:
			from := prefixEnd(scope)
			if after != nil {
				from = after
			}
			if from == nil {
				k, v = c.Last()
			} else if k, v = c.Seek(from); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		step := c.Next
		if q.Descending {
			step = c.Prev
		}
		for ; k != nil && bytes.HasPrefix(k, scope); k, v = step() {
			if len(page.Items) == limit {
				last := page.Items[limit-1]
				page.Next = cursor{Kind: queryCursor, Partition: pk, Prefix: q.Prefix, Descending: q.Descending, Sort: last.SK}.encode()
				return nil
			}
			it, err := decodeStored(k, v)
			if err != nil {
				return err
			}
			page.Items = append(page.Items, it)
		}
		return nil
	})
	if err != nil {
		return store.Page{}, err
	}
	return page, nil
}

// decodeStored decodes a record and the key it is stored under.
func decodeStored(k, v []byte) (store.Item, error) {
	parts, err := splitKey(k)
	if err != nil || len(parts) != 2 {
		return store.Item{}, fmt.Errorf("%w: item key %q", errCorrupt, k)
	}
	it, err := decodeRecord(v)
	if err != nil {
		return store.Item{}, fmt.Errorf("item %s / %s: %w", parts[0], parts[1], err)
	}
	it.Key = store.Key{PK: parts[0], SK: parts[1]}
	return it, nil
}

// QueryIndex implements store.Store.
func (s *Store) QueryIndex(ctx context.Context, partition string, q store.IndexQuery) (store.Page, error) {
	if err := store.CheckPartition("index partition", partition); err != nil {
		return store.Page{}, err
	}
	limit, err := store.PageSize(q.Limit)
	if err != nil {
		return store.Page{}, err
	}
	scope := partitionPrefix(partition)
	var after []byte
	if q.Cursor != "" {
		c, err := indexCursorFor(q.Cursor, partition)
		if err != nil {
			return store.Page{}, err
		}
		after = joinKey(partition, c.Sort, c.PK, c.SK)
	}
	// An entry's sort key is below SortBefore exactly when the entry's key
	// is below the partition prefix followed by SortBefore (see key.go).
	var before []byte
	if q.SortBefore != "" {
		before = appendComponent(bytes.Clone(scope), q.SortBefore)
	}
	var page store.Page
	err = s.read(ctx, func(tx *bolt.Tx) error {
		items := tx.Bucket(itemsBucket)
		c := tx.Bucket(indexBucket).Cursor()
		var k, v []byte
		if after == nil {
			k, v = c.Seek(scope)
		} else if k, v = c.Seek(after); bytes.Equal(k, after) {
			k, v = c.Next()
		}
		for ; k != nil && bytes.HasPrefix(k, scope); k, v = c.Next() {
			if before != nil && bytes.Compare(k, before) >= 0 {
				return nil
			}
			if len(page.Items) == limit {
				last := page.Items[limit-1]
				page.Next = cursor{Kind: indexCursor, Partition: partition, Sort: last.Index.Sort, PK: last.PK, SK: last.SK}.encode()
				return nil
			}
			raw := items.Get(v)
			if raw == nil {
				return fmt.Errorf("%w: index entry %q points to a missing item", errCorrupt, k)
			}
			it, err := decodeStored(v, raw)
			if err != nil {
				return err
			}
			if it.Index == nil || it.Index.Partition != partition {
				return fmt.Errorf("%w: index entry %q disagrees with its item", errCorrupt, k)
			}
			page.Items = append(page.Items, it)
		}
		return nil
	})
	if err != nil {
		return store.Page{}, err
	}
	return page, nil
}

// Backup writes a consistent copy of the whole file: one read transaction's
// view, so it never waits for writes and writes never wait for it (bbolt
// lets one writer commit while readers hold older pages). It calls begin
// with the copy's size before the first byte, and returns the bytes written.
func (s *Store) Backup(ctx context.Context, begin func(size int64) io.Writer) (int64, error) {
	var n int64
	err := s.read(ctx, func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(begin(tx.Size()))
		return err
	})
	if err != nil {
		return n, fmt.Errorf("boltstore: backup: %w", err)
	}
	return n, nil
}

// ScanRecords calls fn with every item's stored record (the encoded
// metadata and the body) in one read transaction: for checks that look at
// the raw bytes of the whole store, such as which master keys sealed its
// secrets. fn must not keep the slice past its call.
func (s *Store) ScanRecords(ctx context.Context, fn func(record []byte) error) error {
	return s.read(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(itemsBucket).ForEach(func(_, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return fn(v)
		})
	})
}
