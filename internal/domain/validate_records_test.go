package domain

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	t0 = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

func validAPIKey() APIKey {
	return APIKey{ID: "key_0123456789abcdef", TenantID: "acme", User: "bob",
		Hash: strings.Repeat("ab", 32), CreatedAt: t0}
}

func TestValidateAPIKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(*APIKey)
		fields []string
	}{
		{name: "valid", edit: func(*APIKey) {}},
		{name: "valid without hash, as decoded from JSON", edit: func(k *APIKey) { k.Hash = "" }},
		{name: "missing id", edit: func(k *APIKey) { k.ID = "" }, fields: []string{"id"}},
		{name: "bad tenant", edit: func(k *APIKey) { k.TenantID = "a/b" }, fields: []string{"tenantId"}},
		{name: "missing user", edit: func(k *APIKey) { k.User = "" }, fields: []string{"user"}},
		{name: "short hash", edit: func(k *APIKey) { k.Hash = "abcd" }, fields: []string{"hash"}},
		{name: "uppercase hash", edit: func(k *APIKey) { k.Hash = strings.Repeat("AB", 32) }, fields: []string{"hash"}},
		{name: "everything at once", edit: func(k *APIKey) { *k = APIKey{Hash: "zz"} }, fields: []string{"hash", "id", "tenantId", "user"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := validAPIKey()
			tt.edit(&k)
			require.Equal(t, tt.fields, fieldsOf(k.Validate()))
		})
	}
}

func validCluster() Cluster {
	return Cluster{
		ID: "c018f3a2b4c00a1b2c3", TenantID: "acme", Owner: "bob", Name: "my web cluster",
		Template: TemplateRef{Name: "web", Version: 2},
		Resolved: &ClusterTemplate{Meta: Meta{Name: "web", Version: 2}, TemplateSections: TemplateSections{
			Compatibility: Compatibility{Services: []string{"kv", "web"}, HardwareTypes: []string{"small"}},
			Defaults:      Defaults{Services: []string{"kv", "web"}, Provider: "local", HardwareType: "small", ImageType: "debian"},
		}},
		Provider: "local", Services: []string{"kv", "web"}, Config: []byte(`{"port":8080}`),
		Status: ClusterActive, NodeCount: 3, ActiveJobID: "j018f3a2b4c00d4e5f6", LatestJobID: "j018f3a2b4c00d4e5f6",
		CreatedAt: t0, ExpiresAt: t1, Version: 4,
	}
}

func TestValidateCluster(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(*Cluster)
		fields []string
	}{
		{name: "valid", edit: func(*Cluster) {}},
		{name: "valid without lease, jobs or resolved template", edit: func(c *Cluster) {
			c.ExpiresAt, c.ActiveJobID, c.LatestJobID, c.Resolved, c.Config = time.Time{}, "", "", nil, nil
		}},
		{name: "valid when only expiresAt is set", edit: func(c *Cluster) { c.CreatedAt = time.Time{} }},
		{name: "missing id", edit: func(c *Cluster) { c.ID = "" }, fields: []string{"id"}},
		{name: "bad tenant", edit: func(c *Cluster) { c.TenantID = "ac me" }, fields: []string{"tenantId"}},
		{name: "missing owner", edit: func(c *Cluster) { c.Owner = "" }, fields: []string{"owner"}},
		{name: "missing name", edit: func(c *Cluster) { c.Name = "" }, fields: []string{"name"}},
		{name: "long name", edit: func(c *Cluster) { c.Name = strings.Repeat("n", 65) }, fields: []string{"name"}},
		{name: "long description", edit: func(c *Cluster) { c.Description = strings.Repeat("d", 4097) }, fields: []string{"description"}},
		{name: "bad template ref", edit: func(c *Cluster) { c.Template = TemplateRef{Version: -1} }, fields: []string{"template.name", "template.version"}},
		{name: "resolved template not resolvable", edit: func(c *Cluster) { c.Resolved.Defaults.Services = []string{"ghost"} },
			fields: []string{"resolvedTemplate.defaults.services[0]"}},
		{name: "resolved template without name", edit: func(c *Cluster) { c.Resolved.Name = "" }, fields: []string{"resolvedTemplate.name"}},
		{name: "missing provider", edit: func(c *Cluster) { c.Provider = "" }, fields: []string{"provider"}},
		{name: "bad and duplicate services", edit: func(c *Cluster) { c.Services = []string{"kv", "", "kv"} },
			fields: []string{"services[1]", "services[2]"}},
		{name: "config not an object", edit: func(c *Cluster) { c.Config = []byte(`[1]`) }, fields: []string{"config"}},
		{name: "unknown status", edit: func(c *Cluster) { c.Status = "RUNNING" }, fields: []string{"status"}},
		{name: "missing status", edit: func(c *Cluster) { c.Status = "" }, fields: []string{"status"}},
		{name: "negative node count", edit: func(c *Cluster) { c.NodeCount = -1 }, fields: []string{"nodeCount"}},
		{name: "node count over the limit", edit: func(c *Cluster) { c.NodeCount = MaxClusterSize + 1 }, fields: []string{"nodeCount"}},
		{name: "bad job ids", edit: func(c *Cluster) { c.ActiveJobID, c.LatestJobID = "j 1", "j/2" }, fields: []string{"activeJobId", "latestJobId"}},
		{name: "expires before created", edit: func(c *Cluster) { c.ExpiresAt = t0.Add(-time.Second) }, fields: []string{"expiresAt"}},
		{name: "negative version", edit: func(c *Cluster) { c.Version = -1 }, fields: []string{"version"}},
		{name: "several problems together", edit: func(c *Cluster) {
			c.ID, c.Status, c.NodeCount, c.Services, c.ExpiresAt = "", "GONE", -2, []string{"a b"}, t0.Add(-time.Minute)
		}, fields: []string{"expiresAt", "id", "nodeCount", "services[0]", "status"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := validCluster()
			tt.edit(&c)
			require.Equal(t, tt.fields, fieldsOf(c.Validate()))
		})
	}
}

func TestValidateClusterStatusMessage(t *testing.T) {
	t.Parallel()
	c := validCluster()
	c.Status = "RUNNING"
	ps := c.Validate()
	require.Len(t, ps, 1)
	require.Equal(t, CodeInvalid, ps[0].Code)
	require.Contains(t, ps[0].Message, "INCONSISTENT", "the message lists the known statuses")
	c.Status = ""
	require.Equal(t, CodeRequired, c.Validate()[0].Code)
}

func validNode() Node {
	return Node{
		ID: "c018f3a2b4c00a1b2c3-1000", ClusterID: "c018f3a2b4c00a1b2c3", Num: 1000,
		NodeLayout: NodeLayout{HardwareType: "small", ImageType: "debian", Services: []string{"kv", "web"}},
		Hostname:   "node-1000.example", Addresses: map[string]string{AddressAccessV4: "10.0.0.5", AddressBindV4: "127.0.0.2"},
		Status: NodeActive, Properties: map[string]string{"instance": "i-123"}, CreatedAt: t0,
	}
}

func TestValidateNode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(*Node)
		fields []string
	}{
		{name: "valid", edit: func(*Node) {}},
		{name: "valid planned node without addresses or services", edit: func(n *Node) {
			n.Addresses, n.Services, n.Status = nil, nil, NodePlanned
		}},
		{name: "valid with an address not known yet", edit: func(n *Node) { n.Addresses[AddressAccessV4] = "" }},
		{name: "valid IPv6 address", edit: func(n *Node) { n.Addresses[AddressBindV4] = "::1" }},
		{name: "missing id", edit: func(n *Node) { n.ID = "" }, fields: []string{"id"}},
		{name: "bad cluster id", edit: func(n *Node) { n.ClusterID = "c:1" }, fields: []string{"clusterId"}},
		{name: "negative num", edit: func(n *Node) { n.Num = -1 }, fields: []string{"num"}},
		{name: "missing hardware type", edit: func(n *Node) { n.HardwareType = "" }, fields: []string{"hardwareType"}},
		{name: "bad image type", edit: func(n *Node) { n.ImageType = "deb ian" }, fields: []string{"imageType"}},
		{name: "empty service name", edit: func(n *Node) { n.Services = []string{"", "kv"} }, fields: []string{"services[0]"}},
		{name: "services unsorted", edit: func(n *Node) { n.Services = []string{"web", "kv"} }, fields: []string{"services"}},
		{name: "services duplicated", edit: func(n *Node) { n.Services = []string{"kv", "kv"} }, fields: []string{"services[1]"}},
		{name: "unknown address kind", edit: func(n *Node) { n.Addresses["public"] = "1.2.3.4" }, fields: []string{"addresses.public"}},
		{name: "address not an IP", edit: func(n *Node) { n.Addresses[AddressAccessV4] = "node-1.example" }, fields: []string{"addresses.access_v4"}},
		{name: "empty property name", edit: func(n *Node) { n.Properties[""] = "x" }, fields: []string{"properties"}},
		{name: "unknown status", edit: func(n *Node) { n.Status = "UP" }, fields: []string{"status"}},
		{name: "several problems together", edit: func(n *Node) {
			n.Num, n.HardwareType, n.Services, n.Status = -5, "", []string{"web", "kv"}, ""
			n.Addresses = map[string]string{AddressBindV4: "999.1.1.1", "v6": "::1"}
		}, fields: []string{"addresses.bind_v4", "addresses.v6", "hardwareType", "num", "services", "status"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := validNode()
			tt.edit(&n)
			require.Equal(t, tt.fields, fieldsOf(n.Validate()))
		})
	}
}

func validJob() Job {
	return Job{
		ID: "j018f3a2b4c00d4e5f6", TenantID: "acme", ClusterID: "c018f3a2b4c00a1b2c3", Operation: OpCreate,
		Status: JobSucceeded, TaskTotal: 12, TaskDone: 12, RequestedBy: "bob",
		CreatedAt: t0, StartedAt: t0.Add(time.Second), EndedAt: t1, Retries: 1, Version: 30,
	}
}

func TestValidateJob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(*Job)
		fields []string
	}{
		{name: "valid", edit: func(*Job) {}},
		{name: "valid pending job not started", edit: func(j *Job) {
			j.Status, j.TaskDone, j.StartedAt, j.EndedAt, j.RequestedBy = JobPending, 0, time.Time{}, time.Time{}, ""
		}},
		{name: "missing id", edit: func(j *Job) { j.ID = "" }, fields: []string{"id"}},
		{name: "bad tenant", edit: func(j *Job) { j.TenantID = "!" }, fields: []string{"tenantId"}},
		{name: "missing cluster", edit: func(j *Job) { j.ClusterID = "" }, fields: []string{"clusterId"}},
		{name: "unknown operation", edit: func(j *Job) { j.Operation = "explode" }, fields: []string{"operation"}},
		{name: "missing operation", edit: func(j *Job) { j.Operation = "" }, fields: []string{"operation"}},
		{name: "unknown status", edit: func(j *Job) { j.Status = "DONE" }, fields: []string{"status"}},
		{name: "negative task total", edit: func(j *Job) { j.TaskTotal, j.TaskDone = -1, 0 }, fields: []string{"taskTotal"}},
		{name: "negative task done", edit: func(j *Job) { j.TaskDone = -1 }, fields: []string{"taskDone"}},
		{name: "more done than total", edit: func(j *Job) { j.TaskDone = 13 }, fields: []string{"taskDone"}},
		{name: "bad requester", edit: func(j *Job) { j.RequestedBy = "a b" }, fields: []string{"requestedBy"}},
		{name: "ended before started", edit: func(j *Job) { j.EndedAt = t0 }, fields: []string{"endedAt"}},
		{name: "started before created", edit: func(j *Job) { j.StartedAt = t0.Add(-time.Second) }, fields: []string{"startedAt"}},
		{name: "negative retries and version", edit: func(j *Job) { j.Retries, j.Version = -1, -1 }, fields: []string{"retries", "version"}},
		{name: "several problems together", edit: func(j *Job) {
			j.Operation, j.Status, j.TaskTotal, j.TaskDone, j.EndedAt = "", "", 2, 3, t0
		}, fields: []string{"endedAt", "operation", "status", "taskDone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := validJob()
			tt.edit(&j)
			require.Equal(t, tt.fields, fieldsOf(j.Validate()))
		})
	}
}

func validTask() Task {
	return Task{
		ID: "c018f3a2b4c00a1b2c3-1000/kv/start", TenantID: "acme", JobID: "j018f3a2b4c00d4e5f6", ClusterID: "c018f3a2b4c00a1b2c3",
		NodeID: "c018f3a2b4c00a1b2c3-1000", Service: "kv", Action: ActionStart, Status: TaskSucceeded,
		Attempt: 2, MaxAttempts: 4, AttemptsPerRun: 4, Timeout: Duration(time.Minute),
		DependsOn:  []string{"c018f3a2b4c00a1b2c3-1000/kv/install", "join:configured"},
		Dependents: []string{"join:started"},
		Attempts: []TaskAttempt{
			{Attempt: 1, Worker: "w1", StartedAt: t0, EndedAt: t0.Add(time.Second), Status: TaskFailed, ExitCode: 1},
			{Attempt: 2, Worker: "w2", StartedAt: t0.Add(time.Minute), EndedAt: t1, Status: TaskSucceeded},
		},
		Params: map[string]string{"duration": "1s"}, Version: 7,
	}
}

func TestValidateTask(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(*Task)
		fields []string
	}{
		{name: "valid", edit: func(*Task) {}},
		{name: "valid join", edit: func(t *Task) {
			*t = Task{ID: "join:started", TenantID: "acme", JobID: "j1", ClusterID: "c1", Action: "join", Join: true,
				Status: TaskBlocked, MaxAttempts: 1, DependsOn: []string{"a/start"}, Remaining: 1}
		}},
		{name: "valid rollback root", edit: func(t *Task) {
			*t = Task{ID: "rollback:n1/delete", TenantID: "acme", JobID: "j1", ClusterID: "c1", NodeID: "n1", Action: ActionDelete,
				Rollback: true, Status: TaskBlocked, MaxAttempts: 3, Remaining: 1}
		}},
		{name: "node-level action", edit: func(t *Task) { t.Service, t.Action = "", ActionBootstrap }},
		{name: "missing id", edit: func(t *Task) { t.ID = ""; t.Dependents = nil }, fields: []string{"id"}},
		{name: "bad tenant, job and cluster", edit: func(t *Task) { t.TenantID, t.JobID, t.ClusterID = "", "j 1", "c/1" },
			fields: []string{"clusterId", "jobId", "tenantId"}},
		{name: "bad node and service", edit: func(t *Task) { t.NodeID, t.Service = "n 1", "k v" }, fields: []string{"nodeId", "service"}},
		{name: "unknown action", edit: func(t *Task) { t.Action = "dance" }, fields: []string{"action"}},
		{name: "missing action", edit: func(t *Task) { t.Action = "" }, fields: []string{"action"}},
		{name: "join action on a work task", edit: func(t *Task) { t.Action = "join" }, fields: []string{"action"}},
		{name: "join task with a work action", edit: func(t *Task) { t.Join = true }, fields: []string{"action"}},
		{name: "unknown status", edit: func(t *Task) { t.Status = "DONE" }, fields: []string{"status"}},
		{name: "negative counts", edit: func(t *Task) { t.Attempt, t.AttemptsPerRun, t.Remaining, t.Sends = -1, -1, -1, -1 },
			fields: []string{"attempt", "attemptsPerRun", "remaining", "sends"}},
		{name: "negative max attempts", edit: func(t *Task) { t.Attempt, t.MaxAttempts = 0, -1 }, fields: []string{"maxAttempts"}},
		{name: "attempt past max", edit: func(t *Task) { t.Attempt = 5 }, fields: []string{"attempt"}},
		{name: "timeout out of range", edit: func(t *Task) { t.Timeout = MaxActionTimeout + 1 }, fields: []string{"timeout"}},
		{name: "negative timeout", edit: func(t *Task) { t.Timeout = -1 }, fields: []string{"timeout"}},
		{name: "depends on nothing, itself and twice", edit: func(t *Task) {
			t.DependsOn = []string{"", t.ID, "a/start", "a/start"}
		}, fields: []string{"dependsOn[0]", "dependsOn[1]", "dependsOn[3]"}},
		{name: "its own dependent", edit: func(t *Task) { t.Dependents = []string{t.ID} }, fields: []string{"dependents[0]"}},
		{name: "bad attempts", edit: func(t *Task) {
			t.Attempts[0].Attempt, t.Attempts[0].Status = 0, "OK"
			t.Attempts[1].EndedAt = t0
		}, fields: []string{"attempts[0].attempt", "attempts[0].status", "attempts[1].endedAt"}},
		{name: "empty param name", edit: func(t *Task) { t.Params[""] = "x" }, fields: []string{"params"}},
		{name: "several problems together", edit: func(t *Task) {
			t.Action, t.Status, t.Attempt, t.Remaining, t.DependsOn = "", "", 9, -1, []string{t.ID}
		}, fields: []string{"action", "attempt", "dependsOn[0]", "remaining", "status"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := validTask()
			tt.edit(&task)
			require.Equal(t, tt.fields, fieldsOf(task.Validate()))
		})
	}
}

// TestValidateRecordsEveryProblemHasAField checks that zero records (the
// worst case short of malformed JSON) report every problem at a field.
func TestValidateRecordsEveryProblemHasAField(t *testing.T) {
	t.Parallel()
	for name, ps := range map[string]Problems{
		"apiKey":  (&APIKey{}).Validate(),
		"cluster": (&Cluster{Resolved: &ClusterTemplate{}}).Validate(),
		"node":    (&Node{}).Validate(),
		"job":     (&Job{}).Validate(),
		"task":    (&Task{}).Validate(),
	} {
		require.NotEmpty(t, ps, name)
		requireValidationFields(t, ps)
	}
}
