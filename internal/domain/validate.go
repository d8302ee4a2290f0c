package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// namePattern is what every entity, service, tenant and user name must match:
// it is safe in a URL path segment, a store key and a shell environment value.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// ValidName reports whether s may name an entity.
//
// It is namePattern written out: a dry run of 10,000 nodes checks some
// 20,000 names, and the regexp took a tenth of its time.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// MaxActionTimeout is the longest an action may run: the SQS visibility limit,
// past which a task's message could not be held by one worker.
const MaxActionTimeout = Duration(12 * time.Hour)

// MaxRetries bounds an action's retry limit.
const MaxRetries = 10

// MaxFieldBytes bounds one action field value, one provider field value and a
// template's defaults.config, so that an entity always fits in one store item
// (DynamoDB holds at most 400 KB per item).
const MaxFieldBytes = 64 << 10

// fieldSize reports a value longer than MaxFieldBytes. hint, when not empty,
// is a sentence appended to the message.
func (c checker) fieldSize(field string, n int, hint string) {
	if n <= MaxFieldBytes {
		return
	}
	msg := "is %d bytes long; a value holds at most %d bytes (64 KiB)"
	if hint != "" {
		msg += ". " + hint
	}
	c.add(field, CodeOutOfRange, msg, n, MaxFieldBytes)
}

// scriptHint is what a too-long action field is told to do instead.
const scriptHint = "For a long script, upload it as a versioned script resource and refer to it from the action instead of inlining it"

func (c checker) name(field, value string) {
	switch {
	case value == "":
		c.add(field, CodeRequired, "is required")
	case !ValidName(value):
		c.add(field, CodeInvalid, "%q is not a valid name: use 1 to 63 letters, digits, '_', '.' or '-', starting with a letter or digit", value)
	}
}

func (c checker) names(field string, values []string) {
	seen := map[string]bool{}
	for i, v := range values {
		c.at(field).index(i).name("", v)
		if seen[v] {
			c.at(field).index(i).add("", CodeDuplicate, "%q is listed twice", v)
		}
		seen[v] = true
	}
}

func (c checker) meta(m Meta) {
	c.name("name", m.Name)
	if len(m.Label) > 255 {
		c.add("label", CodeOutOfRange, "is %d characters long; keep it under 256", len(m.Label))
	}
	if len(m.Description) > 4096 {
		c.add("description", CodeOutOfRange, "is %d characters long; keep it under 4097", len(m.Description))
	}
	if m.Version < 0 {
		c.add("version", CodeOutOfRange, "cannot be negative")
	}
}

func (c checker) links(links []Link) {
	for i, l := range links {
		lc := c.at("links").index(i)
		if l.Label == "" {
			lc.add("label", CodeRequired, "is required")
		}
		u, err := url.Parse(l.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			lc.add("url", CodeInvalid, "%q is not an http or https URL", l.URL)
		}
	}
}

// Validate checks a provider on its own; the provider type's own fields are
// checked by the provider plugin.
func (p *Provider) Validate() Problems {
	c := newChecker()
	c.meta(p.Meta)
	c.name("providerType", p.ProviderType)
	for k, v := range p.Fields {
		if k == "" {
			c.at("fields").add("", CodeInvalid, "a field name cannot be empty")
		}
		c.at("fields").fieldSize(k, len(v), "")
	}
	return c.result()
}

// Validate checks a hardware type.
func (h *HardwareType) Validate() Problems {
	c := newChecker()
	c.meta(h.Meta)
	if len(h.ProviderMap) == 0 {
		c.add("providerMap", CodeRequired, "must map at least one provider to a flavor")
	}
	for prov, f := range h.ProviderMap {
		pc := c.at("providerMap").at(prov)
		pc.name("", prov)
		if f.Flavor == "" {
			pc.add("flavor", CodeRequired, "is required")
		}
	}
	return c.result()
}

// Validate checks an image type.
func (im *ImageType) Validate() Problems {
	c := newChecker()
	c.meta(im.Meta)
	if len(im.ProviderMap) == 0 {
		c.add("providerMap", CodeRequired, "must map at least one provider to an image")
	}
	for prov, ref := range im.ProviderMap {
		pc := c.at("providerMap").at(prov)
		pc.name("", prov)
		if ref.Image == "" {
			pc.add("image", CodeRequired, "is required")
		}
	}
	return c.result()
}

// Validate checks a service on its own. Whether the services it names exist is
// the catalog's concern.
func (s *Service) Validate() Problems {
	c := newChecker()
	c.meta(s.Meta)
	d := c.at("dependencies")
	d.names("provides", s.Dependencies.Provides)
	d.names("conflicts", s.Dependencies.Conflicts)
	for phase, set := range map[string]DependencySet{"install": s.Dependencies.Install, "runtime": s.Dependencies.Runtime} {
		pc := d.at(phase)
		pc.names("requires", set.Requires)
		pc.names("uses", set.Uses)
		for _, list := range []struct {
			field string
			names []string
		}{{"requires", set.Requires}, {"uses", set.Uses}} {
			for i, n := range list.names {
				if n == s.Name {
					pc.at(list.field).index(i).add("", CodeInvalid, "a service cannot depend on itself")
				}
			}
		}
	}
	for i, n := range s.Dependencies.Conflicts {
		if n == s.Name {
			d.at("conflicts").index(i).add("", CodeInvalid, "a service cannot conflict with itself")
		}
	}
	for action, a := range s.Actions {
		ac := c.at("actions").at(string(action))
		if !action.IsServiceAction() {
			ac.add("", CodeInvalid, "%q is not a service action; use one of install, configure, initialize, start, stop, remove, check", action)
			continue
		}
		ac.name("type", a.Type)
		if a.Timeout > MaxActionTimeout {
			ac.add("timeout", CodeOutOfRange, "is %s; an action may run at most %s", a.Timeout, MaxActionTimeout)
		}
		if a.Retries != nil && (*a.Retries < 0 || *a.Retries > MaxRetries) {
			ac.add("retries", CodeOutOfRange, "is %d; use 0 to %d", *a.Retries, MaxRetries)
		}
		for k, v := range a.Fields {
			ac.at("fields").fieldSize(k, len(v), scriptHint)
		}
	}
	c.links(s.Links)
	return c.result()
}

// Validate checks a cluster template's shape. ValidateResolved checks what
// only a fully resolved template must satisfy.
func (t *ClusterTemplate) Validate() Problems {
	c := newChecker()
	c.meta(t.Meta)
	c.sections(t.TemplateSections)
	return c.result()
}

// Validate checks a partial template's shape.
func (t *PartialTemplate) Validate() Problems {
	c := newChecker()
	c.meta(t.Meta)
	c.sections(t.TemplateSections)
	return c.result()
}

// ValidateResolved checks what a template must satisfy once its extends and
// includes are merged: enough to create a cluster from it.
func (t *ClusterTemplate) ValidateResolved() Problems {
	c := newChecker()
	c.sections(t.TemplateSections)
	if len(t.Compatibility.Services) == 0 {
		c.add("compatibility.services", CodeRequired, "must list at least one service the cluster may run")
	}
	if len(t.Defaults.Services) == 0 {
		c.add("defaults.services", CodeRequired, "must list the services a cluster gets when the request names none")
	}
	if t.Defaults.Provider == "" {
		c.add("defaults.provider", CodeRequired, "must name the provider a cluster uses when the request names none")
	}
	compat := set(t.Compatibility.Services)
	for i, s := range t.Defaults.Services {
		if !compat[s] {
			c.at("defaults.services").index(i).add("", CodeConflict, "%q is not in compatibility.services", s)
		}
	}
	if t.Defaults.HardwareType != "" && len(t.Compatibility.HardwareTypes) > 0 && !set(t.Compatibility.HardwareTypes)[t.Defaults.HardwareType] {
		c.add("defaults.hardwareType", CodeConflict, "%q is not in compatibility.hardwareTypes", t.Defaults.HardwareType)
	}
	if t.Defaults.ImageType != "" && len(t.Compatibility.ImageTypes) > 0 && !set(t.Compatibility.ImageTypes)[t.Defaults.ImageType] {
		c.add("defaults.imageType", CodeConflict, "%q is not in compatibility.imageTypes", t.Defaults.ImageType)
	}
	for svc := range t.Constraints.Services {
		if !compat[svc] {
			c.at("constraints.services").at(svc).add("", CodeConflict, "constrains %q, which is not in compatibility.services", svc)
		}
	}
	return c.result()
}

func (c checker) sections(s TemplateSections) {
	if s.Extends != nil {
		c.at("extends").name("name", s.Extends.Name)
		if s.Extends.Version < 0 {
			c.at("extends").add("version", CodeOutOfRange, "cannot be negative")
		}
	}
	for i, ref := range s.Includes {
		c.at("includes").index(i).name("name", ref.Name)
		if ref.Version < 0 {
			c.at("includes").index(i).add("version", CodeOutOfRange, "cannot be negative")
		}
	}
	cc := c.at("compatibility")
	cc.names("services", s.Compatibility.Services)
	cc.names("hardwareTypes", s.Compatibility.HardwareTypes)
	cc.names("imageTypes", s.Compatibility.ImageTypes)

	dc := c.at("defaults")
	dc.names("services", s.Defaults.Services)
	if s.Defaults.Provider != "" {
		dc.name("provider", s.Defaults.Provider)
	}
	if s.Defaults.HardwareType != "" {
		dc.name("hardwareType", s.Defaults.HardwareType)
	}
	if s.Defaults.ImageType != "" {
		dc.name("imageType", s.Defaults.ImageType)
	}
	if len(s.Defaults.Config) > 0 && !isJSONObject(s.Defaults.Config) {
		dc.add("config", CodeWrongType, "must be a JSON object")
	}
	dc.fieldSize("config", len(s.Defaults.Config), "Keep large configuration out of the template")

	k := c.at("constraints")
	size := s.Constraints.Size
	if size.Min < 0 {
		k.add("size.min", CodeOutOfRange, "is %d; a cluster needs at least 1 node", size.Min)
	}
	if size.Max < 0 || size.Max > MaxClusterSize {
		k.add("size.max", CodeOutOfRange, "is %d; use 1 to %d, or 0 for no limit", size.Max, MaxClusterSize)
	}
	if size.Max > 0 && size.Min > size.Max {
		k.add("size", CodeConflict, "min %d is greater than max %d", size.Min, size.Max)
	}
	for field, groups := range map[string][][]string{"layout.mustCoexist": s.Constraints.Layout.MustCoexist, "layout.cantCoexist": s.Constraints.Layout.CantCoexist} {
		for i, g := range groups {
			gc := k.at(field).index(i)
			gc.names("", g)
			if len(g) < 2 {
				gc.add("", CodeInvalid, "a group needs at least two services")
			}
		}
	}
	for svc, sc := range s.Constraints.Services {
		sv := k.at("services").at(svc)
		sv.name("", svc)
		sv.names("hardwareTypes", sc.HardwareTypes)
		sv.names("imageTypes", sc.ImageTypes)
		q := sc.Quantities
		if q.Min < 0 {
			sv.add("quantities.min", CodeOutOfRange, "cannot be negative")
		}
		if q.Max < 0 {
			sv.add("quantities.max", CodeOutOfRange, "cannot be negative; use 0 for no limit")
		}
		if q.Max > 0 && q.Min > q.Max {
			sv.add("quantities", CodeConflict, "min %d is greater than max %d", q.Min, q.Max)
		}
		if size.Max > 0 && q.Min > size.Max {
			sv.add("quantities.min", CodeConflict, "needs %d nodes but the cluster may have at most %d", q.Min, size.Max)
		}
	}
	lease := s.Administration.Lease
	if lease.Max > 0 && lease.Initial > lease.Max {
		c.add("administration.lease.initial", CodeConflict, "%s is longer than the maximum lease %s", lease.Initial, lease.Max)
	}
	if every := s.Administration.VerifyEvery; every != 0 && every < MinVerifyEvery {
		c.add("administration.verifyEvery", CodeOutOfRange, "%s is too often; verify at most once a minute (1m), or leave it out for no periodic verification", every)
	}
	if every := s.Administration.DriftEvery; every != nil && *every != 0 && (*every < MinVerifyEvery) {
		c.add("administration.driftEvery", CodeOutOfRange, "%s is too often; check for drift at most once a minute (1m), or 0 for no periodic drift checks", *every)
	}
	if r := s.Administration.Repair; r != nil {
		if !slices.Contains([]RepairMode{"", RepairOff, RepairReport, RepairAuto}, r.Mode) {
			c.add("administration.repair.mode", CodeInvalid, "%q is not off, report or auto", r.Mode)
		}
		if r.MaxUnhealthy != "" {
			if _, _, err := parseMaxUnhealthy(r.MaxUnhealthy); err != nil {
				c.add("administration.repair.maxUnhealthy", CodeInvalid, "%v", err)
			}
		}
		if r.Backoff < 0 {
			c.add("administration.repair.backoff", CodeOutOfRange, "%s is negative; give the least time between two repairs of one node, such as 30m", r.Backoff)
		}
	}
	if a := s.Administration.Autoscale; a != nil {
		for _, p := range a.Problems("administration.autoscale") {
			c.add(p.Field, p.Code, "%s", p.Message)
		}
		if lo, hi := Bounds(a, size); lo > hi {
			c.add("administration.autoscale", CodeConflict, "the policy's range [%d, %d] and constraints.size leave no size", a.Min, a.Max)
		}
	}
	c.links(s.Links)
}

func isJSONObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// Validate checks a tenant.
func (t *Tenant) Validate() Problems {
	c := newChecker()
	c.name("id", t.ID)
	if t.Workers < 0 || t.Workers > 1000 {
		c.add("workers", CodeOutOfRange, "is %d; use 0 to 1000", t.Workers)
	}
	if t.MaxClusters < 0 {
		c.add("maxClusters", CodeOutOfRange, "cannot be negative")
	}
	if t.MaxNodes < 0 {
		c.add("maxNodes", CodeOutOfRange, "cannot be negative")
	}
	if len(t.Description) > 4096 {
		c.add("description", CodeOutOfRange, "is %d characters long; keep it under 4097", len(t.Description))
	}
	return c.result()
}

// Validate checks a user.
func (u *User) Validate() Problems {
	c := newChecker()
	c.name("name", u.Name)
	if !u.Role.Valid() {
		c.add("role", CodeInvalid, "%q is not a role; use superadmin, admin or user", u.Role)
	}
	return c.result()
}

// Address kinds a node may carry: the address heddle reaches it at and the
// address its services bind to.
const (
	AddressAccessV4 = "access_v4"
	AddressBindV4   = "bind_v4"
)

// actionJoin is the action of a join task (the planner's ActionJoin): it does
// no work, so it is no domain action, and only a join task may carry it.
const actionJoin Action = "join"

// MaxClusterNameLength bounds a cluster's display name.
const MaxClusterNameLength = 64

var (
	clusterStatuses = []ClusterStatus{ClusterPending, ClusterActive, ClusterInconsistent, ClusterFailed, ClusterDeleting, ClusterTerminated}
	nodeStatuses    = []NodeStatus{NodePlanned, NodeCreating, NodeActive, NodeDeleting, NodeDeleted, NodeFailed}
	jobStatuses     = []JobStatus{JobPending, JobRunning, JobPaused, JobSucceeded, JobFailed, JobAborted, JobFailing, JobRollingBack}
	taskStatuses    = []TaskStatus{TaskBlocked, TaskReady, TaskRunning, TaskSucceeded, TaskFailed, TaskCanceled}
	operations      = []Operation{OpCreate, OpDelete, OpExpand, OpShrink, OpReconfigure, OpAddServices, OpRemoveServices,
		OpStartServices, OpStopServices, OpRestartServices, OpRollingRestart, OpSyncTemplate, OpRollback, OpVerify, OpDrift, OpRepair}
	// taskActions are the actions a work task may carry: the node-level ones
	// and every service action.
	taskActions = append([]Action{ActionCreate, ActionConfirm, ActionBootstrap, ActionDelete, ActionProbe}, ServiceActions...)
)

// enum reports value at field unless it is one of known; what names the kind
// of value in the message ("a cluster status").
func enum[T ~string](c checker, field string, value T, what string, known []T) {
	if slices.Contains(known, value) {
		return
	}
	list := make([]string, len(known))
	for i, k := range known {
		list[i] = string(k)
	}
	if value == "" {
		c.add(field, CodeRequired, "is required; use one of %s", strings.Join(list, ", "))
		return
	}
	c.add(field, CodeInvalid, "%q is not %s; use one of %s", value, what, strings.Join(list, ", "))
}

// optionalName checks value as a name when it is set.
func (c checker) optionalName(field, value string) {
	if value != "" {
		c.name(field, value)
	}
}

func (c checker) nonNegative(field string, n int) {
	if n < 0 {
		c.add(field, CodeOutOfRange, "is %d; it cannot be negative", n)
	}
}

func (c checker) version(v int64) {
	if v < 0 {
		c.add("version", CodeOutOfRange, "cannot be negative")
	}
}

// ordered reports a later time that comes before an earlier one, when both
// are set; the problem is reported at the later field.
func (c checker) ordered(earlyField string, early time.Time, lateField string, late time.Time) {
	if !early.IsZero() && !late.IsZero() && late.Before(early) {
		c.add(lateField, CodeConflict, "%s comes before %s %s", late.Format(time.RFC3339Nano), earlyField, early.Format(time.RFC3339Nano))
	}
}

// Validate checks an API key record. The hash is checked only when it is set:
// it never travels in JSON.
func (k *APIKey) Validate() Problems {
	c := newChecker()
	c.name("id", k.ID)
	c.name("tenantId", k.TenantID)
	c.name("user", k.User)
	if k.Hash != "" {
		if b, err := hex.DecodeString(k.Hash); err != nil || len(b) != sha256.Size || strings.ToLower(k.Hash) != k.Hash {
			c.add("hash", CodeInvalid, "must be a SHA-256 hash in lowercase hex (64 characters)")
		}
	}
	return c.result()
}

// Validate checks a cluster record: its names and references, its status, its
// counts, the order of its times and, when set, the template it was resolved
// from.
func (cl *Cluster) Validate() Problems {
	c := newChecker()
	c.name("id", cl.ID)
	c.name("tenantId", cl.TenantID)
	c.name("owner", cl.Owner)
	switch {
	case cl.Name == "":
		c.add("name", CodeRequired, "is required")
	case len(cl.Name) > MaxClusterNameLength:
		c.add("name", CodeOutOfRange, "is %d characters long; use at most %d", len(cl.Name), MaxClusterNameLength)
	}
	if len(cl.Description) > 4096 {
		c.add("description", CodeOutOfRange, "is %d characters long; keep it under 4097", len(cl.Description))
	}
	c.at("template").name("name", cl.Template.Name)
	if cl.Template.Version < 0 {
		c.at("template").add("version", CodeOutOfRange, "cannot be negative")
	}
	if t := cl.Resolved; t != nil {
		rc := c.at("resolvedTemplate")
		rc.meta(t.Meta)
		for _, p := range t.ValidateResolved() {
			rc.add(p.Field, p.Code, "%s", p.Message)
		}
	}
	c.name("provider", cl.Provider)
	c.names("services", cl.Services)
	if len(cl.Config) > 0 && !isJSONObject(cl.Config) {
		c.add("config", CodeWrongType, "must be a JSON object")
	}
	c.fieldSize("config", len(cl.Config), "Keep large configuration out of the cluster")
	enum(c, "status", cl.Status, "a cluster status", clusterStatuses)
	switch {
	case cl.NodeCount < 0:
		c.nonNegative("nodeCount", cl.NodeCount)
	case cl.NodeCount > MaxClusterSize:
		c.add("nodeCount", CodeOutOfRange, "is %d; a cluster has at most %d nodes", cl.NodeCount, MaxClusterSize)
	}
	c.optionalName("activeJobId", cl.ActiveJobID)
	c.optionalName("latestJobId", cl.LatestJobID)
	c.ordered("createdAt", cl.CreatedAt, "expiresAt", cl.ExpiresAt)
	c.version(cl.Version)
	return c.result()
}

// Validate checks a node record: its names, layout, addresses and status.
func (n *Node) Validate() Problems {
	c := newChecker()
	c.name("id", n.ID)
	c.name("clusterId", n.ClusterID)
	c.nonNegative("num", n.Num)
	c.layout(n.NodeLayout)
	for _, k := range slices.Sorted(maps.Keys(n.Addresses)) {
		ac := c.at("addresses").at(k)
		if k != AddressAccessV4 && k != AddressBindV4 {
			ac.add("", CodeInvalid, "%q is not an address kind; use %s or %s", k, AddressAccessV4, AddressBindV4)
			continue
		}
		// An empty value is an address the provider does not know (yet): an
		// instance with no public address, say.
		if v := n.Addresses[k]; v != "" {
			if _, err := netip.ParseAddr(v); err != nil {
				ac.add("", CodeInvalid, "%q is not an IP address", v)
			}
		}
	}
	for k := range n.Properties {
		if k == "" {
			c.at("properties").add("", CodeInvalid, "a property name cannot be empty")
		}
	}
	enum(c, "status", n.Status, "a node status", nodeStatuses)
	return c.result()
}

// layout checks a node layout: named hardware and image types, and service
// names sorted with none twice.
func (c checker) layout(l NodeLayout) {
	c.name("hardwareType", l.HardwareType)
	c.name("imageType", l.ImageType)
	c.names("services", l.Services)
	if !slices.IsSorted(l.Services) {
		c.add("services", CodeInvalid, "must be sorted by name")
	}
}

// Validate checks a job record: its names, operation, status, task counts and
// the order of its times.
func (j *Job) Validate() Problems {
	c := newChecker()
	c.name("id", j.ID)
	c.name("tenantId", j.TenantID)
	c.name("clusterId", j.ClusterID)
	enum(c, "operation", j.Operation, "an operation", operations)
	enum(c, "status", j.Status, "a job status", jobStatuses)
	c.nonNegative("taskTotal", j.TaskTotal)
	c.nonNegative("taskDone", j.TaskDone)
	if j.TaskDone > j.TaskTotal && j.TaskTotal >= 0 {
		c.add("taskDone", CodeConflict, "is %d, more than taskTotal %d", j.TaskDone, j.TaskTotal)
	}
	c.optionalName("requestedBy", j.RequestedBy)
	c.ordered("createdAt", j.CreatedAt, "startedAt", j.StartedAt)
	c.ordered("startedAt", j.StartedAt, "endedAt", j.EndedAt)
	c.nonNegative("retries", j.Retries)
	c.version(j.Version)
	return c.result()
}

// Validate checks a task record: its ids, action, status, attempt counts,
// dependencies and attempts. Task ids are derived from what the task does
// ("<node>/<service>/<action>", "join:...", "rollback:..."), so they are not
// names: they only need to be set.
func (t *Task) Validate() Problems {
	c := newChecker()
	if t.ID == "" {
		c.add("id", CodeRequired, "is required")
	}
	c.name("tenantId", t.TenantID)
	c.name("jobId", t.JobID)
	c.name("clusterId", t.ClusterID)
	c.optionalName("nodeId", t.NodeID)
	c.optionalName("service", t.Service)
	switch {
	case t.Join && t.Action != actionJoin:
		c.add("action", CodeInvalid, "is %q; a join task's action is %q", t.Action, actionJoin)
	case !t.Join && t.Action == actionJoin:
		c.add("action", CodeConflict, "%q is the action of a join task, but join is false", t.Action)
	case !t.Join:
		enum(c, "action", t.Action, "a task action", taskActions)
	}
	enum(c, "status", t.Status, "a task status", taskStatuses)
	c.nonNegative("attempt", t.Attempt)
	c.nonNegative("maxAttempts", t.MaxAttempts)
	if t.Attempt > t.MaxAttempts && t.MaxAttempts >= 0 {
		c.add("attempt", CodeConflict, "is %d, more than maxAttempts %d", t.Attempt, t.MaxAttempts)
	}
	c.nonNegative("attemptsPerRun", t.AttemptsPerRun)
	if t.Timeout < 0 || t.Timeout > MaxActionTimeout {
		c.add("timeout", CodeOutOfRange, "is %s; use 0 to %s", t.Timeout, MaxActionTimeout)
	}
	c.taskIDs("dependsOn", t.ID, t.DependsOn, "a task cannot depend on itself")
	c.taskIDs("dependents", t.ID, t.Dependents, "a task cannot be its own dependent")
	c.nonNegative("remaining", t.Remaining)
	c.nonNegative("sends", t.Sends)
	for i, a := range t.Attempts {
		ac := c.at("attempts").index(i)
		if a.Attempt < 1 {
			ac.add("attempt", CodeOutOfRange, "is %d; attempts are numbered from 1", a.Attempt)
		}
		enum(ac, "status", a.Status, "a task status", taskStatuses)
		ac.ordered("startedAt", a.StartedAt, "endedAt", a.EndedAt)
	}
	for k := range t.Params {
		if k == "" {
			c.at("params").add("", CodeInvalid, "a parameter name cannot be empty")
		}
	}
	c.version(t.Version)
	return c.result()
}

// taskIDs checks a list of task ids: each set, none twice, none the task's own.
func (c checker) taskIDs(field, self string, ids []string, selfMsg string) {
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		ic := c.at(field).index(i)
		switch {
		case id == "":
			ic.add("", CodeRequired, "a task id cannot be empty")
		case id == self:
			ic.add("", CodeInvalid, "%s", selfMsg)
		case seen[id]:
			ic.add("", CodeDuplicate, "%q is listed twice", id)
		}
		seen[id] = true
	}
}
