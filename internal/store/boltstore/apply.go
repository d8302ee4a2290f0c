package boltstore

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/heddle-io/heddle/internal/store"
)

// next computes the item op leaves behind, given the current one (nil when
// absent). It returns ok=false for a delete. It never modifies cur or op.
func next(op store.Op, cur *store.Item) (it store.Item, ok bool, err error) {
	var version int64
	if cur != nil {
		version = cur.Version
	}
	switch op.Kind {
	case store.OpDelete:
		return store.Item{}, false, nil
	case store.OpPut:
		it = op.Item
		it.Counters = cloneCounters(op.Item.Counters)
		it.Data = cloneData(op.Item.Data)
		if op.Item.Index != nil {
			ix := *op.Item.Index
			it.Index = &ix
		}
	case store.OpUpdate:
		if cur != nil {
			it = *cur
			it.Counters = cloneCounters(cur.Counters)
		} else {
			it.Key = op.Key
		}
		ch := op.Changes
		if ch.Data != nil {
			it.Data = cloneData(ch.Data)
		}
		if ch.Status != nil {
			it.Status = *ch.Status
		}
		if len(ch.Add)+len(ch.Set) > 0 && it.Counters == nil {
			it.Counters = make(map[string]int64, len(ch.Add)+len(ch.Set))
		}
		for name, delta := range ch.Add {
			sum := it.Counters[name] + delta
			// Overflow wraps in Go; DynamoDB would store the exact number and
			// then no longer fit it in an int64. Refuse instead.
			if delta > 0 && sum < it.Counters[name] || delta < 0 && sum > it.Counters[name] {
				return store.Item{}, false, fmt.Errorf("%w: counter %q would overflow", store.ErrInvalidOp, name)
			}
			it.Counters[name] = sum
		}
		maps.Copy(it.Counters, ch.Set)
		if ch.Index != nil {
			ix := *ch.Index
			it.Index = &ix
		}
		if ch.ClearIndex {
			it.Index = nil
		}
	default:
		return store.Item{}, false, fmt.Errorf("%w: %v cannot be written", store.ErrInvalidOp, op.Kind)
	}
	if version == math.MaxInt64 {
		return store.Item{}, false, fmt.Errorf("%w: version would overflow", store.ErrInvalidOp)
	}
	it.Version = version + 1
	if size := store.ItemSize(it); size > store.MaxItemBytes {
		return store.Item{}, false, fmt.Errorf("%w: item %s would hold %d bytes; the limit is %d", store.ErrInvalidOp, op.Key, size, store.MaxItemBytes)
	}
	return it, true, nil
}

func cloneCounters(m map[string]int64) map[string]int64 {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// cloneData copies a body; an empty body is stored and returned as nil, as
// DynamoDB has no empty binary attribute worth keeping.
func cloneData(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}
