package dynamotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store/dynamostore"
)

// EndpointVar names the variable that holds DynamoDB Local's endpoint
// (scripts/dynamodb-local.sh env sets it).
const EndpointVar = "HEDDLE_DYNAMODB_ENDPOINT"

const how = EndpointVar + ` is unset: run scripts/dynamodb-local.sh start and eval "$(scripts/dynamodb-local.sh env)"`

// Endpoint returns DynamoDB Local's endpoint. Without one it skips tb, or
// fails it when CI=true.
func Endpoint(tb testing.TB) string {
	tb.Helper()
	endpoint := os.Getenv(EndpointVar)
	if endpoint == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal("CI=true requires the DynamoDB backend to be tested: " + how)
		}
		tb.Skip("skipping the DynamoDB backend: " + how)
	}
	return endpoint
}

// Client returns a client for DynamoDB Local (see Endpoint for when there
// is none).
func Client(tb testing.TB) *dynamodb.Client {
	tb.Helper()
	return dynamostore.NewEmulatorClient(Endpoint(tb))
}

// validPrefix keeps the table's name within DynamoDB's rules (letters,
// digits, _ . -; at most 255 characters).
var validPrefix = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,200}$`)

// dropTimeout bounds the drop of a table: t.Context is already cancelled
// when cleanups run.
const dropTimeout = time.Minute

// Table creates a table of tb's own with the layout dynamostore.Store
// expects, named prefix-<16 hex digits>, and drops it in tb.Cleanup (even
// when tb fails). It returns the client and the table's name, for a test
// that talks to DynamoDB as well as through the store.
func Table(tb testing.TB, prefix string) (*dynamodb.Client, string) {
	tb.Helper()
	require.Regexp(tb, validPrefix, prefix, "a table name prefix of letters, digits, _ . -")
	c := Client(tb)
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	table := prefix + "-" + hex.EncodeToString(suffix)
	// Registered before the create: a create that fails after the table
	// was made (a timeout while waiting for it) still drops it.
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
		defer cancel()
		_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		var missing *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &missing) {
			tb.Errorf("dynamotest: drop table %s (it is left in DynamoDB Local): %v", table, err)
		}
	})
	require.NoError(tb, dynamostore.CreateTable(tb.Context(), c, table))
	return c, table
}

// Store returns a store over a fresh table of tb's own (see Table).
func Store(tb testing.TB, prefix string) *dynamostore.Store {
	tb.Helper()
	c, table := Table(tb, prefix)
	return dynamostore.New(c, table)
}
