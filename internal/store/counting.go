package store

import (
	"context"
	"errors"
	"sync/atomic"
)

// Counts is what a Counting store has seen. Every call is counted as made,
// whatever its outcome: DynamoDB bills a write whose condition fails, and a
// read of a missing item, like any other.
type Counts struct {
	Gets       int64 // Get calls
	QueryPages int64 // Query calls: one page each
	IndexPages int64 // QueryIndex calls: one page each
	ItemsRead  int64 // items returned by Get (when found), Query and QueryIndex

	Writes       int64 // Put, Update and Delete ops, through Write or inside a Transact
	Checks       int64 // Check ops inside a Transact (DynamoDB bills them as writes)
	Transactions int64 // Transact calls
	// ConditionFailures counts Write and Transact calls refused on a
	// condition (a transaction counts once however many of its ops failed).
	ConditionFailures int64
}

// Reads is the number of read requests: Gets plus pages.
func (c Counts) Reads() int64 { return c.Gets + c.QueryPages + c.IndexPages }

// Counting wraps a Store and counts its traffic with atomic counters, for
// benchmarks that measure reads and writes per unit of work (the engine's
// writes per task, for instance). It is safe for concurrent use.
type Counting struct {
	inner Store

	gets, queryPages, indexPages, itemsRead  atomic.Int64
	writes, checks, transactions, condFailed atomic.Int64
}

var _ Store = (*Counting)(nil)

// NewCounting returns a Counting store over inner, with every count at zero.
func NewCounting(inner Store) *Counting { return &Counting{inner: inner} }

// Counts returns the counts so far. Counts taken while calls are in flight
// are each exact but not a snapshot of one instant.
func (c *Counting) Counts() Counts {
	return Counts{
		Gets:              c.gets.Load(),
		QueryPages:        c.queryPages.Load(),
		IndexPages:        c.indexPages.Load(),
		ItemsRead:         c.itemsRead.Load(),
		Writes:            c.writes.Load(),
		Checks:            c.checks.Load(),
		Transactions:      c.transactions.Load(),
		ConditionFailures: c.condFailed.Load(),
	}
}

// Reset sets every count back to zero.
func (c *Counting) Reset() {
	for _, n := range []*atomic.Int64{&c.gets, &c.queryPages, &c.indexPages, &c.itemsRead, &c.writes, &c.checks, &c.transactions, &c.condFailed} {
		n.Store(0)
	}
}

// GetBatch counts one get per call and the items it returns, so a
// benchmark over Counting sees the round trips the store it wraps makes.
func (c *Counting) GetBatch(ctx context.Context, keys []Key) ([]Item, error) {
	if _, ok := c.inner.(BatchGetter); ok {
		c.gets.Add(1)
	} else {
		c.gets.Add(int64(len(keys))) // GetMany reads them one by one
	}
	items, err := GetMany(ctx, c.inner, keys)
	c.itemsRead.Add(int64(len(items)))
	return items, err
}

func (c *Counting) Get(ctx context.Context, k Key) (Item, error) {
	c.gets.Add(1)
	it, err := c.inner.Get(ctx, k)
	if err == nil {
		c.itemsRead.Add(1)
	}
	return it, err
}

func (c *Counting) Write(ctx context.Context, op Op) (Item, error) {
	c.countOp(op)
	it, err := c.inner.Write(ctx, op)
	c.countFailure(err)
	return it, err
}

func (c *Counting) Transact(ctx context.Context, ops []Op) error {
	c.transactions.Add(1)
	for _, op := range ops {
		c.countOp(op)
	}
	err := c.inner.Transact(ctx, ops)
	c.countFailure(err)
	return err
}

func (c *Counting) countOp(op Op) {
	if op.Kind == OpCheck {
		c.checks.Add(1)
	} else {
		c.writes.Add(1)
	}
}

func (c *Counting) countFailure(err error) {
	if errors.Is(err, ErrConditionFailed) {
		c.condFailed.Add(1)
	}
}

func (c *Counting) Query(ctx context.Context, pk string, q Query) (Page, error) {
	c.queryPages.Add(1)
	p, err := c.inner.Query(ctx, pk, q)
	c.itemsRead.Add(int64(len(p.Items)))
	return p, err
}

func (c *Counting) QueryIndex(ctx context.Context, partition string, q IndexQuery) (Page, error) {
	c.indexPages.Add(1)
	p, err := c.inner.QueryIndex(ctx, partition, q)
	c.itemsRead.Add(int64(len(p.Items)))
	return p, err
}
