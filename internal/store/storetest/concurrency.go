package storetest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
)

const (
	workers            = 8
	writesPerWorker    = 25
	transfersPerWorker = 10
)

// parallel runs fn on n goroutines and returns the first error.
func parallel(n int, fn func(worker int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for w := range n {
		wg.Go(func() { errs[w] = fn(w) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// testConcurrentVersionedUpdates is the lost-update test: every worker reads
// the body, increments the number in it and writes it back on the version it
// read, retrying from the ConditionError's current item when it lost a race.
func testConcurrentVersionedUpdates(t *testing.T, s store.Store) {
	k := key("race", "rmw")
	mustWrite(t, s, store.Put(store.Item{Key: k, Data: []byte("0")}, store.Condition{MustNotExist: true}))
	err := parallel(workers, func(int) error {
		cur, err := s.Get(t.Context(), k)
		if err != nil {
			return err
		}
		for range writesPerWorker {
			for {
				n, err := strconv.Atoi(string(cur.Data))
				if err != nil {
					return err
				}
				written, err := s.Write(t.Context(), store.Update(k, store.Condition{Version: cur.Version}, store.Changes{Data: []byte(strconv.Itoa(n + 1))}))
				var ce *store.ConditionError
				if errors.As(err, &ce) {
					if ce.Current == nil {
						return errors.New("item vanished")
					}
					cur = *ce.Current
					continue
				}
				if err != nil {
					return err
				}
				cur = written
				break
			}
		}
		return nil
	})
	require.NoError(t, err)
	final := mustGet(t, s, k)
	require.Equal(t, strconv.Itoa(workers*writesPerWorker), string(final.Data), "no lost update")
	require.Equal(t, int64(1+workers*writesPerWorker), final.Version)
}

func testConcurrentCounterAdds(t *testing.T, s store.Store) {
	k := key("race", "adds")
	err := parallel(workers, func(int) error {
		for range writesPerWorker {
			if _, err := s.Write(t.Context(), store.Update(k, store.Condition{}, store.Changes{Add: map[string]int64{"n": 1, "m": -2}})); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	final := mustGet(t, s, k)
	require.Equal(t, int64(workers*writesPerWorker), final.Counter("n"))
	require.Equal(t, int64(-2*workers*writesPerWorker), final.Counter("m"))
	require.Equal(t, int64(workers*writesPerWorker), final.Version, "every add bumps the version once")
}

// testConcurrentPuts checks that unconditional puts racing on one item each
// bump the version exactly once.
func testConcurrentPuts(t *testing.T, s store.Store) {
	k := key("race", "puts")
	err := parallel(workers, func(w int) error {
		for i := range writesPerWorker {
			it, err := s.Write(t.Context(), store.Put(store.Item{Key: k, Data: []byte(strconv.Itoa(w*1000 + i))}, store.Condition{}))
			if err != nil {
				return err
			}
			if it.Version < 1 || it.Version > workers*writesPerWorker {
				return errors.New("version out of range: " + strconv.FormatInt(it.Version, 10))
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, int64(workers*writesPerWorker), mustGet(t, s, k).Version)
}

func testConcurrentCreate(t *testing.T, s store.Store) {
	k := key("race", "create")
	var mu sync.Mutex
	winners := 0
	err := parallel(workers, func(w int) error {
		_, err := s.Write(t.Context(), store.Put(store.Item{Key: k, Data: []byte{byte(w)}}, store.Condition{MustNotExist: true}))
		if errors.Is(err, store.ErrConditionFailed) {
			return nil
		}
		if err == nil {
			mu.Lock()
			winners++
			mu.Unlock()
		}
		return err
	})
	require.NoError(t, err)
	require.Equal(t, 1, winners)
	require.Equal(t, int64(1), mustGet(t, s, k).Version)
}

// testConcurrentReservations is how cluster names are claimed: each
// worker's transaction writes an item of its own and claims one shared key
// (MustNotExist), as a create writes its cluster and the name's
// reservation. Exactly one commits, no loser's own item lands, and each
// loser's reason names the holder (the claimed item as it is), which is
// how a refusal says which cluster has the name.
func testConcurrentReservations(t *testing.T, s store.Store) {
	claim := key("race", "reservation")
	owner := func(w int) string { return fmt.Sprint("owner-", w) }
	errs := make([]error, workers)
	err := parallel(workers, func(w int) error {
		errs[w] = s.Transact(t.Context(), []store.Op{
			store.Put(store.Item{Key: key("race", owner(w))}, store.Condition{MustNotExist: true}),
			store.Put(store.Item{Key: claim, Status: owner(w)}, store.Condition{MustNotExist: true}),
		})
		return nil
	})
	require.NoError(t, err)
	winner := -1
	for w, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "two claims committed")
			winner = w
		}
	}
	require.GreaterOrEqual(t, winner, 0, "one claim commits")
	require.Equal(t, owner(winner), mustGet(t, s, claim).Status)
	for w, err := range errs {
		if w == winner {
			continue
		}
		var terr *store.TransactionError
		require.ErrorAs(t, err, &terr)
		require.Nil(t, terr.Reasons[0], "only the claim failed")
		var cerr *store.ConditionError
		require.ErrorAs(t, terr.Reasons[1], &cerr)
		if cerr.Current != nil {
			require.Equal(t, owner(winner), cerr.Current.Status, "a refusal names the holder")
		}
		_, err := s.Get(t.Context(), key("race", owner(w)))
		require.ErrorIs(t, err, store.ErrNotFound, "a refused transaction wrote nothing")
	}
}

// testConcurrentTransfers moves units between two items in versioned
// transactions: the total must be conserved and every transfer counted.
func testConcurrentTransfers(t *testing.T, s store.Store) {
	a, b := key("race", "a"), key("race", "b")
	const total = workers * transfersPerWorker
	putAll(t, s, []store.Item{
		{Key: a, Counters: map[string]int64{"units": total}},
		{Key: b, Counters: map[string]int64{"units": 0}},
	})
	err := parallel(workers, func(w int) error {
		from, to := a, b
		if w%2 == 1 {
			from, to = b, a
		}
		for range transfersPerWorker {
			err := retryOnCondition(t.Context(), func() error {
				src, err := s.Get(t.Context(), from)
				if err != nil {
					return err
				}
				dst, err := s.Get(t.Context(), to)
				if err != nil {
					return err
				}
				return s.Transact(t.Context(), []store.Op{
					store.Update(from, store.Condition{Version: src.Version, CountersAtLeast: map[string]int64{"units": 1}}, store.Changes{Add: map[string]int64{"units": -1, "moves": 1}}),
					store.Update(to, store.Condition{Version: dst.Version}, store.Changes{Add: map[string]int64{"units": 1, "moves": 1}}),
				})
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	ia, ib := mustGet(t, s, a), mustGet(t, s, b)
	require.Equal(t, int64(total), ia.Counter("units")+ib.Counter("units"), "units are conserved")
	require.Equal(t, int64(2*total), ia.Counter("moves")+ib.Counter("moves"), "every transfer counted once on each side")
	require.Equal(t, int64(2+2*total), ia.Version+ib.Version)
}
