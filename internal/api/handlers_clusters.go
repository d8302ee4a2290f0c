package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/planner"
	"github.com/heddle-io/heddle/solver"
)

// Error codes of cluster operations.
const (
	CodeNoLayout       = "no_layout"
	CodeTooComplex     = "too_complex"
	CodeQuotaExceeded  = cluster.CodeQuotaExceeded
	CodePoolExhausted  = cluster.CodePoolExhausted
	CodeNameTaken      = "name_taken"
	CodeClusterBusy    = "cluster_busy"
	CodeClusterState   = "cluster_state"
	CodeJobState       = "job_state"
	CodeCatalogChanged = "catalog_changed"
	CodeDependency     = "dependency_cycle"
	CodeUnavailable    = "unavailable"
	CodeRepairHalted   = "repair_halted"
)

// describeCluster maps the cluster service's and the engine's errors.
func describeCluster(err error) (ErrorDetail, bool) {
	var (
		noLayout *solver.NoLayoutError
		badReq   *solver.RequestError
		quota    *cluster.QuotaError
		pool     *cluster.PoolError
		taken    *engine.NameTakenError
		state    *cluster.StateError
		cycle    *planner.CycleError
		halted   *cluster.RepairHaltedError
		revErr   *cluster.RevisionError
	)
	switch {
	case errors.As(err, &revErr) && revErr.Conflict:
		return ErrorDetail{Status: http.StatusConflict, Code: CodeConflict, Message: revErr.Error(), Details: revErr.Problems()}, true
	case errors.As(err, &revErr):
		return ErrorDetail{Status: http.StatusNotFound, Code: CodeNotFound, Message: revErr.Error(), Details: revErr.Problems()}, true
	case errors.As(err, &halted):
		return ErrorDetail{Status: http.StatusConflict, Code: CodeRepairHalted, Message: halted.Error()}, true
	case errors.As(err, &noLayout):
		return ErrorDetail{Status: http.StatusUnprocessableEntity, Code: CodeNoLayout,
			Message: "no layout satisfies the template for this request: " + noLayout.Error(), Details: reasonProblems(noLayout.Reasons)}, true
	case errors.As(err, &badReq):
		return ErrorDetail{Status: http.StatusUnprocessableEntity, Code: CodeValidationFailed,
			Message: "the request cannot be solved as asked: " + badReq.Error(), Details: reasonProblems(badReq.Reasons)}, true
	case errors.Is(err, solver.ErrTooComplex):
		return ErrorDetail{Status: http.StatusUnprocessableEntity, Code: CodeTooComplex,
			Message: err.Error() + "; simplify the template's constraints or ask for a different size"}, true
	case errors.As(err, &cycle):
		return ErrorDetail{Status: http.StatusUnprocessableEntity, Code: CodeDependency, Message: cycle.Error()}, true
	case errors.As(err, &quota):
		return ErrorDetail{Status: http.StatusConflict, Code: CodeQuotaExceeded, Message: quota.Error(),
			Details: []domain.Problem{{Field: "quota." + quota.Limit, Code: domain.CodeOutOfRange, Message: quota.Error()}}}, true
	case errors.As(err, &pool):
		// The request's field that asks for the nodes, and the pool (the
		// provider) that cannot hold them.
		details := []domain.Problem{{Field: "provider", Code: CodePoolExhausted, Message: pool.Error()}}
		if pool.Field != "" {
			details = append([]domain.Problem{{Field: pool.Field, Code: domain.CodeOutOfRange,
				Message: fmt.Sprintf("asks for %d new nodes on pool %s, which has room for %d", pool.Needed, pool.Provider, pool.Free)}}, details...)
		}
		return ErrorDetail{Status: http.StatusConflict, Code: CodePoolExhausted, Message: pool.Error(), Details: details}, true
	case errors.As(err, &taken):
		msg := "another cluster of this tenant is named " + taken.Name + "; cluster names are unique among clusters not TERMINATED: choose another name, or delete that cluster first"
		if taken.By != "" {
			msg = "cluster " + taken.By + " is named " + taken.Name + "; cluster names are unique among clusters not TERMINATED: choose another name, or delete that cluster first"
		}
		return ErrorDetail{Status: http.StatusConflict, Code: CodeNameTaken, Message: msg,
			Details: []domain.Problem{{Field: "name", Code: CodeNameTaken, Message: msg}}}, true
	case errors.As(err, &state):
		return ErrorDetail{Status: http.StatusConflict, Code: CodeClusterState, Message: state.Error()}, true
	case errors.Is(err, engine.ErrNotFound):
		return ErrorDetail{Status: http.StatusNotFound, Code: CodeNotFound, Message: trimPrefix(err) + " does not exist"}, true
	case errors.Is(err, engine.ErrClusterBusy):
		return ErrorDetail{Status: http.StatusConflict, Code: CodeClusterBusy, Message: trimPrefix(err)}, true
	case errors.Is(err, engine.ErrSubmitAborted):
		// The janitor withdrew the job while its submission was still
		// being written (past SubmitTimeout): what it had taken is back.
		return ErrorDetail{Status: http.StatusConflict, Code: CodeJobState,
			Message: "the submission took too long and the janitor undid it, giving back what it had taken; send the request again"}, true
	case errors.Is(err, engine.ErrNothingToRetry), errors.Is(err, engine.ErrJobState):
		return ErrorDetail{Status: http.StatusConflict, Code: CodeJobState, Message: trimPrefix(err)}, true
	case errors.Is(err, engine.ErrStale):
		return ErrorDetail{Status: http.StatusConflict, Code: CodeCatalogChanged,
			Message: "the catalog changed while the request was being planned; send it again"}, true
	case errors.Is(err, errNoClusters):
		return ErrorDetail{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: err.Error()}, true
	}
	return ErrorDetail{}, false
}

var errNoClusters = errors.New("this heddle serves the catalog only: cluster operations need the engine (run `heddle server`, or deploy the worker stack)")

func reasonProblems(rs []solver.Reason) []domain.Problem {
	out := make([]domain.Problem, 0, len(rs))
	for _, r := range rs {
		field := "template"
		switch {
		case len(r.Constraints) > 0:
			field = r.Constraints[0]
		case len(r.Services) > 0:
			field = "services." + r.Services[0]
		}
		out = append(out, domain.Problem{Field: field, Code: r.Code, Message: r.Message})
	}
	return out
}

func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badQuery(name, fmt.Sprintf("%q is not true or false", v))
	}
	return b, nil
}

func (s *Server) clusterService() (*cluster.Service, error) {
	if s.clusters == nil {
		return nil, errNoClusters
	}
	return s.clusters, nil
}

// clusterOf is what every cluster route starts with: the service and the
// cluster id in the path.
func (s *Server) clusterOf(r *http.Request) (*cluster.Service, string, error) {
	svc, err := s.clusterService()
	if err != nil {
		return nil, "", err
	}
	id, err := pathID(r, "cluster")
	return svc, id, err
}

// jobOf is clusterOf plus the job id in the path.
func (s *Server) jobOf(r *http.Request) (*cluster.Service, string, string, error) {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return nil, "", "", err
	}
	jobID, err := pathID(r, "job")
	return svc, id, jobID, err
}

// notFoundFirst answers a request whose parameters or body are bad with 404
// when the caller may not see the cluster, so another tenant's or user's ids
// cannot be probed through the 400s; the cluster is read only on this path
// (the operation itself reads it on the normal one).
func notFoundFirst(r *http.Request, svc *cluster.Service, p access.Principal, id string, bad error) error {
	if err := svc.Check(r.Context(), p, id); err != nil {
		return err
	}
	return bad
}

// writeResult answers a mutation: 202 with the job and a Location to watch
// it, or 200 with the preview of a dry run.
func writeResult(w http.ResponseWriter, res *cluster.Result) {
	if res.DryRun || res.Job == nil { // a dry run, or a rollback with nothing left to do

		writeJSON(w, http.StatusOK, res)
		return
	}
	noteMade(w, "cluster", res.Cluster.ID)
	noteMade(w, "job", res.Job.ID)
	w.Header().Set("Location", fmt.Sprintf("/v1/clusters/%s/jobs/%s", res.Cluster.ID, res.Job.ID))
	writeJSON(w, http.StatusAccepted, res)
}

func (s *Server) createCluster(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, err := s.clusterService()
	if err != nil {
		return err
	}
	dry, err := boolParam(r, "dryRun")
	if err != nil {
		return err
	}
	var req cluster.CreateRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	res, err := svc.Create(r.Context(), p, req, dry)
	if err != nil {
		return err
	}
	writeResult(w, res)
	return nil
}

func (s *Server) listClusters(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, err := s.clusterService()
	if err != nil {
		return err
	}
	pr, err := s.pageOf(r, p, listPaging)
	if err != nil {
		return err
	}
	all, err := boolParam(r, "all")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := cluster.ListFilter{Status: domain.ClusterStatus(q.Get("status")), Template: q.Get("template"), Owner: q.Get("owner"), Name: q.Get("name"), All: all}
	items, next, err := svc.List(r.Context(), p, f, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, items, next)
	return nil
}

func pathID(r *http.Request, param string) (string, error) {
	v := r.PathValue(param)
	if !domain.ValidName(v) {
		return "", errNotFound(fmt.Sprintf("%s %q does not exist", param, v))
	}
	return v, nil
}

func (s *Server) getCluster(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	v, err := svc.Get(r.Context(), p, id)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", versionETag(v.Version))
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	dry, err := boolParam(r, "dryRun")
	if err != nil {
		return err
	}
	force, err := boolParam(r, "force")
	if err != nil {
		return err
	}
	res, err := svc.Delete(r.Context(), p, id, cluster.DeleteRequest{Force: force}, dry)
	if err != nil {
		return err
	}
	writeResult(w, res)
	return nil
}

// mutation decodes a body of type Req and runs op (a cluster.Service method,
// as a method expression such as (*cluster.Service).Expand) on the cluster
// in the path.
func mutation[Req any](s *Server, op func(svc *cluster.Service, ctx context.Context, p access.Principal, id string, req Req, dry bool) (*cluster.Result, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p access.Principal) error {
		svc, id, err := s.clusterOf(r)
		if err != nil {
			return err
		}
		dry, err := boolParam(r, "dryRun")
		if err != nil {
			return notFoundFirst(r, svc, p, id, err)
		}
		var req Req
		if err := decode(r, &req); err != nil {
			return notFoundFirst(r, svc, p, id, err)
		}
		res, err := op(svc, r.Context(), p, id, req, dry)
		if err != nil {
			return err
		}
		writeResult(w, res)
		return nil
	}
}

func (s *Server) serviceAction(op domain.Operation) handlerFunc {
	return mutation(s, func(svc *cluster.Service, ctx context.Context, p access.Principal, id string, req cluster.ServiceActionRequest, dry bool) (*cluster.Result, error) {
		return svc.ServiceAction(ctx, p, id, op, req, dry)
	})
}

func (s *Server) extendLease(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	var req cluster.ExtendRequest
	if err := decode(r, &req); err != nil {
		return notFoundFirst(r, svc, p, id, err)
	}
	c, err := svc.ExtendLease(r.Context(), p, id, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	pr, err := s.pageOf(r, p, listPaging)
	if err != nil {
		return err
	}
	jobs, next, err := svc.Jobs(r.Context(), p, id, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, jobs, next)
	return nil
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, jobID, err := s.jobOf(r)
	if err != nil {
		return err
	}
	v, err := svc.Job(r.Context(), p, id, jobID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) controlJob(what cluster.JobControl) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p access.Principal) error {
		svc, id, jobID, err := s.jobOf(r)
		if err != nil {
			return err
		}
		job, err := svc.ControlJob(r.Context(), p, id, jobID, what)
		if err != nil {
			return err
		}
		w.Header().Set("Location", fmt.Sprintf("/v1/clusters/%s/jobs/%s", id, jobID))
		writeJSON(w, http.StatusAccepted, job)
		return nil
	}
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	pr, err := s.pageOf(r, p, nodePaging)
	if err != nil {
		return notFoundFirst(r, svc, p, id, err)
	}
	deleted, err := boolParam(r, "deleted")
	if err != nil {
		return notFoundFirst(r, svc, p, id, err)
	}
	f := cluster.NodeFilter{Status: domain.NodeStatus(r.URL.Query().Get("status")), Deleted: deleted}
	if f.Status != "" && !slices.Contains(nodeStatuses, f.Status) {
		return notFoundFirst(r, svc, p, id, badQuery("status", fmt.Sprintf("%q is not a node status; use one of %v", f.Status, nodeStatuses)))
	}
	nodes, next, err := svc.Nodes(r.Context(), p, id, f, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, nodes, next)
	return nil
}

var (
	nodeStatuses = []domain.NodeStatus{domain.NodePlanned, domain.NodeCreating, domain.NodeActive, domain.NodeDeleting, domain.NodeDeleted, domain.NodeFailed}
	taskStatuses = []domain.TaskStatus{domain.TaskBlocked, domain.TaskReady, domain.TaskRunning, domain.TaskSucceeded, domain.TaskFailed, domain.TaskCanceled}
)

// taskFilter reads a task listing's filters.
func taskFilter(r *http.Request) (cluster.TaskFilter, error) {
	q := r.URL.Query()
	f := cluster.TaskFilter{Status: domain.TaskStatus(q.Get("status")), Node: q.Get("node"), Service: q.Get("service"), Action: domain.Action(q.Get("action"))}
	if f.Status != "" && !slices.Contains(taskStatuses, f.Status) {
		return f, badQuery("status", fmt.Sprintf("%q is not a task status; use one of %v", f.Status, taskStatuses))
	}
	for name, v := range map[string]string{"node": f.Node, "service": f.Service, "action": string(f.Action)} {
		if len(v) > maxTaskIDChars {
			return f, badQuery(name, fmt.Sprintf("is longer than %d characters", maxTaskIDChars))
		}
	}
	if v := q.Get("stage"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return f, badQuery("stage", fmt.Sprintf("%q is not a stage; stages are numbered from 1", v))
		}
		f.Stage = n
	}
	if v := q.Get("rollback"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return f, badQuery("rollback", fmt.Sprintf("%q is not true or false", v))
		}
		f.Rollback = &b
	}
	return f, nil
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, jobID, err := s.jobOf(r)
	if err != nil {
		return err
	}
	pr, err := s.pageOf(r, p, taskPaging)
	if err != nil {
		return notFoundFirst(r, svc, p, id, err)
	}
	f, err := taskFilter(r)
	if err != nil {
		return notFoundFirst(r, svc, p, id, err)
	}
	tasks, next, err := svc.Tasks(r.Context(), p, id, jobID, f, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, tasks, next)
	return nil
}

// maxTaskIDChars bounds a task id in a path or filter; planned ids are a
// node id, a service and an action joined by slashes.
const maxTaskIDChars = 512

func (s *Server) getTask(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, jobID, err := s.jobOf(r)
	if err != nil {
		return err
	}
	taskID := r.PathValue("task")
	if taskID == "" || len(taskID) > maxTaskIDChars {
		return errNotFound(fmt.Sprintf("task %q does not exist", taskID))
	}
	t, err := svc.Task(r.Context(), p, id, jobID, taskID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}
