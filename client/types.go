package client

import (
	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
)

// The API's own types, by their public names here: the server encodes these
// very structs, so a field the server adds is a field the client reads.

type (
	// Cluster is a cluster record as listings return it.
	Cluster = domain.Cluster
	// ClusterView is one cluster with its first nodes, layout and the
	// progress of its latest job (GET /v1/clusters/{id}).
	ClusterView = cluster.View
	// ClusterStatus is a cluster's lifecycle state.
	ClusterStatus = domain.ClusterStatus
	// Node is one node of a cluster.
	Node = domain.Node
	// Job is one operation on a cluster.
	Job = domain.Job
	// JobView is a job with its progress and its first tasks.
	JobView = cluster.JobView
	// JobStatus is a job's lifecycle state.
	JobStatus = domain.JobStatus
	// Task is one unit of a job's work.
	Task = domain.Task
	// Result is what a mutation answers: the cluster and its job, or for a
	// dry run the preview of the plan.
	Result = cluster.Result
	// Problem is one thing wrong with a request, by field path.
	Problem = domain.Problem
	// ImportResult is what importing a catalog document created, updated
	// and left unchanged.
	ImportResult = catalog.ImportResult
	// Revision is one numbered change of a cluster's definition.
	Revision = domain.Revision
	// ClusterDefinition is what a revision records: template and
	// version, services, config, size.
	ClusterDefinition = domain.ClusterDefinition
	// ErrorDetail is the API's error envelope.
	ErrorDetail = api.ErrorDetail

	CreateRequest         = cluster.CreateRequest
	ExpandRequest         = cluster.ExpandRequest
	ShrinkRequest         = cluster.ShrinkRequest
	ReconfigureRequest    = cluster.ReconfigureRequest
	AddServicesRequest    = cluster.AddServicesRequest
	RemoveServicesRequest = cluster.RemoveServicesRequest
	SyncRequest           = cluster.SyncRequest
	ServiceActionRequest  = cluster.ServiceActionRequest
	ExtendRequest         = cluster.ExtendRequest
	ManageRequest         = cluster.ManageRequest
	RollbackRequest       = cluster.RollbackRequest
)

// Page is one page of a listing; NextCursor is empty on the last.
type Page[T any] = api.Page[T]

// The statuses the methods here test against.
const (
	JobSucceeded = domain.JobSucceeded
	JobFailed    = domain.JobFailed
	JobAborted   = domain.JobAborted
)
