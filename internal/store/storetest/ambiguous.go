package storetest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/faults"
	"github.com/heddle-io/heddle/internal/store"
)

// Faulty is a store under test whose requests go through a fault layer: the
// ambiguity cases arm it so that writes are applied and their answers
// lost. A store with no network between it and its data (the embedded
// one) is not Faulty, has no ambiguity, and must end in the same state.
type Faulty interface {
	store.Store
	Faults() *faults.Injector
}

// arm scripts faults on operation when s is Faulty, and reports whether
// it is.
func arm(s store.Store, operation string, kinds ...faults.Kind) bool {
	f, ok := s.(Faulty)
	if ok {
		f.Faults().Arm(operation, kinds...)
	}
	return ok
}

// testTransactAppliedThenRetried: a transaction applied, its answer lost
// (a timeout), then resent and the resend's answer lost too (a 500 after
// it was answered as the first), succeeds and applies exactly once; only a
// new call of the same operations is a new transaction, and fails its
// conditions.
func testTransactAppliedThenRetried(t *testing.T, s store.Store) {
	a, c, d := key("amb", "a"), key("amb", "c"), key("amb", "d")
	mustWrite(t, s, store.Put(store.Item{Key: a, Counters: map[string]int64{"n": 1}}, store.Condition{}))
	mustWrite(t, s, store.Put(store.Item{Key: d, Data: []byte("gone soon")}, store.Condition{}))
	ops := []store.Op{
		store.Update(a, store.Condition{Version: 1}, store.Changes{Add: map[string]int64{"n": 1}, Status: ptr("DONE")}),
		store.Put(store.Item{Key: c, Data: []byte("new")}, store.Condition{MustNotExist: true}),
		store.Delete(d, store.Condition{MustExist: true}),
	}
	arm(s, "TransactWriteItems", faults.TimeoutAfter, faults.ServerErrorAfter)
	require.NoError(t, s.Transact(t.Context(), ops), "a transaction whose first answers were lost is answered as it was applied")
	requireState(t, s, a, &store.Item{Key: a, Version: 2, Status: "DONE", Counters: map[string]int64{"n": 2}})
	requireState(t, s, c, &store.Item{Key: c, Version: 1, Data: []byte("new")})
	requireMissing(t, s, d)

	err := s.Transact(t.Context(), ops)
	require.ErrorIs(t, err, store.ErrConditionFailed, "a second call is a second transaction")
	require.Equal(t, int64(2), mustGet(t, s, a).Counter("n"))

	// Throttled transactions were never applied: sent again, they apply once.
	arm(s, "TransactWriteItems", faults.Throttle, faults.Throttle, faults.ServerError)
	require.NoError(t, s.Transact(t.Context(), []store.Op{
		store.Update(a, store.Condition{Version: 2}, store.Changes{Add: map[string]int64{"n": 1}}),
	}))
	require.Equal(t, int64(3), mustGet(t, s, a).Counter("n"))

	// A transaction whose condition fails, its answer lost, still fails
	// when resent with its token: a token never turns a refusal into a
	// success.
	arm(s, "TransactWriteItems", faults.TimeoutAfter)
	err = s.Transact(t.Context(), []store.Op{store.Put(store.Item{Key: c}, store.Condition{MustNotExist: true})})
	var te *store.TransactionError
	require.ErrorAs(t, err, &te)
	require.ErrorIs(t, err, store.ErrConditionFailed)
	requireState(t, s, c, &store.Item{Key: c, Version: 1, Data: []byte("new")})
}

// testWriteAppliedThenRetried: single-item writes whose answer was lost are
// read back before anything is reported. A put or an update that pinned
// the version it replaced recognizes its own result; a write that cannot
// (a delete, an update on a status) reports ErrUnknownOutcome, never a
// lost race.
func testWriteAppliedThenRetried(t *testing.T, s store.Store) {
	k := key("amb1", "k")
	arm(s, "PutItem", faults.TimeoutAfter)
	it := mustWrite(t, s, store.Put(store.Item{Key: k, Status: "NEW", Counters: map[string]int64{"n": 1}}, store.Condition{MustNotExist: true}))
	require.Equal(t, int64(1), it.Version)
	requireState(t, s, k, &store.Item{Key: k, Version: 1, Status: "NEW", Counters: map[string]int64{"n": 1}})

	arm(s, "PutItem", faults.ServerErrorAfter)
	it = mustWrite(t, s, store.Put(store.Item{Key: k, Status: "PUT", Counters: map[string]int64{"n": 5}}, store.Condition{Version: 1}))
	require.Equal(t, int64(2), it.Version)

	arm(s, "UpdateItem", faults.TimeoutAfter, faults.ServerErrorAfter)
	it = mustWrite(t, s, store.Update(k, store.Condition{Version: 2}, store.Changes{Status: ptr("RUNNING"), Add: map[string]int64{"n": 1}}))
	want := store.Item{Key: k, Version: 3, Status: "RUNNING", Counters: map[string]int64{"n": 6}}
	require.Equal(t, want, it)
	requireState(t, s, k, &want)

	// An update on a status alone: the status it left says nothing of who
	// left it.
	faulty := arm(s, "UpdateItem", faults.TimeoutAfter)
	_, err := s.Write(t.Context(), store.Update(k, store.Condition{StatusIn: []string{"RUNNING"}}, store.Changes{Status: ptr("DONE")}))
	requireNotLost(t, err, faulty)
	requireState(t, s, k, &store.Item{Key: k, Version: 4, Status: "DONE", Counters: map[string]int64{"n": 6}})

	faulty = arm(s, "DeleteItem", faults.TimeoutAfter)
	_, err = s.Write(t.Context(), store.Delete(k, store.Condition{Version: 4}))
	requireNotLost(t, err, faulty)
	requireMissing(t, s, k)

	// Throttling and a 500 before the request was sent: never applied, so
	// plainly retried.
	arm(s, "UpdateItem", faults.Throttle, faults.ServerError, faults.Throttle)
	it = mustWrite(t, s, store.Update(k, store.Condition{}, store.Changes{Add: map[string]int64{"n": 1}}))
	require.Equal(t, int64(1), it.Counter("n"), "applied once")
}

// requireNotLost: a write whose outcome was made unknown (faulty) either
// reports ErrUnknownOutcome or succeeds, and is never a lost race; one
// with no fault succeeds.
func requireNotLost(t *testing.T, err error, faulty bool) {
	t.Helper()
	require.False(t, errors.Is(err, store.ErrConditionFailed), "an applied write reported as a lost race: %v", err)
	if !faulty {
		require.NoError(t, err)
		return
	}
	require.ErrorIs(t, err, store.ErrUnknownOutcome)
}
