package infra

// Call is one AWS API call heddle's code makes, as IAM authorizes it: the
// action, the resource it names and the condition keys the request carries.
// Resource and context values may use ${Region}, ${Account}, ${Stage},
// ${Table}, ${Key}, ${WorkerFunction} and ${WorkerAlias}, filled in from the
// deployed stack.
type Call struct {
	Action   string
	Resource string
	Context  map[string]string
	// By is the code that makes the call.
	By string
}

// The tenant and the EC2 region the calls are made for: queues are named
// by tenant, and an ec2 provider names its own region.
const (
	callTenant    = "acme"
	callEC2Region = "eu-west-1"
)

// Resources the calls name.
const (
	tableARN     = "arn:aws:dynamodb:${Region}:${Account}:table/${Table}"
	indexARN     = tableARN + "/index/gsi1"
	queueARN     = "arn:aws:sqs:${Region}:${Account}:heddle-${Stage}-" + callTenant + ".fifo"
	dlqARN       = "arn:aws:sqs:${Region}:${Account}:heddle-${Stage}-" + callTenant + "_dlq.fifo"
	longARN      = "arn:aws:sqs:${Region}:${Account}:heddle-${Stage}-long_" + callTenant + ".fifo"
	longDLQARN   = "arn:aws:sqs:${Region}:${Account}:heddle-${Stage}-long_" + callTenant + "_dlq.fifo"
	mappingARN   = "arn:aws:lambda:${Region}:${Account}:event-source-mapping:0f9b0c2e-1111-4a4a-9c9c-123456789abc"
	ec2ARN       = "arn:aws:ec2:" + callEC2Region + ":${Account}:"
	ec2ImageARN  = "arn:aws:ec2:" + callEC2Region + "::image/ami-0123456789abcdef0"
	clusterTag   = "c-0123456789"
	requestTag   = "aws:RequestTag/heddle:cluster"
	resourceTag  = "ec2:ResourceTag/heddle:cluster"
	createAction = "ec2:CreateAction"
)

// tableCalls are the store's (internal/store/dynamostore): items on the
// table, the janitor's queries on gsi1. TransactWriteItems is authorized
// by the item actions it contains (ConditionCheckItem among them), and
// is not an action of its own.
func tableCalls(index bool) []Call {
	const by = "internal/store/dynamostore"
	out := []Call{
		{Action: "dynamodb:GetItem", Resource: tableARN, By: by},
		{Action: "dynamodb:BatchGetItem", Resource: tableARN, By: by},
		{Action: "dynamodb:PutItem", Resource: tableARN, By: by},
		{Action: "dynamodb:UpdateItem", Resource: tableARN, By: by},
		{Action: "dynamodb:DeleteItem", Resource: tableARN, By: by},
		{Action: "dynamodb:Query", Resource: tableARN, By: by},
		{Action: "dynamodb:ConditionCheckItem", Resource: tableARN, By: by + " (TransactWriteItems)"},
	}
	if index {
		out = append(out, Call{Action: "dynamodb:Query", Resource: indexARN, By: by + " QueryIndex"})
	}
	return out
}

// kmsCalls are secrets.KMSKey's: a data key per sealed value, its unwrap,
// both with the tenant and purpose as the encryption context.
func kmsCalls() []Call {
	const by = "internal/secrets (KMSKey)"
	ctx := map[string]string{"kms:EncryptionContext:tenant": callTenant}
	return []Call{
		{Action: "kms:GenerateDataKey", Resource: "${Key}", Context: ctx, By: by},
		{Action: "kms:Decrypt", Resource: "${Key}", Context: ctx, By: by},
	}
}

// sendCalls are the engine's sends (internal/queue/routed over sqsqueue):
// a short task to the tenant's queue, a long one to its long-task queue.
// SendMessageBatch is authorized as SendMessage.
func sendCalls() []Call {
	const by = "internal/queue/sqsqueue"
	var out []Call
	for _, q := range []string{queueARN, longARN} {
		out = append(out,
			Call{Action: "sqs:GetQueueUrl", Resource: q, By: by},
			Call{Action: "sqs:SendMessage", Resource: q, By: by + " (SendMessageBatch)"})
	}
	return out
}

// ec2Describe are the ec2 provider's and the sweep's reads; they support
// no resource-level permission.
func ec2Describe(by string) []Call {
	return []Call{
		{Action: "ec2:DescribeInstances", Resource: "*", By: by},
		{Action: "ec2:DescribeKeyPairs", Resource: "*", By: by},
	}
}

// ec2Remove are TerminateInstances and DeleteKeyPair on what heddle tagged.
func ec2Remove(by string) []Call {
	tagged := map[string]string{resourceTag: clusterTag}
	return []Call{
		{Action: "ec2:TerminateInstances", Resource: ec2ARN + "instance/i-0123456789abcdef0", Context: tagged, By: by},
		{Action: "ec2:DeleteKeyPair", Resource: ec2ARN + "key-pair/key-0123456789abcdef0", Context: tagged, By: by},
	}
}

// FunctionCalls lists, per function of template.yaml, every AWS call its
// code makes (and, for the worker, those its event source mappings make
// with its role). infra's TestStackOnMoto holds each function's deployed
// role against it: every call must be allowed, and every action the role
// grants must be one of these calls.
var FunctionCalls = map[string][]Call{
	"api": concat(tableCalls(false), kmsCalls(), sendCalls(), []Call{
		// Tenant onboarding and offboarding (internal/onboard/awsonboard,
		// internal/queue/sqsqueue): the queues and their dead-letter
		// queues, short and long.
		{Action: "sqs:CreateQueue", Resource: queueARN, By: "sqsqueue.CreateTenantQueue"},
		{Action: "sqs:CreateQueue", Resource: dlqARN, By: "sqsqueue.CreateTenantQueue"},
		{Action: "sqs:CreateQueue", Resource: longARN, By: "sqsqueue.CreateTenantQueue"},
		{Action: "sqs:CreateQueue", Resource: longDLQARN, By: "sqsqueue.CreateTenantQueue"},
		{Action: "sqs:GetQueueUrl", Resource: dlqARN, By: "sqsqueue.CreateTenantQueue"},
		{Action: "sqs:GetQueueAttributes", Resource: dlqARN, By: "sqsqueue.CreateTenantQueue (the DLQ's ARN)"},
		{Action: "sqs:GetQueueAttributes", Resource: queueARN, By: "awsonboard (the queue's ARN for the mapping)"},
		{Action: "sqs:SetQueueAttributes", Resource: queueARN, By: "sqsqueue.CreateTenantQueue (redrive, visibility)"},
		{Action: "sqs:DeleteQueue", Resource: queueARN, By: "sqsqueue.DeleteTenantQueue"},
		{Action: "sqs:DeleteQueue", Resource: dlqARN, By: "sqsqueue.DeleteTenantQueue"},
		{Action: "sqs:DeleteQueue", Resource: longARN, By: "sqsqueue.DeleteTenantQueue"},
		{Action: "sqs:DeleteQueue", Resource: longDLQARN, By: "sqsqueue.DeleteTenantQueue"},
		{Action: "lambda:CreateEventSourceMapping", Resource: "*",
			Context: map[string]string{"lambda:FunctionArn": "${WorkerAlias}"}, By: "awsonboard.ensureMapping"},
		{Action: "lambda:UpdateEventSourceMapping", Resource: mappingARN,
			Context: map[string]string{"lambda:FunctionArn": "${WorkerAlias}"}, By: "awsonboard.updateMapping"},
		{Action: "lambda:UpdateEventSourceMapping", Resource: mappingARN,
			Context: map[string]string{"lambda:FunctionArn": "${WorkerFunction}"}, By: "awsonboard.updateMapping (a mapping made before the alias)"},
		{Action: "lambda:DeleteEventSourceMapping", Resource: mappingARN,
			Context: map[string]string{"lambda:FunctionArn": "${WorkerAlias}"}, By: "awsonboard.Offboard, dropOthers"},
		{Action: "lambda:DeleteEventSourceMapping", Resource: mappingARN,
			Context: map[string]string{"lambda:FunctionArn": "${WorkerFunction}"}, By: "awsonboard.dropOthers (a mapping made before the alias)"},
		{Action: "lambda:ListEventSourceMappings", Resource: "*", By: "awsonboard.listMappings"},
	}),
	"worker": concat(tableCalls(false), kmsCalls(), sendCalls(), []Call{
		// The event source mapping polls with the function's role.
		{Action: "sqs:ReceiveMessage", Resource: queueARN, By: "the event source mapping"},
		{Action: "sqs:DeleteMessage", Resource: queueARN, By: "the event source mapping, sqsqueue"},
		{Action: "sqs:GetQueueAttributes", Resource: queueARN, By: "the event source mapping"},
		// Heartbeats, delays and holding the batch (and their batch form).
		{Action: "sqs:ChangeMessageVisibility", Resource: queueARN, By: "sqsqueue (ChangeMessageVisibilityBatch)"},
		// The ec2 provider with heddle's role: launch tagged, import the
		// node's key tagged, tag only while creating, remove what is tagged.
		{Action: "ec2:RunInstances", Resource: ec2ARN + "instance/*", Context: map[string]string{requestTag: clusterTag}, By: "internal/provider/ec2 create"},
		{Action: "ec2:RunInstances", Resource: ec2ARN + "volume/*", Context: map[string]string{requestTag: clusterTag}, By: "internal/provider/ec2 create"},
		{Action: "ec2:RunInstances", Resource: ec2ImageARN, By: "internal/provider/ec2 create"},
		{Action: "ec2:RunInstances", Resource: ec2ARN + "subnet/subnet-0123456789abcdef0", By: "internal/provider/ec2 create"},
		{Action: "ec2:RunInstances", Resource: ec2ARN + "security-group/sg-0123456789abcdef0", By: "internal/provider/ec2 create"},
		{Action: "ec2:RunInstances", Resource: ec2ARN + "network-interface/*", By: "internal/provider/ec2 create"},
		{Action: "ec2:RunInstances", Resource: ec2ARN + "key-pair/heddle-c-0123456789-n1", By: "internal/provider/ec2 create"},
		{Action: "ec2:ImportKeyPair", Resource: ec2ARN + "key-pair/heddle-c-0123456789-n1", Context: map[string]string{requestTag: clusterTag}, By: "internal/provider/ec2 create"},
		{Action: "ec2:CreateTags", Resource: ec2ARN + "instance/i-0123456789abcdef0", Context: map[string]string{createAction: "RunInstances"}, By: "internal/provider/ec2 create (TagSpecifications)"},
		{Action: "ec2:CreateTags", Resource: ec2ARN + "volume/vol-0123456789abcdef0", Context: map[string]string{createAction: "RunInstances"}, By: "internal/provider/ec2 create (TagSpecifications)"},
		{Action: "ec2:CreateTags", Resource: ec2ARN + "key-pair/key-0123456789abcdef0", Context: map[string]string{createAction: "ImportKeyPair"}, By: "internal/provider/ec2 create (TagSpecifications)"},
	}, ec2Describe("internal/provider/ec2 confirm, delete"), ec2Remove("internal/provider/ec2 delete")),
	"janitor": concat(tableCalls(true), kmsCalls(), sendCalls(),
		ec2Describe("internal/provider/ec2 Sweep"), ec2Remove("internal/provider/ec2 Sweep")),
}

// NoResourceScope are actions IAM cannot scope to a resource: granting
// them on "*" is the narrowest grant there is.
var NoResourceScope = map[string]bool{
	"ec2:DescribeInstances":           true,
	"ec2:DescribeKeyPairs":            true,
	"lambda:ListEventSourceMappings":  true,
	"lambda:CreateEventSourceMapping": true, // scoped by lambda:FunctionArn instead
}

// LaunchCompanions are the resources RunInstances is also authorized on:
// the image, subnet, security group, network interface and key pair it
// launches with. heddle does not tag (or own) these, so they cannot be
// scoped by tag; the instance and volumes it creates are.
var LaunchCompanions = []string{"image/*", "subnet/*", "security-group/*", "network-interface/*", "key-pair/*"}

func concat(lists ...[]Call) []Call {
	var out []Call
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
