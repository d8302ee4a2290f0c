package dynamostore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"syscall"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/heddle-io/heddle/internal/store"
)

// maxWriteAttempts bounds how often one write is sent when DynamoDB throttles
// it or its outcome is unknown. Writes are retried here, not by the SDK,
// because only here is it known whether an earlier attempt may have applied.
const maxWriteAttempts = 10

// noSDKRetry turns off the SDK's retries for one call (see maxWriteAttempts).
func noSDKRetry(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

// failure classifies a failed request: retry when sending it again may
// succeed, ambiguous when it may have been applied though it failed (a 5xx,
// a timeout or a connection lost after it was sent). Throttling is
// retryable and never applied.
func failure(err error) (retry, ambiguous bool) {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
			"TransactionInProgressException":
			return true, false
		case "InternalServerError", "InternalFailure", "ServiceUnavailable":
			return true, true
		}
		if apiErr.ErrorFault() == smithy.FaultServer {
			return true, true
		}
	}
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) && respErr.HTTPStatusCode() >= 500 {
		return true, true
	}
	var sendErr *smithyhttp.RequestSendError
	var netErr net.Error
	if errors.As(err, &sendErr) || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return true, true
	}
	return false, false
}

// send makes one write request, retrying throttling and unknown outcomes up
// to maxWriteAttempts times with a growing backoff. ambiguous reports whether
// any attempt may have applied without this call hearing so: the caller
// must then treat a condition failure as possibly its own write's echo.
func send(ctx context.Context, call func(context.Context) error) (ambiguous bool, err error) {
	for attempt := 1; ; attempt++ {
		err = call(ctx)
		if err == nil {
			return ambiguous, nil
		}
		retry, amb := failure(err)
		ambiguous = ambiguous || amb
		if !retry || attempt >= maxWriteAttempts || ctx.Err() != nil {
			return ambiguous, err
		}
		if berr := backoff(ctx, attempt+3); berr != nil {
			return ambiguous, err
		}
	}
}

// unknown wraps err of a write whose outcome is unknown.
func unknown(what string, k store.Key, err error) error {
	return fmt.Errorf("dynamostore: %s %s: %w: %w", what, k, store.ErrUnknownOutcome, err)
}

// sameItem reports whether a and b are the same item, as read back.
func sameItem(a, b *store.Item) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Key == b.Key && a.Version == b.Version && a.Status == b.Status &&
		bytes.Equal(a.Data, b.Data) && maps.Equal(a.Counters, b.Counters) && sameIndex(a.Index, b.Index)
}

func sameIndex(a, b *store.IndexKey) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// updateApplied reports whether cur, read after an update whose condition
// pinned the version before it (pinned: the version, 0 for "did not
// exist"), is that update's result: one write since the pinned version and
// every change it asked for in place. It cannot tell this update from
// another that made exactly the same changes from the same version; only
// one of the two can have applied, and their results are the same item.
func updateApplied(cur *store.Item, pinned int64, ch store.Changes) bool {
	if cur == nil || cur.Version != pinned+1 {
		return false
	}
	if ch.Data != nil && !bytes.Equal(ch.Data, cur.Data) {
		return false
	}
	if ch.Status != nil && *ch.Status != cur.Status {
		return false
	}
	for name, v := range ch.Set {
		if cur.Counters[name] != v {
			return false
		}
	}
	switch {
	case ch.ClearIndex && cur.Index != nil:
		return false
	case ch.Index != nil && !sameIndex(ch.Index, cur.Index):
		return false
	}
	return true
}

// transactToken is the ClientRequestToken of one logical transaction: a
// digest of what it writes and of nonce, which is drawn once per Transact
// call, with round (bumped whenever DynamoDB answered that the transaction
// did not apply, so a new attempt is not answered as the canceled one).
// Every resend of the same request (an unknown outcome) carries the same
// token, and DynamoDB answers a resend of one that applied, within ten
// minutes, as it answered the first instead of applying it again. The
// nonce keeps two calls that happen to write the same bytes (an
// unconditional counter add, twice) from being taken for one.
func transactToken(nonce []byte, round int, items []types.TransactWriteItem) string {
	h := sha256.New()
	h.Write(nonce)
	fmt.Fprintf(h, "|%d|", round)
	for _, it := range items {
		// The rendered request is deterministic but for map order, which
		// %v sorts.
		fmt.Fprintf(h, "%v|", renderItem(it))
	}
	// 36 characters, DynamoDB's limit for the token.
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:36]
}

// renderItem flattens an item of a transaction for hashing.
func renderItem(it types.TransactWriteItem) []string {
	var out []string
	add := func(kind string, key, item map[string]types.AttributeValue, expr ...*string) {
		out = append(out, kind)
		for _, m := range []map[string]types.AttributeValue{key, item} {
			names := slices.Sorted(maps.Keys(m))
			for _, n := range names {
				out = append(out, n+"="+attrString(m[n]))
			}
		}
		for _, e := range expr {
			if e != nil {
				out = append(out, *e)
			}
		}
	}
	switch {
	case it.Put != nil:
		add("put", nil, it.Put.Item, it.Put.ConditionExpression)
		out = append(out, valuesString(it.Put.ExpressionAttributeValues))
	case it.Update != nil:
		add("update", it.Update.Key, nil, it.Update.UpdateExpression, it.Update.ConditionExpression)
		out = append(out, valuesString(it.Update.ExpressionAttributeValues))
	case it.Delete != nil:
		add("delete", it.Delete.Key, nil, it.Delete.ConditionExpression)
		out = append(out, valuesString(it.Delete.ExpressionAttributeValues))
	case it.ConditionCheck != nil:
		add("check", it.ConditionCheck.Key, nil, it.ConditionCheck.ConditionExpression)
		out = append(out, valuesString(it.ConditionCheck.ExpressionAttributeValues))
	}
	return out
}

func valuesString(m map[string]types.AttributeValue) string {
	var b bytes.Buffer
	for _, n := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(n + "=" + attrString(m[n]) + ";")
	}
	return b.String()
}

func attrString(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberB:
		return "B:" + base64.StdEncoding.EncodeToString(v.Value)
	case *types.AttributeValueMemberSS:
		return fmt.Sprintf("SS:%q", v.Value)
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprintf("BOOL:%v", v.Value)
	case *types.AttributeValueMemberNULL:
		return "NULL"
	}
	return fmt.Sprintf("%T:%v", av, av)
}

func newNonce() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b
}
