package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// MaxTransactItems is the most operations one Transact may carry: DynamoDB's
// TransactWriteItems limit. Longer work needs a multi-step protocol.
const MaxTransactItems = 100

// MaxTransactBytes is the most data one Transact may carry: DynamoDB refuses
// a transaction whose items add up to more than 4 MB. TransactSize is how
// heddle counts it.
const MaxTransactBytes = 4 << 20

// Key addresses one item.
type Key struct {
	PK string
	SK string
}

func (k Key) String() string { return k.PK + " / " + k.SK }

// IndexKey places an item in the sparse secondary index. Items without one are
// not indexed. Sort keys compare as byte strings, so times are written as
// fixed-width strings (see SortableTime).
type IndexKey struct {
	Partition string
	Sort      string
}

// Item is one stored record.
type Item struct {
	Key
	// Version is set by the store: 1 on the first write, one more on every
	// write after (put, update or counter add).
	Version int64
	// Status is optional; conditions may require it to be one of a set.
	Status string
	// Counters are numbers that Update can add to atomically, without a read.
	Counters map[string]int64
	// Index, when set, puts the item in the secondary index.
	Index *IndexKey
	// Data is the item's body, usually an entity's JSON.
	Data []byte
}

// Counter returns the named counter, or 0.
func (it Item) Counter(name string) int64 { return it.Counters[name] }

// Condition must hold, on the item as it is before the write, for the write to
// happen. Its parts are ANDed; the zero Condition always holds.
type Condition struct {
	// MustExist and MustNotExist test whether the item is there.
	MustExist    bool
	MustNotExist bool
	// Version, when non-zero, requires exactly this version (and so that the
	// item exists).
	Version int64
	// StatusIn, when non-empty, requires the item's status to be one of these
	// (and so that the item exists).
	StatusIn []string
	// CountersAtLeast requires each named counter to be at least the given
	// value (a missing counter counts as 0; the item must exist).
	CountersAtLeast map[string]int64
}

// IsZero reports whether c holds for any item.
func (c Condition) IsZero() bool {
	return !c.MustExist && !c.MustNotExist && c.Version == 0 && len(c.StatusIn) == 0 && len(c.CountersAtLeast) == 0
}

// Holds evaluates c against the current item (nil when absent). Backends that
// evaluate conditions themselves (the embedded one) call it; the DynamoDB
// backend translates c into a ConditionExpression with the same meaning.
func (c Condition) Holds(current *Item) bool {
	exists := current != nil
	if c.MustNotExist && exists {
		return false
	}
	needsItem := c.MustExist || c.Version != 0 || len(c.StatusIn) > 0 || len(c.CountersAtLeast) > 0
	if needsItem && !exists {
		return false
	}
	if !exists {
		return true
	}
	if c.Version != 0 && current.Version != c.Version {
		return false
	}
	if len(c.StatusIn) > 0 {
		ok := false
		for _, s := range c.StatusIn {
			if current.Status == s {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for name, min := range c.CountersAtLeast {
		if current.Counters[name] < min {
			return false
		}
	}
	return true
}

// Changes is what an Update does to an item. Fields left nil are untouched.
// An Update of a missing item creates it (as DynamoDB's UpdateItem does) unless
// the condition requires it to exist.
type Changes struct {
	Data       []byte           // replaces the body when non-nil
	Status     *string          // replaces the status when non-nil
	Add        map[string]int64 // added to counters; a missing counter starts at 0
	Set        map[string]int64 // counters set outright
	Index      *IndexKey        // replaces the index entry when non-nil
	ClearIndex bool             // removes the index entry
}

// OpKind says what an Op does.
type OpKind int

const (
	OpPut    OpKind = iota + 1 // write a whole item
	OpUpdate                   // change parts of an item
	OpDelete                   // remove an item
	OpCheck                    // only test a condition (in a transaction)
)

func (k OpKind) String() string {
	switch k {
	case OpPut:
		return "put"
	case OpUpdate:
		return "update"
	case OpDelete:
		return "delete"
	case OpCheck:
		return "check"
	}
	return fmt.Sprintf("op(%d)", int(k))
}

// Op is one write, alone or in a transaction. Build it with Put, Update,
// Delete or Check.
type Op struct {
	Kind    OpKind
	Key     Key
	Cond    Condition
	Item    Item    // for OpPut: Version is ignored (the store sets it)
	Changes Changes // for OpUpdate
}

// Put writes it whole, replacing any item with its key, if cond holds.
func Put(it Item, cond Condition) Op { return Op{Kind: OpPut, Key: it.Key, Item: it, Cond: cond} }

// Update applies ch to the item at k if cond holds.
func Update(k Key, cond Condition, ch Changes) Op {
	return Op{Kind: OpUpdate, Key: k, Cond: cond, Changes: ch}
}

// Delete removes the item at k if cond holds. Deleting a missing item with no
// condition succeeds.
func Delete(k Key, cond Condition) Op { return Op{Kind: OpDelete, Key: k, Cond: cond} }

// Check makes a transaction depend on cond holding for the item at k.
func Check(k Key, cond Condition) Op { return Op{Kind: OpCheck, Key: k, Cond: cond} }

// Query selects items of one partition in sort-key order.
type Query struct {
	Prefix     string // only sort keys with this prefix
	Limit      int    // at most this many items per page; 0 means DefaultPageSize
	Cursor     string // from a previous Page.Next; empty for the first page
	Descending bool
	// After, when set, starts the query after this sort key (ascending
	// queries without Prefix only): a reader that remembers the last key
	// it saw resumes there without a cursor. A Cursor takes precedence.
	After string
}

// IndexQuery selects items of one index partition in index sort order.
type IndexQuery struct {
	SortBefore string // only index sort keys strictly less than this; empty for all
	Limit      int
	Cursor     string
}

// DefaultPageSize and MaxPageSize bound a page.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// Page is one page of results. Next is empty on the last page.
type Page struct {
	Items []Item
	Next  string
}

// Store is implemented by every backend. All methods are safe for concurrent
// use. Reads are strongly consistent, except QueryIndex, which (as a DynamoDB
// GSI) may lag: confirm with a conditional write before acting on it.
type Store interface {
	// Get returns the item at k, or ErrNotFound.
	Get(ctx context.Context, k Key) (Item, error)
	// Write applies one Put, Update or Delete and returns the item as written
	// (the zero Item after a delete). A failed condition returns a
	// *ConditionError that matches ErrConditionFailed.
	Write(ctx context.Context, op Op) (Item, error)
	// Transact applies ops all together or not at all. At most
	// MaxTransactItems ops, each on a different key. When any condition fails
	// it returns a *TransactionError that matches ErrConditionFailed.
	Transact(ctx context.Context, ops []Op) error
	// Query pages through one partition.
	Query(ctx context.Context, pk string, q Query) (Page, error)
	// QueryIndex pages through one partition of the secondary index.
	QueryIndex(ctx context.Context, partition string, q IndexQuery) (Page, error)
}

// Errors a backend returns. Test with errors.Is.
var (
	ErrNotFound        = errors.New("store: item not found")
	ErrConditionFailed = errors.New("store: condition failed")
	ErrInvalidOp       = errors.New("store: invalid operation")
	ErrBadCursor       = errors.New("store: cursor is not valid for this query")
)

// ConditionError reports a failed condition on one item. Current is the item as
// it was (nil when absent), so callers can retry without another read.
type ConditionError struct {
	Key     Key
	Current *Item
}

func (e *ConditionError) Error() string {
	return fmt.Sprintf("store: condition failed on %s", e.Key)
}

func (e *ConditionError) Is(target error) bool { return target == ErrConditionFailed }

// TransactionError reports why a transaction did not apply. Reasons is parallel
// to the ops: nil where the op would have applied, else its *ConditionError.
type TransactionError struct {
	Reasons []error
}

func (e *TransactionError) Error() string {
	var failed []string
	for i, r := range e.Reasons {
		if r != nil {
			failed = append(failed, fmt.Sprintf("op %d: %v", i, r))
		}
	}
	return "store: transaction canceled: " + strings.Join(failed, "; ")
}

func (e *TransactionError) Is(target error) bool {
	if target != ErrConditionFailed {
		return false
	}
	for _, r := range e.Reasons {
		if errors.Is(r, ErrConditionFailed) {
			return true
		}
	}
	return false
}

// ValidateTransaction checks the rules every backend enforces before it writes
// anything: a size limit, distinct keys, known kinds, non-empty keys.
func ValidateTransaction(ops []Op) error {
	if len(ops) == 0 {
		return fmt.Errorf("%w: a transaction needs at least one operation", ErrInvalidOp)
	}
	if len(ops) > MaxTransactItems {
		return fmt.Errorf("%w: %d operations; a transaction holds at most %d", ErrInvalidOp, len(ops), MaxTransactItems)
	}
	if size := TransactSize(ops); size > MaxTransactBytes {
		return fmt.Errorf("%w: %d bytes of items; a transaction carries at most %d", ErrInvalidOp, size, MaxTransactBytes)
	}
	seen := make(map[Key]int, len(ops))
	for i, op := range ops {
		if err := ValidateOp(op); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
		if j, dup := seen[op.Key]; dup {
			return fmt.Errorf("%w: ops %d and %d both touch %s; a transaction may touch an item once", ErrInvalidOp, j, i, op.Key)
		}
		seen[op.Key] = i
	}
	return nil
}

// TransactSize approximates the bytes a transaction carries as DynamoDB
// counts them: a put's item, an update's key and new data, a delete's or a
// check's key. DynamoDB counts an updated or checked item whole, which this
// cannot see without reading it, so for updates of large items it is a lower
// bound.
func TransactSize(ops []Op) int {
	size := 0
	for _, op := range ops {
		switch op.Kind {
		case OpPut:
			size += ItemSize(op.Item)
		case OpUpdate:
			size += ItemSize(Item{Key: op.Key, Data: op.Changes.Data})
		default:
			size += ItemSize(Item{Key: op.Key})
		}
	}
	return size
}

// ValidateOp checks one operation's shape.
func ValidateOp(op Op) error {
	if op.Key.PK == "" || op.Key.SK == "" {
		return fmt.Errorf("%w: empty key %q", ErrInvalidOp, op.Key)
	}
	switch op.Kind {
	case OpPut:
		if op.Item.Key != op.Key {
			return fmt.Errorf("%w: put key %s differs from item key %s", ErrInvalidOp, op.Key, op.Item.Key)
		}
	case OpUpdate, OpDelete, OpCheck:
	default:
		return fmt.Errorf("%w: unknown kind %v", ErrInvalidOp, op.Kind)
	}
	if op.Cond.MustExist && op.Cond.MustNotExist {
		return fmt.Errorf("%w: a condition cannot require the item both to exist and not to", ErrInvalidOp)
	}
	return nil
}
