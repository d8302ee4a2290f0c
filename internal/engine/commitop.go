package engine

import (
	"context"
	"errors"

	"github.com/heddle-io/heddle/internal/store"
)

// ErrCommitRefused: the operation WithCommitOp attached failed its
// condition, so the job was not submitted (another attempt of the same
// request took its idempotency key over).
var ErrCommitRefused = errors.New("engine: the request's idempotency claim is no longer this attempt's")

type commitOpKey struct{}

// CommitOpFunc builds an operation from the ids of the cluster and the job
// a submission writes.
type CommitOpFunc func(cluster, job string) store.Op

// WithCommitOp returns ctx carrying op: Submit adds op(cluster, job) to the
// job's first transaction (the one that takes the cluster's lock and writes
// the job), so that whatever op records commits with the job or not at
// all. The API's idempotency keys use it (package idempotency): the record
// that a request made its change is written with the change.
func WithCommitOp(ctx context.Context, op CommitOpFunc) context.Context {
	return context.WithValue(ctx, commitOpKey{}, op)
}

func commitOpOf(ctx context.Context) CommitOpFunc {
	op, _ := ctx.Value(commitOpKey{}).(CommitOpFunc)
	return op
}
