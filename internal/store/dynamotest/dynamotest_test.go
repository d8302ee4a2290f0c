package dynamotest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/dynamotest"
)

// helperVar makes TestHelperProcess act: this test binary, run again by the
// tests below, is the test that uses the package and fails or skips.
const helperVar = "HEDDLE_DYNAMOTEST_HELPER"

func TestHelperProcess(t *testing.T) {
	switch os.Getenv(helperVar) {
	case "":
		t.Skip("run by the tests below")
	case "fail":
		_, table := dynamotest.Table(t, "dynamotest-fail")
		fmt.Printf("table=%s\n", table)
		t.Fatal("failing on purpose, with the table made")
	case "badprefix":
		dynamotest.Table(t, "no spaces, please")
	case "skip":
		dynamotest.Store(t, "dynamotest-skip")
		t.Fatal("not skipped")
	}
}

func helper(t *testing.T, mode string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperProcess$", "-test.v")
	cmd.Env = append(append(os.Environ(), helperVar+"="+mode), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func tableExists(t *testing.T, c *dynamodb.Client, table string) bool {
	t.Helper()
	_, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var missing *types.ResourceNotFoundException
	if errors.As(err, &missing) {
		return false
	}
	require.NoError(t, err)
	return true
}

// TestTableIsDroppedAfterTheTest: a table is the test's own while it runs
// (two tables of one prefix differ) and gone once its test has ended,
// whether it passed or failed.
func TestTableIsDroppedAfterTheTest(t *testing.T) {
	t.Parallel()
	c := dynamotest.Client(t)
	var first, second string
	t.Run("passes", func(t *testing.T) {
		s := dynamotest.Store(t, "dynamotest")
		_, err := s.Write(t.Context(), store.Put(store.Item{Key: store.Key{PK: "P", SK: "s"}, Data: []byte(`{}`)}, store.Condition{}))
		require.NoError(t, err)
		_, first = dynamotest.Table(t, "dynamotest")
		_, second = dynamotest.Table(t, "dynamotest")
		require.NotEqual(t, first, second)
		require.True(t, tableExists(t, c, first))
	})
	require.False(t, tableExists(t, c, first), "dropped after a test that passed")
	require.False(t, tableExists(t, c, second))

	out, err := helper(t, "fail")
	require.Error(t, err, "the helper test fails:\n%s", out)
	m := regexp.MustCompile(`table=(dynamotest-fail-[0-9a-f]{16})`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.False(t, tableExists(t, c, m[1]), "dropped after a test that failed")
}

// TestSkipsWithoutEndpoint: without HEDDLE_DYNAMODB_ENDPOINT a test is
// skipped and says how to start DynamoDB Local; with CI=true it fails.
func TestSkipsWithoutEndpoint(t *testing.T) {
	t.Parallel()
	out, err := helper(t, "skip", dynamotest.EndpointVar+"=", "CI=")
	require.NoError(t, err, out)
	require.Contains(t, out, "--- SKIP: TestHelperProcess")
	require.Contains(t, out, "scripts/dynamodb-local.sh start")
	out, err = helper(t, "skip", dynamotest.EndpointVar+"=", "CI=true")
	require.Error(t, err, out)
	require.Contains(t, out, "CI=true requires the DynamoDB backend to be tested")
}

// TestInvalidPrefixIsRefused: a prefix DynamoDB would refuse in a table's
// name fails the test before anything is made.
func TestInvalidPrefixIsRefused(t *testing.T) {
	t.Parallel()
	dynamotest.Endpoint(t)
	out, err := helper(t, "badprefix")
	require.Error(t, err, out)
	require.Contains(t, out, "a table name prefix of letters, digits")
}
