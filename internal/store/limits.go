package store

import (
	"fmt"
	"strconv"
)

// DynamoDB's limits. Every backend checks them (CheckKey, CheckOp,
// ItemSize) so that the embedded store refuses exactly what DynamoDB would;
// the conformance suite holds both backends to them.
const (
	MaxPartitionKeyBytes = 2048
	MaxSortKeyBytes      = 1024
	MaxItemBytes         = 400 * 1024
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

// CheckKey refuses an empty or oversized key.
func CheckKey(k Key) error {
	if k.PK == "" || k.SK == "" {
		return fmt.Errorf("%w: empty key %q", ErrInvalidOp, k)
	}
	if len(k.PK) > MaxPartitionKeyBytes || len(k.SK) > MaxSortKeyBytes {
		return fmt.Errorf("%w: key %.40q...: partition keys hold at most %d bytes, sort keys %d", ErrInvalidOp, k.PK, MaxPartitionKeyBytes, MaxSortKeyBytes)
	}
	return nil
}

func checkIndexKey(ix *IndexKey) error {
	if ix == nil {
		return nil
	}
	if ix.Partition == "" || ix.Sort == "" {
		return fmt.Errorf("%w: index key needs a partition and a sort key, got %q / %q", ErrInvalidOp, ix.Partition, ix.Sort)
	}
	if len(ix.Partition) > MaxPartitionKeyBytes || len(ix.Sort) > MaxSortKeyBytes {
		return fmt.Errorf("%w: index partition holds at most %d bytes, sort key %d", ErrInvalidOp, MaxPartitionKeyBytes, MaxSortKeyBytes)
	}
	return nil
}

func checkCounterNames[V any](what string, counters map[string]V) error {
	for name := range counters {
		if !validCounterName(name) {
			return fmt.Errorf("%w: %s: counter name %q: use 1 to %d letters, digits, '_', '.' or '-', starting with a letter or digit", ErrInvalidOp, what, name, maxCounterNameBytes)
		}
	}
	return nil
}

// CheckOp validates an operation: ValidateOp, then DynamoDB's limits on
// keys, conditions, counter names and index keys.
func CheckOp(op Op) error {
	if err := ValidateOp(op); err != nil {
		return err
	}
	if err := CheckKey(op.Key); err != nil {
		return err
	}
	if len(op.Cond.StatusIn) > maxStatusesInCond {
		return fmt.Errorf("%w: a condition lists at most %d statuses", ErrInvalidOp, maxStatusesInCond)
	}
	if err := checkCounterNames("condition", op.Cond.CountersAtLeast); err != nil {
		return err
	}
	switch op.Kind {
	case OpPut:
		if err := checkCounterNames("put", op.Item.Counters); err != nil {
			return err
		}
		return checkIndexKey(op.Item.Index)
	case OpUpdate:
		ch := op.Changes
		if err := checkCounterNames("add", ch.Add); err != nil {
			return err
		}
		if err := checkCounterNames("set", ch.Set); err != nil {
			return err
		}
		for name := range ch.Add {
			if _, both := ch.Set[name]; both {
				return fmt.Errorf("%w: counter %q is both added to and set", ErrInvalidOp, name)
			}
		}
		if ch.Index != nil && ch.ClearIndex {
			return fmt.Errorf("%w: an update cannot both set and clear the index entry", ErrInvalidOp)
		}
		return checkIndexKey(ch.Index)
	}
	return nil
}

// ItemSize approximates DynamoDB's item size: attribute names plus values,
// numbers at one byte per two digits plus one, under dynamostore's attribute
// names (pk, sk, v, st, d, c_<name>, gpk, gsk).
func ItemSize(it Item) int {
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

// PageSize is the page size a query asks for: 0 means DefaultPageSize, more
// than MaxPageSize is capped, a negative size is invalid.
func PageSize(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("%w: negative page size %d", ErrInvalidOp, limit)
	case limit == 0:
		return DefaultPageSize, nil
	case limit > MaxPageSize:
		return MaxPageSize, nil
	}
	return limit, nil
}

// CheckPartition refuses an empty or oversized partition key (what names a
// query's partition or an index partition).
func CheckPartition(what, pk string) error {
	if pk == "" || len(pk) > MaxPartitionKeyBytes {
		return fmt.Errorf("%w: %s must hold 1 to %d bytes", ErrInvalidOp, what, MaxPartitionKeyBytes)
	}
	return nil
}

// CheckAfter refuses a Query whose After cannot be honored: After starts an
// ascending range, which neither a prefix nor a descending order can carry
// (DynamoDB takes one condition on the sort key).
func CheckAfter(q Query) error {
	if q.After != "" && (q.Prefix != "" || q.Descending) {
		return fmt.Errorf("%w: After applies to ascending queries without a prefix", ErrInvalidOp)
	}
	return nil
}
