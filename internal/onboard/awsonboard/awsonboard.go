// Package awsonboard is the onboard.Onboarder of heddle in AWS: a tenant's
// SQS FIFO queue and dead-letter queue (made by sqsqueue), its long-task
// queue and that queue's dead-letter queue (another sqsqueue, under
// sqsqueue.LongPrefix: `heddle worker` on Fargate consumes it, so it has no
// mapping), and the Lambda event source mapping from the tenant's queue to
// the worker function.
//
// The mapping is what the worker function's SAM definition cannot hold,
// because no template can enumerate tenants: BatchSize 10 (the most a FIFO
// source allows), FunctionResponseTypes [ReportBatchItemFailures] (the
// worker answers which messages stay), and ScalingConfig.MaximumConcurrency
// = the tenant's workers, at least 2 (Lambda's least) and at most 1000.
//
// Lambda allows one mapping per queue and function, so a mapping is found
// by ListEventSourceMappings on the queue's ARN and the function: Onboard
// and Resize update the one they find, or create one; a create that loses a
// race to another (ResourceConflictException) updates the winner instead.
// Offboard deletes the mappings, then the queues, then the long-task
// queues; a mapping already deleting and a queue already gone are not
// errors. Onboard and Resize make a missing long-task queue, so a tenant
// onboarded before long-task queues existed gets one from either.
//
// Lambda answers ResourceInUseException while a mapping is being created or
// updated (seconds); the error says so, and the same call succeeds later.
package awsonboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/onboard"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

// The mapping's fixed settings.
const (
	// BatchSize is the most messages Lambda hands the worker at once; 10
	// is the most a FIFO queue allows.
	BatchSize = 10
	// MinConcurrency and MaxConcurrency bound ScalingConfig.MaximumConcurrency.
	MinConcurrency = 2
	MaxConcurrency = 1000
)

// Mapping states Lambda reports (EventSourceMappingConfiguration.State).
const (
	stateDeleting  = "Deleting"
	stateDisabled  = "Disabled"
	stateDisabling = "Disabling"
)

// Queues is the part of *sqsqueue.Queue that onboarding uses.
type Queues interface {
	CreateTenantQueue(ctx context.Context, tenant string) error
	DeleteTenantQueue(ctx context.Context, tenant string) error
	QueueName(tenant string) (string, error)
	// QueueARN names the tenant's queue to Lambda; an error matching
	// queue.ErrNoQueue when it does not exist.
	QueueARN(ctx context.Context, tenant string) (string, error)
}

var _ Queues = (*sqsqueue.Queue)(nil)

// LambdaClient is the part of *lambda.Client that manages mappings.
type LambdaClient interface {
	CreateEventSourceMapping(context.Context, *lambda.CreateEventSourceMappingInput, ...func(*lambda.Options)) (*lambda.CreateEventSourceMappingOutput, error)
	DeleteEventSourceMapping(context.Context, *lambda.DeleteEventSourceMappingInput, ...func(*lambda.Options)) (*lambda.DeleteEventSourceMappingOutput, error)
	ListEventSourceMappings(context.Context, *lambda.ListEventSourceMappingsInput, ...func(*lambda.Options)) (*lambda.ListEventSourceMappingsOutput, error)
	UpdateEventSourceMapping(context.Context, *lambda.UpdateEventSourceMappingInput, ...func(*lambda.Options)) (*lambda.UpdateEventSourceMappingOutput, error)
}

var _ LambdaClient = (*lambda.Client)(nil)

// Config configures New.
type Config struct {
	// Queues makes and removes the tenant's queues (required).
	Queues Queues
	// LongQueues makes and removes the tenant's long-task queues. Nil makes
	// none, for deployments whose engines mark no task long.
	LongQueues Queues
	// Lambda manages the mappings; required with FunctionName.
	Lambda LambdaClient
	// FunctionName is the worker function's name or ARN, qualified by its
	// alias in AWS (template.yaml's HEDDLE_WORKER_FUNCTION: the alias
	// "live", so that a deploy's shift and rollback move the worker with
	// the API and the janitor). A tenant's mapping to the same function
	// under another qualifier, or none ($LATEST, as releases before the
	// alias made them), is moved to this one. Empty makes queues
	// only, for deployments whose queues something else consumes (heddle
	// worker on Fargate, or tests that feed the worker handler themselves).
	FunctionName string
}

// Onboarder is the onboard.Onboarder in AWS.
type Onboarder struct {
	queues   Queues
	long     Queues // nil: no long-task queues
	lambda   LambdaClient
	function string
}

var _ onboard.Onboarder = (*Onboarder)(nil)

// New returns an Onboarder.
func New(cfg Config) (*Onboarder, error) {
	switch {
	case cfg.Queues == nil:
		return nil, errors.New("awsonboard: Queues is required")
	case cfg.FunctionName != "" && cfg.Lambda == nil:
		return nil, errors.New("awsonboard: a Lambda client is required with FunctionName")
	}
	return &Onboarder{queues: cfg.Queues, long: cfg.LongQueues, lambda: cfg.Lambda, function: cfg.FunctionName}, nil
}

// Concurrency is the MaximumConcurrency of a tenant with the given workers.
func Concurrency(workers int) int32 {
	return int32(min(max(workers, MinConcurrency), MaxConcurrency))
}

// Onboard makes the tenant's queues and long-task queues (or brings
// existing ones to sqsqueue's attributes), then its mapping to the worker
// (or updates the one there). A tenant id too long for any of the queue
// names is refused before anything is made.
func (o *Onboarder) Onboard(ctx context.Context, tenant domain.Tenant) error {
	if _, err := o.queues.QueueName(tenant.ID); err != nil {
		return fmt.Errorf("awsonboard: tenant %q: %w", tenant.ID, err)
	}
	if o.long != nil {
		if _, err := o.long.QueueName(tenant.ID); err != nil {
			return fmt.Errorf("awsonboard: tenant %q: its long-task queue: %w", tenant.ID, err)
		}
	}
	if err := o.queues.CreateTenantQueue(ctx, tenant.ID); err != nil {
		return fmt.Errorf("awsonboard: making the queues of tenant %q: %w", tenant.ID, err)
	}
	if err := o.ensureLong(ctx, tenant.ID); err != nil {
		return err
	}
	if o.function == "" {
		return nil
	}
	arn, err := o.queues.QueueARN(ctx, tenant.ID)
	if err != nil {
		return err
	}
	return o.ensureMapping(ctx, arn, Concurrency(tenant.Workers))
}

// Resize brings the mapping's MaximumConcurrency to the tenant's workers. A
// tenant whose queue or mapping is missing (an onboarding that failed part
// way) is onboarded; its long-task queues are made if they are missing.
func (o *Onboarder) Resize(ctx context.Context, tenant domain.Tenant) error {
	arn, err := o.queues.QueueARN(ctx, tenant.ID)
	if errors.Is(err, queue.ErrNoQueue) {
		return o.Onboard(ctx, tenant)
	}
	if err != nil {
		return err
	}
	if err := o.ensureLong(ctx, tenant.ID); err != nil {
		return err
	}
	if o.function == "" {
		return nil
	}
	return o.ensureMapping(ctx, arn, Concurrency(tenant.Workers))
}

// ensureLong makes the tenant's long-task queues, or brings them to
// sqsqueue's attributes.
func (o *Onboarder) ensureLong(ctx context.Context, tenant string) error {
	if o.long == nil {
		return nil
	}
	if err := o.long.CreateTenantQueue(ctx, tenant); err != nil {
		return fmt.Errorf("awsonboard: making the long-task queues of tenant %q: %w", tenant, err)
	}
	return nil
}

// Offboard deletes the tenant's mappings, so the worker stops polling, then
// its queue and dead-letter queue, then its long-task queues (the Fargate
// worker stops its pool when the tenant is no longer listed). The tenant has
// no clusters, so whatever messages are left point at tasks that no longer
// exist: nothing needs draining.
func (o *Onboarder) Offboard(ctx context.Context, tenantID string) error {
	if o.function != "" {
		ms, err := o.tenantMappings(ctx, tenantID)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if aws.ToString(m.State) == stateDeleting {
				continue
			}
			_, err := o.lambda.DeleteEventSourceMapping(ctx, &lambda.DeleteEventSourceMappingInput{UUID: m.UUID})
			var notFound *lambdatypes.ResourceNotFoundException
			if err != nil && !errors.As(err, &notFound) {
				return fmt.Errorf("awsonboard: deleting mapping %s of tenant %q%s: %w", aws.ToString(m.UUID), tenantID, inUseHint(err), err)
			}
		}
	}
	if err := o.queues.DeleteTenantQueue(ctx, tenantID); err != nil {
		return fmt.Errorf("awsonboard: deleting the queues of tenant %q: %w", tenantID, err)
	}
	if o.long != nil {
		if err := o.long.DeleteTenantQueue(ctx, tenantID); err != nil {
			return fmt.Errorf("awsonboard: deleting the long-task queues of tenant %q: %w", tenantID, err)
		}
	}
	return nil
}

// ensureMapping updates the mapping from arn to the worker, or creates it.
// Another of the worker's mappings from arn (a release from before the
// alias made one to $LATEST while a newer one had made the alias's, during
// a deploy) is deleted: the queue keeps one consumer mapping.
func (o *Onboarder) ensureMapping(ctx context.Context, arn string, concurrency int32) error {
	m, all, err := o.findMapping(ctx, arn)
	if err != nil {
		return err
	}
	if err := o.dropOthers(ctx, arn, m, all); err != nil {
		return err
	}
	if m == nil {
		_, err := o.lambda.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
			EventSourceArn:        aws.String(arn),
			FunctionName:          aws.String(o.function),
			BatchSize:             aws.Int32(BatchSize),
			Enabled:               aws.Bool(true),
			FunctionResponseTypes: []lambdatypes.FunctionResponseType{lambdatypes.FunctionResponseTypeReportBatchItemFailures},
			ScalingConfig:         &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(concurrency)},
		})
		if err == nil {
			return nil
		}
		var conflict *lambdatypes.ResourceConflictException
		if !errors.As(err, &conflict) {
			return fmt.Errorf("awsonboard: mapping %s to %s: %w", arn, o.function, err)
		}
		// Made meanwhile by another call: update that one.
		if m, _, err = o.findMapping(ctx, arn); err != nil {
			return err
		}
		if m == nil {
			return fmt.Errorf("awsonboard: Lambda says a mapping from %s to %s exists but does not list it; try again", arn, o.function)
		}
	}
	return o.updateMapping(ctx, m, concurrency)
}

// dropOthers deletes the worker's mappings from arn (all) other than keep.
func (o *Onboarder) dropOthers(ctx context.Context, arn string, keep *lambdatypes.EventSourceMappingConfiguration, all []lambdatypes.EventSourceMappingConfiguration) error {
	if keep == nil {
		return nil
	}
	for _, m := range all {
		if aws.ToString(m.UUID) == aws.ToString(keep.UUID) || aws.ToString(m.State) == stateDeleting {
			continue
		}
		_, err := o.lambda.DeleteEventSourceMapping(ctx, &lambda.DeleteEventSourceMappingInput{UUID: m.UUID})
		var notFound *lambdatypes.ResourceNotFoundException
		if err != nil && !errors.As(err, &notFound) {
			return fmt.Errorf("awsonboard: deleting the second mapping %s from %s%s: %w", aws.ToString(m.UUID), arn, inUseHint(err), err)
		}
	}
	return nil
}

// functionParts splits a function's name, name:qualifier, ARN or qualified
// ARN into the function's name and its qualifier ("" for $LATEST).
func functionParts(nameOrARN string) (name, qualifier string) {
	parts := strings.Split(nameOrARN, ":")
	if len(parts) >= 7 && parts[0] == "arn" {
		// arn:partition:lambda:region:account:function:name[:qualifier]
		parts = parts[6:]
	}
	name = parts[0]
	if len(parts) > 1 && parts[1] != "$LATEST" {
		qualifier = parts[1]
	}
	return name, qualifier
}

// worker reports whether a mapping's function is the worker under any
// qualifier, and whether it is under the configured one.
func (o *Onboarder) worker(m lambdatypes.EventSourceMappingConfiguration) (same, exact bool) {
	name, qualifier := functionParts(aws.ToString(m.FunctionArn))
	wantName, wantQualifier := functionParts(o.function)
	return name == wantName, name == wantName && qualifier == wantQualifier
}

// updateMapping brings m to the mapping's settings and concurrency, if it
// differs.
func (o *Onboarder) updateMapping(ctx context.Context, m *lambdatypes.EventSourceMappingConfiguration, concurrency int32) error {
	state := aws.ToString(m.State)
	if state == stateDeleting {
		return fmt.Errorf("awsonboard: mapping %s from %s is being deleted; try again when it is gone", aws.ToString(m.UUID), aws.ToString(m.EventSourceArn))
	}
	if _, exact := o.worker(*m); exact && aws.ToInt32(m.BatchSize) == BatchSize &&
		m.ScalingConfig != nil && aws.ToInt32(m.ScalingConfig.MaximumConcurrency) == concurrency &&
		slices.Contains(m.FunctionResponseTypes, lambdatypes.FunctionResponseTypeReportBatchItemFailures) &&
		state != stateDisabled && state != stateDisabling {
		return nil
	}
	_, err := o.lambda.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{
		UUID:                  m.UUID,
		FunctionName:          aws.String(o.function),
		BatchSize:             aws.Int32(BatchSize),
		Enabled:               aws.Bool(true),
		FunctionResponseTypes: []lambdatypes.FunctionResponseType{lambdatypes.FunctionResponseTypeReportBatchItemFailures},
		ScalingConfig:         &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(concurrency)},
	})
	if err != nil {
		return fmt.Errorf("awsonboard: updating mapping %s from %s%s: %w", aws.ToString(m.UUID), aws.ToString(m.EventSourceArn), inUseHint(err), err)
	}
	return nil
}

// findMapping returns the mapping from arn to the worker under any
// qualifier, nil if there is none, and all of the worker's mappings from
// arn. One that is not being deleted wins over one that is, and among those
// one under the configured qualifier.
func (o *Onboarder) findMapping(ctx context.Context, arn string) (*lambdatypes.EventSourceMappingConfiguration, []lambdatypes.EventSourceMappingConfiguration, error) {
	ms, err := o.workerMappings(ctx, &lambda.ListEventSourceMappingsInput{EventSourceArn: aws.String(arn)})
	if err != nil {
		return nil, nil, err
	}
	rank := func(m *lambdatypes.EventSourceMappingConfiguration) int {
		r := 0
		if aws.ToString(m.State) != stateDeleting {
			r += 2
		}
		if _, exact := o.worker(*m); exact {
			r++
		}
		return r
	}
	var found *lambdatypes.EventSourceMappingConfiguration
	for i := range ms {
		if found == nil || rank(&ms[i]) > rank(found) {
			found = &ms[i]
		}
	}
	return found, ms, nil
}

// workerMappings lists the mappings in answer to in (which names no
// function: Lambda matches a function filter on its exact qualifier) and
// keeps the worker's, under any qualifier.
func (o *Onboarder) workerMappings(ctx context.Context, in *lambda.ListEventSourceMappingsInput) ([]lambdatypes.EventSourceMappingConfiguration, error) {
	ms, err := o.listMappings(ctx, in)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(ms, func(m lambdatypes.EventSourceMappingConfiguration) bool {
		same, _ := o.worker(m)
		return !same
	}), nil
}

// tenantMappings returns the mappings from the tenant's queue to the
// worker. Without the queue (deleted by hand) they are found by the queue
// name at the end of their source ARN among all the worker's mappings.
func (o *Onboarder) tenantMappings(ctx context.Context, tenant string) ([]lambdatypes.EventSourceMappingConfiguration, error) {
	arn, err := o.queues.QueueARN(ctx, tenant)
	if err == nil {
		return o.workerMappings(ctx, &lambda.ListEventSourceMappingsInput{EventSourceArn: aws.String(arn)})
	}
	if !errors.Is(err, queue.ErrNoQueue) {
		return nil, err
	}
	name, err := o.queues.QueueName(tenant)
	if err != nil {
		return nil, err
	}
	all, err := o.workerMappings(ctx, &lambda.ListEventSourceMappingsInput{})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(m lambdatypes.EventSourceMappingConfiguration) bool {
		src := aws.ToString(m.EventSourceArn)
		return !strings.HasPrefix(src, "arn:") || src[strings.LastIndexByte(src, ':')+1:] != name
	}), nil
}

func (o *Onboarder) listMappings(ctx context.Context, in *lambda.ListEventSourceMappingsInput) ([]lambdatypes.EventSourceMappingConfiguration, error) {
	var out []lambdatypes.EventSourceMappingConfiguration
	pages := lambda.NewListEventSourceMappingsPaginator(o.lambda, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("awsonboard: listing the mappings of %s: %w", o.function, err)
		}
		out = append(out, page.EventSourceMappings...)
	}
	return out, nil
}

// inUseHint explains ResourceInUseException, which Lambda answers while a
// mapping is being created or changed.
func inUseHint(err error) string {
	var inUse *lambdatypes.ResourceInUseException
	if errors.As(err, &inUse) {
		return " (Lambda is still applying an earlier change; try again in a few seconds)"
	}
	return ""
}
