package dynamostore_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/dynamostore"
	"github.com/heddle-io/heddle/internal/store/dynamotest"
	"github.com/heddle-io/heddle/internal/store/storetest"
)

// setup creates a table of its own for tb and drops it afterwards
// (package dynamotest; this is an external test package, so importing it
// makes no cycle).
func setup(tb testing.TB) (*dynamostore.Store, *dynamodb.Client, string) {
	tb.Helper()
	c, table := dynamotest.Table(tb, "heddle-test")
	return dynamostore.New(c, table), c, table
}

func TestConformance(t *testing.T) {
	t.Parallel()
	dynamotest.Endpoint(t) // skip or fail once, before the subtests
	storetest.Run(t, func(t *testing.T) store.Store {
		s, _, _ := setup(t)
		return s
	})
}

func BenchmarkVersionedUpdates(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) store.Store {
		s, _, _ := setup(b)
		return s
	})
}

// TestTableExpiresItems: the table CreateTable makes has template.yaml's
// time to live on store.CounterExpires.
func TestTableExpiresItems(t *testing.T) {
	t.Parallel()
	_, c, table := setup(t)
	out, err := c.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	require.NoError(t, err)
	require.Equal(t, "c_expires", dynamostore.TTLAttribute)
	require.Equal(t, dynamostore.TTLAttribute, aws.ToString(out.TimeToLiveDescription.AttributeName))
	require.Contains(t, []string{"ENABLED", "ENABLING"}, string(out.TimeToLiveDescription.TimeToLiveStatus))
}
