package boltstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// TestBackupIsAConsistentCopy: a copy taken while writes go on opens as a
// store holding every write that committed before it began, and it is
// exactly as long as begin was told.
func TestBackupIsAConsistentCopy(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	for i := range 50 {
		_, err := s.Write(ctx, store.Put(store.Item{Key: store.Key{PK: "P", SK: fmt.Sprintf("%03d", i)}, Data: []byte("x")}, store.Condition{}))
		require.NoError(t, err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, err := s.Write(ctx, store.Put(store.Item{Key: store.Key{PK: "Q", SK: fmt.Sprintf("%06d", i)}}, store.Condition{}))
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var buf bytes.Buffer
	var told int64
	n, err := s.Backup(ctx, func(size int64) io.Writer { told = size; return &buf })
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	require.Equal(t, told, n)
	require.Equal(t, int64(buf.Len()), n)

	path := filepath.Join(t.TempDir(), "copy.db")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	copyStore, err := boltstore.Open(path, boltstore.Options{})
	require.NoError(t, err)
	defer copyStore.Close()
	page, err := copyStore.Query(ctx, "P", store.Query{Limit: 100})
	require.NoError(t, err)
	require.Len(t, page.Items, 50)
}

// BenchmarkWritesDuringBackup measures how long writes wait while a backup
// streams: it times single writes on a store of about 40 MB while backups
// run one after another into a slow writer (10 MB/s, a client on a modest
// link), and prints their median and worst next to the same writes with no
// backup running.
//
//	go test -run '^$' -bench WritesDuringBackup -benchtime 1x ./internal/store/boltstore/
func BenchmarkWritesDuringBackup(b *testing.B) {
	s, _ := setup(b)
	ctx := context.Background()
	blob := bytes.Repeat([]byte("d"), 40<<10)
	for i := range 1000 {
		_, err := s.Write(ctx, store.Put(store.Item{Key: store.Key{PK: "FILL", SK: fmt.Sprintf("%06d", i)}, Data: blob}, store.Condition{}))
		require.NoError(b, err)
	}
	timeWrites := func(n int) []time.Duration {
		out := make([]time.Duration, 0, n)
		for i := range n {
			start := time.Now()
			_, err := s.Write(ctx, store.Put(store.Item{Key: store.Key{PK: "W", SK: fmt.Sprintf("%06d", i)}, Data: blob[:2000]}, store.Condition{}))
			require.NoError(b, err)
			out = append(out, time.Since(start))
		}
		return out
	}
	for b.Loop() {
		quiet := timeWrites(100)
		var running atomic.Bool
		running.Store(true)
		done := make(chan error, 1)
		var backups atomic.Int64
		go func() {
			for running.Load() {
				if _, err := s.Backup(ctx, func(int64) io.Writer { return &slowWriter{perByte: time.Second / (10 << 20)} }); err != nil {
					done <- err
					return
				}
				backups.Add(1)
			}
			done <- nil
		}()
		time.Sleep(100 * time.Millisecond) // the first backup's read transaction is open
		during := timeWrites(100)
		running.Store(false)
		require.NoError(b, <-done)
		b.ReportMetric(float64(median(quiet).Microseconds()), "quiet-median-µs")
		b.ReportMetric(float64(slices.Max(quiet).Microseconds()), "quiet-max-µs")
		b.ReportMetric(float64(median(during).Microseconds()), "backup-median-µs")
		b.ReportMetric(float64(slices.Max(during).Microseconds()), "backup-max-µs")
		fmt.Printf("writes: quiet median %v max %v; during backup median %v max %v (%d backups of the store ran)\n",
			median(quiet), slices.Max(quiet), median(during), slices.Max(during), backups.Load()+1)
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// slowWriter takes perByte for every byte, in 64 KiB steps.
type slowWriter struct{ perByte time.Duration }

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Duration(len(p)) * w.perByte)
	return len(p), nil
}
