package dynamostore_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/faults"
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
		return faultyStore(t)
	})
}

// faulty is the store under a fault layer that only the ambiguity cases
// arm (storetest.Faulty); the other cases see no fault.
type faulty struct {
	*dynamostore.Store
	in *faults.Injector
}

func (f faulty) Faults() *faults.Injector { return f.in }

func faultyStore(t *testing.T) faulty {
	_, table := dynamotest.Table(t, "heddle-test")
	in, err := faults.New(faults.Config{})
	require.NoError(t, err)
	c := dynamostore.NewEmulatorClient(dynamotest.Endpoint(t), func(o *dynamodb.Options) { o.HTTPClient = in.Client(o.HTTPClient) })
	return faulty{dynamostore.New(c, table), in}
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
