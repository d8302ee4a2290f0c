package boltstore

import (
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// maxGroup bounds how many writes share one bbolt transaction, and so how
// long any one of them waits behind the others.
const maxGroup = 512

// writeFunc runs inside a shared write transaction. It returns result, what
// its caller gets once the transaction commits (a condition failure, say),
// and abort, an error after which the transaction must not commit because
// the function may have written part of its work. A function that returns a
// result error must have written nothing. A function may run more than once
// (when another function of its group aborts), so it must set its outputs
// afresh on every run.
type writeFunc func(tx *bolt.Tx) (result, abort error)

type writeRequest struct {
	fn   writeFunc
	done chan error
}

// commitLoop is the one goroutine that writes. It takes the first queued
// request, then every other request already queued (up to maxGroup), runs
// them all in one transaction and commits once. While it syncs, new requests
// queue up and form the next group. It ends when requests is closed.
func (s *Store) commitLoop() {
	defer close(s.loopDone)
	group := make([]*writeRequest, 0, maxGroup)
	for first := range s.requests {
		group = append(group[:0], first)
	fill:
		for len(group) < maxGroup {
			select {
			case r, ok := <-s.requests:
				if !ok {
					break fill
				}
				group = append(group, r)
			default:
				break fill
			}
		}
		s.commitGroup(group)
	}
}

// commitGroup commits a group, taking out any function that aborts (it gets
// its error; the others run again in a new transaction).
func (s *Store) commitGroup(group []*writeRequest) {
	results := make([]error, len(group))
	for len(group) > 0 {
		failed := -1
		var abortErr error
		err := s.db.Update(func(tx *bolt.Tx) error {
			for i, r := range group {
				result, abort := safeRun(r.fn, tx)
				if abort != nil {
					failed, abortErr = i, abort
					return abort
				}
				results[i] = result
			}
			return nil
		})
		if failed >= 0 {
			group[failed].done <- abortErr
			group = slices.Delete(group, failed, failed+1)
			results = results[:len(group)]
			continue
		}
		for i, r := range group {
			if err != nil {
				r.done <- fmt.Errorf("boltstore: commit: %w", err)
			} else {
				r.done <- results[i]
			}
		}
		return
	}
}

// safeRun turns a panic into an abort, so one bad function cannot take down
// the writer goroutine and with it every later write.
func safeRun(fn writeFunc, tx *bolt.Tx) (result, abort error) {
	defer func() {
		if p := recover(); p != nil {
			abort = fmt.Errorf("boltstore: write panicked: %v", p)
		}
	}()
	return fn(tx)
}

// ErrClosed is returned by every method called after Close.
var ErrClosed = errors.New("boltstore: store is closed")
