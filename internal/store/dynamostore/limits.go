package dynamostore

import (
	"fmt"
	"strconv"

	"github.com/heddle-io/heddle/internal/store"
)

// DynamoDB's limits, checked before a request so that a bad operation fails
// with store.ErrInvalidOp, exactly where boltstore (which holds the same
// rules) fails it; the conformance suite checks both.
const (
	maxPartitionKeyBytes = 2048
	maxSortKeyBytes      = 1024
	maxItemBytes         = 400 * 1024
	maxStatusesInCond    = 100 // operands of DynamoDB's IN
	maxCounterNameBytes  = 64
)

// validCounterName keeps counter names to what reads well as a DynamoDB
// attribute name suffix: a letter or digit, then letters, digits, '_', '.'
// or '-'.
func validCounterName(name string) bool {
	if name == "" || len(name) > maxCounterNameBytes {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '.' && c != '-') {
			return false
		}
	}
	return true
}

func checkKey(k store.Key) error {
	if k.PK == "" || k.SK == "" {
		return fmt.Errorf("%w: empty key %q", store.ErrInvalidOp, k)
	}
	if len(k.PK) > maxPartitionKeyBytes || len(k.SK) > maxSortKeyBytes {
		return fmt.Errorf("%w: key %.40q...: partition keys hold at most %d bytes, sort keys %d", store.ErrInvalidOp, k.PK, maxPartitionKeyBytes, maxSortKeyBytes)
	}
	return nil
}

func checkIndexKey(ix *store.IndexKey) error {
	if ix == nil {
		return nil
	}
	if ix.Partition == "" || ix.Sort == "" {
		return fmt.Errorf("%w: index key needs a partition and a sort key, got %q / %q", store.ErrInvalidOp, ix.Partition, ix.Sort)
	}
	if len(ix.Partition) > maxPartitionKeyBytes || len(ix.Sort) > maxSortKeyBytes {
		return fmt.Errorf("%w: index partition holds at most %d bytes, sort key %d", store.ErrInvalidOp, maxPartitionKeyBytes, maxSortKeyBytes)
	}
	return nil
}

func checkCounterNames[V any](what string, counters map[string]V) error {
	for name := range counters {
		if !validCounterName(name) {
			return fmt.Errorf("%w: %s: counter name %q: use 1 to %d letters, digits, '_', '.' or '-', starting with a letter or digit", store.ErrInvalidOp, what, name, maxCounterNameBytes)
		}
	}
	return nil
}

// checkOp validates what store.ValidateOp leaves to backends.
func checkOp(op store.Op) error {
	if err := store.ValidateOp(op); err != nil {
		return err
	}
	if err := checkKey(op.Key); err != nil {
		return err
	}
	if len(op.Cond.StatusIn) > maxStatusesInCond {
		return fmt.Errorf("%w: a condition lists at most %d statuses", store.ErrInvalidOp, maxStatusesInCond)
	}
	if err := checkCounterNames("condition", op.Cond.CountersAtLeast); err != nil {
		return err
	}
	switch op.Kind {
	case store.OpPut:
		if err := checkCounterNames("put", op.Item.Counters); err != nil {
			return err
		}
		return checkIndexKey(op.Item.Index)
	case store.OpUpdate:
		ch := op.Changes
		if err := checkCounterNames("add", ch.Add); err != nil {
			return err
		}
		if err := checkCounterNames("set", ch.Set); err != nil {
			return err
		}
		for name := range ch.Add {
			if _, both := ch.Set[name]; both {
				return fmt.Errorf("%w: counter %q is both added to and set", store.ErrInvalidOp, name)
			}
		}
		if ch.Index != nil && ch.ClearIndex {
			return fmt.Errorf("%w: an update cannot both set and clear the index entry", store.ErrInvalidOp)
		}
		return checkIndexKey(ch.Index)
	}
	return nil
}

// itemSize approximates DynamoDB's item size: attribute names plus values,
// numbers at one byte per two digits plus one. Puts are checked with it so
// the boundary matches boltstore's; DynamoDB itself refuses larger updates.
func itemSize(it store.Item) int {
	number := func(n int64) int { return len(strconv.FormatInt(n, 10))/2 + 2 }
	size := 2 + len(it.PK) + 2 + len(it.SK) + 1 + number(it.Version)
	if it.Status != "" {
		size += 2 + len(it.Status)
	}
	if len(it.Data) > 0 {
		size += 1 + len(it.Data)
	}
	for name, v := range it.Counters {
		size += 2 + len(name) + number(v)
	}
	if it.Index != nil {
		size += 3 + len(it.Index.Partition) + 3 + len(it.Index.Sort)
	}
	return size
}
