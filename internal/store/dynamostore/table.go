package dynamostore

import (
	"context"
	"fmt"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heddle-io/heddle/internal/store"

	"github.com/heddle-io/heddle/internal/sdkbody"
)

// CreateTable creates table with the layout Store expects, on-demand billing
// and the sparse index gsi1 (all attributes projected), and waits until it is
// active. The AWS stack declares the same table in template.yaml; this is for
// tests, scripts and local setups.
func CreateTable(ctx context.Context, client *dynamodb.Client, table string) error {
	keySchema := func(hash, rng string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange},
		}
	}
	attr := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{attr(attrPK), attr(attrSK), attr(attrIndexPK), attr(attrIndexSK)},
		KeySchema:            keySchema(attrPK, attrSK),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String(indexName),
			KeySchema:  keySchema(attrIndexPK, attrIndexSK),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	})
	if err != nil {
		return fmt.Errorf("dynamostore: create table %s: %w", table, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 5*time.Minute); err != nil {
		return fmt.Errorf("dynamostore: wait for table %s: %w", table, err)
	}
	// The time to live template.yaml's TimeToLiveSpecification declares.
	if _, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(TTLAttribute), Enabled: aws.Bool(true)}}); err != nil {
		return fmt.Errorf("dynamostore: time to live of table %s: %w", table, err)
	}
	return nil
}

// TTLAttribute is the table's time-to-live attribute: the counter
// store.CounterExpires, whose Unix seconds DynamoDB deletes the item after
// (within days; until then it is read as it is).
const TTLAttribute = counterPrefix + store.CounterExpires

// NewEmulatorClient returns a client for a DynamoDB emulator such as
// DynamoDB Local (scripts/dynamodb-local.sh) at endpoint: dummy static
// credentials, region us-east-1, response checksum validation off (an
// emulator need not compute DynamoDB's CRC32 response header as the service
// does, and the check guards against network corruption the loopback does
// not have), and a pool of idle connections large enough for concurrent
// writers. optFns change the options after that (a test's fault layer
// wraps HTTPClient). Never use it against AWS.
func NewEmulatorClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:                          "us-east-1",
		BaseEndpoint:                    aws.String(endpoint),
		Credentials:                     credentials.NewStaticCredentialsProvider("heddle", "heddle", ""),
		DisableValidateResponseChecksum: true,
		// The SDK keeps 10 idle connections per host; with more concurrent
		// writers than that, connections are closed and reopened on every
		// burst, which cut parallel throughput against DynamoDB Local by
		// two thirds.
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConnsPerHost = 64
		}),
	}, append([]func(*dynamodb.Options){func(o *dynamodb.Options) { o.HTTPClient = sdkbody.Guard(o.HTTPClient) }}, optFns...)...) // package sdkbody
}
