package faults_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/faults"
)

// TestSDKReadsInjectedErrors: the DynamoDB client, checking answers'
// CRC32 as it does against AWS, reads an injected throttle and 500 as
// DynamoDB's own, and logs no checksum mismatch.
func TestSDKReadsInjectedErrors(t *testing.T) {
	t.Parallel()
	srv, applied := backend(t)
	in, err := faults.New(faults.Config{})
	require.NoError(t, err)
	var mu sync.Mutex
	var logged []string
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), RetryMaxAttempts: 1,
		Logger: logging.LoggerFunc(func(_ logging.Classification, format string, v ...any) {
			mu.Lock()
			logged = append(logged, fmt.Sprintf(format, v...))
			mu.Unlock()
		})}, func(o *dynamodb.Options) { o.HTTPClient = in.Client(o.HTTPClient) })
	for _, tc := range []struct {
		kind faults.Kind
		code string
	}{{faults.Throttle, "ThrottlingException"}, {faults.ServerError, "InternalServerError"}} {
		in.Arm("GetItem", tc.kind)
		_, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String("t"),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}})
		var apiErr smithy.APIError
		require.True(t, errors.As(err, &apiErr), "%v", err)
		require.Equal(t, tc.code, apiErr.ErrorCode())
	}
	require.Zero(t, applied.Load())
	mu.Lock()
	defer mu.Unlock()
	for _, l := range logged {
		require.False(t, strings.Contains(l, "checksum"), l)
	}
}
