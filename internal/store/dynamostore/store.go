package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/heddle-io/heddle/internal/store"
)

// Store is a store.Store on one DynamoDB table laid out as CreateTable makes
// it.
type Store struct {
	client *dynamodb.Client
	table  *string
}

var _ store.Store = (*Store)(nil)

// New returns a store on table, which must exist (see CreateTable).
func New(client *dynamodb.Client, table string) *Store {
	return &Store{client: client, table: aws.String(table)}
}

// Get implements store.Store with a strongly consistent read.
func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if err := store.CheckKey(k); err != nil {
		return store.Item{}, err
	}
	it, err := s.get(ctx, k)
	if err != nil {
		return store.Item{}, err
	}
	if it == nil {
		return store.Item{}, fmt.Errorf("%w: %s", store.ErrNotFound, k)
	}
	return *it, nil
}

func (s *Store) get(ctx context.Context, k store.Key) (*store.Item, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      s.table,
		Key:            keyAttrs(k),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, requestError("get", err)
	}
	return unmarshalItem(out.Item)
}

// Write implements store.Store.
func (s *Store) Write(ctx context.Context, op store.Op) (store.Item, error) {
	if err := store.CheckOp(op); err != nil {
		return store.Item{}, err
	}
	switch op.Kind {
	case store.OpPut:
		return s.put(ctx, op)
	case store.OpUpdate:
		return s.update(ctx, op)
	case store.OpDelete:
		return store.Item{}, s.delete(ctx, op)
	}
	return store.Item{}, fmt.Errorf("%w: a %v only makes sense in a transaction", store.ErrInvalidOp, op.Kind)
}

// knownPrior returns the version an item must have for op's condition to
// hold, when the condition pins it: 0 for "must not exist".
func knownPrior(cond store.Condition) (version int64, known bool) {
	switch {
	case cond.MustNotExist:
		return 0, true
	case cond.Version != 0:
		return cond.Version, true
	}
	return 0, false
}

// putItem builds the item a put writes on top of version prior.
func putItem(op store.Op, prior int64) store.Item {
	it := op.Item
	it.Version = prior + 1
	if len(it.Data) == 0 {
		it.Data = nil
	}
	if len(it.Counters) == 0 {
		it.Counters = nil
	}
	return it
}

// put writes a whole item at the version after the one it replaces. DynamoDB
// cannot compute that in a PutItem, and an UpdateItem cannot remove counters
// it does not know of, so a put is optimistic: it numbers the new item from
// the version it expects (pinned by the condition, else read), and adds "the
// item is still at that version" to the condition. When DynamoDB refuses, the
// old item it returns says whether the caller's condition failed (a
// ConditionError) or only the version moved (try again on the new version).
func (s *Store) put(ctx context.Context, op store.Op) (store.Item, error) {
	if size := store.ItemSize(putItem(op, 1<<62)); size > store.MaxItemBytes {
		return store.Item{}, fmt.Errorf("%w: item %s would hold %d bytes; the limit is %d", store.ErrInvalidOp, op.Key, size, store.MaxItemBytes)
	}
	prior, known := knownPrior(op.Cond)
	if !known {
		cur, err := s.get(ctx, op.Key)
		if err != nil {
			return store.Item{}, err
		}
		if !op.Cond.Holds(cur) {
			return store.Item{}, &store.ConditionError{Key: op.Key, Current: cur}
		}
		prior = versionOf(cur)
	}
	for {
		it := putItem(op, prior)
		e := newExpr()
		in := &dynamodb.PutItemInput{
			TableName:                           s.table,
			Item:                                marshalItem(it),
			ConditionExpression:                 optional(and(e.condition(op.Cond), e.putGuard(op.Cond, prior))),
			ExpressionAttributeNames:            e.Names(),
			ExpressionAttributeValues:           e.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}
		amb, err := send(ctx, func(ctx context.Context) error {
			_, err := s.client.PutItem(ctx, in, noSDKRetry)
			return err
		})
		if err == nil {
			return it, nil
		}
		cur, failed, cerr := conditionFailure(err)
		switch {
		case !failed && amb:
			return store.Item{}, unknown("put", op.Key, err)
		case !failed:
			return store.Item{}, requestError("put", err)
		case cerr != nil:
			return store.Item{}, cerr
		case amb && sameItem(cur, &it):
			// An attempt whose answer was lost wrote it: the put applied.
			return it, nil
		case amb && (cur == nil || cur.Version != prior+1):
			// Our lost attempt may have applied and been written over or
			// deleted since: nothing left says which.
			return store.Item{}, unknown("put", op.Key, err)
		}
		if !op.Cond.Holds(cur) {
			return store.Item{}, &store.ConditionError{Key: op.Key, Current: cur}
		}
		if versionOf(cur) == prior {
			return store.Item{}, fmt.Errorf("dynamostore: put %s: DynamoDB refused a condition that holds on the item it returned", op.Key)
		}
		prior = versionOf(cur)
	}
}

func (s *Store) update(ctx context.Context, op store.Op) (store.Item, error) {
	e := newExpr()
	updateExpr := e.update(op.Changes)
	in := &dynamodb.UpdateItemInput{
		TableName:                           s.table,
		Key:                                 keyAttrs(op.Key),
		UpdateExpression:                    aws.String(updateExpr),
		ConditionExpression:                 optional(e.condition(op.Cond)),
		ExpressionAttributeNames:            e.Names(),
		ExpressionAttributeValues:           e.Values(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	var out *dynamodb.UpdateItemOutput
	ambiguous, err := send(ctx, func(ctx context.Context) error {
		var err error
		out, err = s.client.UpdateItem(ctx, in, noSDKRetry)
		return err
	})
	if err != nil {
		if !ambiguous {
			return store.Item{}, writeError("update", op.Key, err)
		}
		// An attempt may have applied. Only an update that pinned the
		// version before it can tell its own result from another's; and
		// an unconditional one is applied again by the retry (see the
		// package's doc on ADD).
		cur, failed, cerr := conditionFailure(err)
		if cerr != nil {
			return store.Item{}, cerr
		}
		if pinned, known := knownPrior(op.Cond); failed && known {
			if updateApplied(cur, pinned, op.Changes) {
				return *cur, nil
			}
			if cur != nil && cur.Version == pinned+1 {
				// Another write took the version ours needed: ours did not apply.
				return store.Item{}, &store.ConditionError{Key: op.Key, Current: cur}
			}
		}
		return store.Item{}, unknown("update", op.Key, err)
	}
	it, err := unmarshalItem(out.Attributes)
	if err != nil {
		return store.Item{}, err
	}
	if it == nil {
		return store.Item{}, fmt.Errorf("dynamostore: update %s returned no item", op.Key)
	}
	return *it, nil
}

func (s *Store) delete(ctx context.Context, op store.Op) error {
	e := newExpr()
	in := &dynamodb.DeleteItemInput{
		TableName:                           s.table,
		Key:                                 keyAttrs(op.Key),
		ConditionExpression:                 optional(e.condition(op.Cond)),
		ExpressionAttributeNames:            e.Names(),
		ExpressionAttributeValues:           e.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	ambiguous, err := send(ctx, func(ctx context.Context) error {
		_, err := s.client.DeleteItem(ctx, in, noSDKRetry)
		return err
	})
	if err != nil && ambiguous {
		// A conditional delete whose lost attempt applied finds the item
		// gone, as it would had another deleted it: no field says which.
		return unknown("delete", op.Key, err)
	}
	if err != nil {
		return writeError("delete", op.Key, err)
	}
	return nil
}

// maxConflictRetries bounds how often a transaction is retried after
// DynamoDB canceled it for a conflict with another transaction in flight.
const maxConflictRetries = 20

// Transact implements store.Store with one TransactWriteItems call (more when
// a put's version guard or a conflict with a concurrent transaction makes
// DynamoDB cancel it though every condition of the caller holds).
func (s *Store) Transact(ctx context.Context, ops []store.Op) error {
	if err := store.ValidateTransaction(ops); err != nil {
		return err
	}
	for i, op := range ops {
		if err := store.CheckOp(op); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
		if op.Kind == store.OpPut {
			if size := store.ItemSize(putItem(op, 1<<62)); size > store.MaxItemBytes {
				return fmt.Errorf("op %d: %w: item %s would hold %d bytes; the limit is %d", i, store.ErrInvalidOp, op.Key, size, store.MaxItemBytes)
			}
		}
	}
	priors := make([]int64, len(ops))
	for i, op := range ops {
		if op.Kind != store.OpPut {
			continue
		}
		prior, known := knownPrior(op.Cond)
		if !known {
			cur, err := s.get(ctx, op.Key)
			if err != nil {
				return err
			}
			prior = versionOf(cur)
		}
		priors[i] = prior
	}
	conflicts := 0
	nonce := newNonce()
	for round := 0; ; round++ {
		items, opOf := s.transactItems(ops, priors)
		if len(items) == 0 {
			return nil // only checks that always hold
		}
		in := &dynamodb.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: aws.String(transactToken(nonce, round, items))}
		ambiguous, err := send(ctx, func(ctx context.Context) error {
			_, err := s.client.TransactWriteItems(ctx, in, noSDKRetry)
			return err
		})
		if err == nil {
			return nil
		}
		var canceled *types.TransactionCanceledException
		if !errors.As(err, &canceled) {
			if ambiguous {
				return fmt.Errorf("dynamostore: transact: %w: %w", store.ErrUnknownOutcome, err)
			}
			return requestError("transact", err)
		}
		// A cancellation is an answer: whatever was resent with the token
		// was answered as the first (DynamoDB, and DynamoDB Local too,
		// honour ClientRequestToken), so this attempt did not apply.
		var reasons []error
		retry, conflict := false, false
		for j, r := range canceled.CancellationReasons {
			if j >= len(opOf) {
				break
			}
			i := opOf[j]
			switch code := aws.ToString(r.Code); code {
			case "", "None":
			case "ConditionalCheckFailed":
				cur, err := unmarshalItem(r.Item)
				if err != nil {
					return err
				}
				if ops[i].Kind == store.OpPut && ops[i].Cond.Holds(cur) {
					if versionOf(cur) == priors[i] {
						return fmt.Errorf("dynamostore: transact op %d on %s: DynamoDB refused a condition that holds on the item it returned", i, ops[i].Key)
					}
					priors[i] = versionOf(cur)
					retry = true
					continue
				}
				if reasons == nil {
					reasons = make([]error, len(ops))
				}
				reasons[i] = &store.ConditionError{Key: ops[i].Key, Current: cur}
			case "TransactionConflict":
				conflict = true
			case "ValidationError":
				return fmt.Errorf("op %d: %w: %s", i, store.ErrInvalidOp, aws.ToString(r.Message))
			default:
				return fmt.Errorf("dynamostore: transaction canceled: op %d on %s: %s: %s", i, ops[i].Key, code, aws.ToString(r.Message))
			}
		}
		switch {
		case reasons != nil:
			return &store.TransactionError{Reasons: reasons}
		case conflict:
			if conflicts++; conflicts > maxConflictRetries {
				return fmt.Errorf("dynamostore: transaction still conflicting after %d tries: %w", conflicts, err)
			}
			if err := backoff(ctx, conflicts); err != nil {
				return err
			}
		case !retry:
			return requestError("transact", err)
		}
	}
}

// transactItems renders ops; opOf maps each rendered item back to its op,
// since checks whose condition always holds are left out (DynamoDB wants a
// condition on every ConditionCheck).
func (s *Store) transactItems(ops []store.Op, priors []int64) (items []types.TransactWriteItem, opOf []int) {
	for i, op := range ops {
		e := newExpr()
		var item types.TransactWriteItem
		switch op.Kind {
		case store.OpPut:
			item.Put = &types.Put{
				TableName:                           s.table,
				Item:                                marshalItem(putItem(op, priors[i])),
				ConditionExpression:                 optional(and(e.condition(op.Cond), e.putGuard(op.Cond, priors[i]))),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}
			item.Put.ExpressionAttributeNames, item.Put.ExpressionAttributeValues = e.Names(), e.Values()
		case store.OpUpdate:
			updateExpr := e.update(op.Changes)
			item.Update = &types.Update{
				TableName:                           s.table,
				Key:                                 keyAttrs(op.Key),
				UpdateExpression:                    aws.String(updateExpr),
				ConditionExpression:                 optional(e.condition(op.Cond)),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}
			item.Update.ExpressionAttributeNames, item.Update.ExpressionAttributeValues = e.Names(), e.Values()
		case store.OpDelete:
			item.Delete = &types.Delete{
				TableName:                           s.table,
				Key:                                 keyAttrs(op.Key),
				ConditionExpression:                 optional(e.condition(op.Cond)),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}
			item.Delete.ExpressionAttributeNames, item.Delete.ExpressionAttributeValues = e.Names(), e.Values()
		case store.OpCheck:
			cond := e.condition(op.Cond)
			if cond == "" {
				continue
			}
			item.ConditionCheck = &types.ConditionCheck{
				TableName:                           s.table,
				Key:                                 keyAttrs(op.Key),
				ConditionExpression:                 aws.String(cond),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}
			item.ConditionCheck.ExpressionAttributeNames, item.ConditionCheck.ExpressionAttributeValues = e.Names(), e.Values()
		}
		items = append(items, item)
		opOf = append(opOf, i)
	}
	return items, opOf
}

// backoff sleeps a jittered, growing delay (up to about 200 ms) or until ctx
// is done.
func backoff(ctx context.Context, attempt int) error {
	d := min(time.Duration(1<<min(attempt, 8))*time.Millisecond, 200*time.Millisecond)
	d = d/2 + rand.N(d/2+1)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// Query implements store.Store with strongly consistent reads.
func (s *Store) Query(ctx context.Context, pk string, q store.Query) (store.Page, error) {
	if err := store.CheckPartition("partition key", pk); err != nil {
		return store.Page{}, err
	}
	limit, err := store.PageSize(q.Limit)
	if err != nil {
		return store.Page{}, err
	}
	if err := store.CheckAfter(q); err != nil {
		return store.Page{}, err
	}
	var start map[string]types.AttributeValue
	if q.Cursor != "" {
		c, err := queryCursorFor(q.Cursor, pk, q)
		if err != nil {
			return store.Page{}, err
		}
		start = keyAttrs(store.Key{PK: pk, SK: c.Sort})
	}
	e := newExpr()
	keyCond := e.name(attrPK) + " = " + e.value(str(pk))
	if q.Prefix != "" {
		keyCond += " AND begins_with(" + e.name(attrSK) + ", " + e.value(str(q.Prefix)) + ")"
	}
	if q.After != "" {
		keyCond += " AND " + e.name(attrSK) + " > " + e.value(str(q.After))
	}
	in := &dynamodb.QueryInput{
		TableName:                 s.table,
		KeyConditionExpression:    aws.String(keyCond),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(!q.Descending),
	}
	items, more, err := s.queryPage(ctx, in, start, limit)
	if err != nil || !more {
		return store.Page{Items: items}, err
	}
	last := items[len(items)-1]
	next := cursor{Kind: queryCursor, Partition: pk, Prefix: q.Prefix, Descending: q.Descending, Sort: last.SK}
	return store.Page{Items: items, Next: next.encode()}, nil
}

// QueryIndex implements store.Store on gsi1. Its reads are eventually
// consistent, as every GSI's are.
func (s *Store) QueryIndex(ctx context.Context, partition string, q store.IndexQuery) (store.Page, error) {
	if err := store.CheckPartition("index partition", partition); err != nil {
		return store.Page{}, err
	}
	limit, err := store.PageSize(q.Limit)
	if err != nil {
		return store.Page{}, err
	}
	var start map[string]types.AttributeValue
	if q.Cursor != "" {
		c, err := indexCursorFor(q.Cursor, partition)
		if err != nil {
			return store.Page{}, err
		}
		start = keyAttrs(store.Key{PK: c.PK, SK: c.SK})
		start[attrIndexPK] = str(partition)
		start[attrIndexSK] = str(c.Sort)
	}
	e := newExpr()
	keyCond := e.name(attrIndexPK) + " = " + e.value(str(partition))
	if q.SortBefore != "" {
		keyCond += " AND " + e.name(attrIndexSK) + " < " + e.value(str(q.SortBefore))
	}
	in := &dynamodb.QueryInput{
		TableName:                 s.table,
		IndexName:                 aws.String(indexName),
		KeyConditionExpression:    aws.String(keyCond),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}
	items, more, err := s.queryPage(ctx, in, start, limit)
	if err != nil || !more {
		return store.Page{Items: items}, err
	}
	last := items[len(items)-1]
	if last.Index == nil {
		return store.Page{}, fmt.Errorf("dynamostore: index query returned %s, which has no index entry", last.Key)
	}
	next := cursor{Kind: indexCursor, Partition: partition, Sort: last.Index.Sort, PK: last.PK, SK: last.SK}
	return store.Page{Items: items, Next: next.encode()}, nil
}

// queryPage reads up to limit items from start, asking for one more so that
// it knows whether another page exists: a page has a Next exactly when more
// items follow, which DynamoDB's LastEvaluatedKey alone does not say. It
// follows LastEvaluatedKey across DynamoDB's 1 MB response limit.
func (s *Store) queryPage(ctx context.Context, in *dynamodb.QueryInput, start map[string]types.AttributeValue, limit int) (items []store.Item, more bool, err error) {
	for {
		in.ExclusiveStartKey = start
		in.Limit = aws.Int32(int32(limit + 1 - len(items)))
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, false, requestError("query", err)
		}
		for _, m := range out.Items {
			it, err := unmarshalItem(m)
			if err != nil {
				return nil, false, err
			}
			items = append(items, *it)
		}
		if len(items) > limit {
			return items[:limit], true, nil
		}
		if len(out.LastEvaluatedKey) == 0 {
			return items, false, nil
		}
		start = out.LastEvaluatedKey
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// conditionFailure recognizes a ConditionalCheckFailedException and returns
// the item DynamoDB found (ALL_OLD), nil when absent.
func conditionFailure(err error) (current *store.Item, failed bool, decodeErr error) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, false, nil
	}
	current, decodeErr = unmarshalItem(ccf.Item)
	return current, true, decodeErr
}

// writeError turns a failed single-item write into a ConditionError or a
// request error.
func writeError(what string, k store.Key, err error) error {
	cur, failed, decodeErr := conditionFailure(err)
	switch {
	case !failed:
		return requestError(what, err)
	case decodeErr != nil:
		return decodeErr
	}
	return &store.ConditionError{Key: k, Current: cur}
}

// requestError marks DynamoDB's ValidationException as store.ErrInvalidOp:
// the request was refused as malformed (an item over 400 KB, say), not
// because of the table's state.
func requestError(what string, err error) error {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException" {
		return fmt.Errorf("%w: dynamostore: %s: %s", store.ErrInvalidOp, what, apiErr.ErrorMessage())
	}
	return fmt.Errorf("dynamostore: %s: %w", what, err)
}

// batchGetKeys is how many keys one BatchGetItem takes.
const batchGetKeys = 100

// GetBatch implements store.BatchGetter: BatchGetItem, 100 keys a call,
// strongly consistent, asking again for the keys DynamoDB left unprocessed
// (throttling, or an answer past 16 MB).
func (s *Store) GetBatch(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	out := make([]store.Item, 0, len(keys))
	for start := 0; start < len(keys); start += batchGetKeys {
		chunk := keys[start:min(start+batchGetKeys, len(keys))]
		want := make([]map[string]types.AttributeValue, len(chunk))
		for i, k := range chunk {
			want[i] = keyAttrs(k)
		}
		for wait := 5 * time.Millisecond; len(want) > 0; wait = min(2*wait, time.Second) {
			res, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				*s.table: {Keys: want, ConsistentRead: aws.Bool(true)},
			}})
			if err != nil {
				return nil, requestError("batch get", err)
			}
			for _, m := range res.Responses[*s.table] {
				it, err := unmarshalItem(m)
				if err != nil {
					return nil, err
				}
				if it != nil {
					out = append(out, *it)
				}
			}
			want = res.UnprocessedKeys[*s.table].Keys
			if len(want) > 0 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(wait):
				}
			}
		}
	}
	return out, nil
}
