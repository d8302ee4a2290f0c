package memqueue_test

import (
	"testing"

	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/internal/queue/queuetest"
)

func BenchmarkQueue(b *testing.B) {
	queuetest.Benchmark(b, func(testing.TB) queuetest.Backend {
		q := memqueue.New(memqueue.Options{})
		return queuetest.Backend{Queue: q, Provisioner: q}
	})
}
