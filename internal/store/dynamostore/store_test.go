package dynamostore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/dynamostore"
	"github.com/heddle-io/heddle/internal/store/storetest"
)

const endpointVar = "HEDDLE_DYNAMODB_ENDPOINT"

// client returns a client for the emulator named by HEDDLE_DYNAMODB_ENDPOINT.
// Without it the test is skipped, except in CI (CI=true), where a DynamoDB
// backend that silently went untested would be a failure.
func client(tb testing.TB) *dynamodb.Client {
	tb.Helper()
	endpoint := os.Getenv(endpointVar)
	if endpoint == "" {
		const how = endpointVar + ` is not set; run scripts/dynamodb-local.sh start and eval "$(scripts/dynamodb-local.sh env)"`
		if os.Getenv("CI") == "true" {
			tb.Fatal("CI=true requires the DynamoDB backend to be tested: " + how)
		}
		tb.Skip("skipping the DynamoDB backend: " + how)
	}
	return dynamostore.NewEmulatorClient(endpoint)
}

// setup creates a table of its own for tb and deletes it afterwards.
func setup(tb testing.TB) (*dynamostore.Store, *dynamodb.Client, string) {
	tb.Helper()
	c := client(tb)
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	table := "heddle-test-" + hex.EncodeToString(suffix)
	require.NoError(tb, dynamostore.CreateTable(tb.Context(), c, table))
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		require.NoError(tb, err)
	})
	return dynamostore.New(c, table), c, table
}

func TestConformance(t *testing.T) {
	t.Parallel()
	client(t) // skip or fail once, before the subtests
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
