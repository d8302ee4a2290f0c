package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/heddle-io/heddle/internal/store"
)

// Lifetime is one node's life. End is zero while the node lives.
type Lifetime struct {
	Tenant       string    `json:"tenant"`
	Cluster      string    `json:"cluster"`
	Node         string    `json:"node"`
	Owner        string    `json:"owner"`
	Template     string    `json:"template"`
	HardwareType string    `json:"hardwareType"`
	Start        time.Time `json:"start"`
	End          time.Time `json:"end,omitzero"`
}

// Key is where a lifetime is stored: the tenant's usage partition, one
// item per node.
func Key(tenant, cluster, node string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "USAGE"), SK: cluster + "#" + node}
}

// Item is the store item of l.
func Item(l Lifetime) store.Item {
	data, _ := json.Marshal(l) // strings and times only
	return store.Item{Key: Key(l.Tenant, l.Cluster, l.Node), Data: data}
}

// batchPartition holds the batch records (BatchItem), apart from the
// one-per-node records of Key: code from before batches reads only that
// partition, so while two releases run side by side it leaves batches
// alone (its reports miss their nodes) instead of misreading them.
const batchPartition = "USAGEBATCHES"

// MaxBatch is the most lifetimes one batch record holds: about 300 bytes
// each, far below DynamoDB's 400 KB item.
const MaxBatch = 500

// batch is a batch record's document.
type batch struct {
	Lifetimes []Lifetime `json:"lifetimes"`
}

// BatchItem is one store item recording the lifetimes that one write
// opens or closes (a job's end marks its nodes in transactions of up to
// 100 items: one batch each, rather than one usage write per node). The
// key names the cluster, the job, the status the job's end gave and the
// first node of the batch (a node's delete task, which closes its
// lifetime itself, gives "task:" and its id as the status); ls must be
// non-empty, of one tenant and cluster, and at most MaxBatch. A job's end
// marks each node once (under the node's version), so two batches never
// share a key.
func BatchItem(job, status string, ls []Lifetime) store.Item {
	l := ls[0]
	data, _ := json.Marshal(batch{Lifetimes: ls})
	return store.Item{Key: store.Key{PK: store.TenantPK(l.Tenant, batchPartition), SK: l.Cluster + "#" + job + "#" + status + "#" + l.Node}, Data: data}
}

// Grouping says what a report sums by.
type Grouping string

const (
	ByTenant       Grouping = "tenant"
	ByUser         Grouping = "user"
	ByCluster      Grouping = "cluster"
	ByTemplate     Grouping = "template"
	ByHardwareType Grouping = "hardwareType"
)

// Step is a report's bucket.
type Step string

const (
	Hour Step = "hour"
	Day  Step = "day"
)

func (s Step) duration() time.Duration {
	if s == Hour {
		return time.Hour
	}
	return 24 * time.Hour
}

// MaxBuckets bounds a report: 31 days of hours, a year of days.
var MaxBuckets = map[Step]int{Hour: 31 * 24, Day: 366}

// Query is one report's range and shape.
type Query struct {
	From, To time.Time
	GroupBy  Grouping
	Step     Step
	// Owner, when set, keeps only clusters of that user (a user's view).
	Owner string
}

// Row is one group's node-hours, bucket by bucket.
type Row struct {
	Group     string    `json:"group"`
	NodeHours []float64 `json:"nodeHours"` // one per bucket, from From
	Total     float64   `json:"total"`
}

// Report is a query's answer.
type Report struct {
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Step    Step      `json:"step"`
	GroupBy Grouping  `json:"groupBy"`
	// Buckets are the start of each bucket.
	Buckets []time.Time `json:"buckets"`
	Rows    []Row       `json:"rows"`
}

// Problem is a query that cannot be answered, with the parameter at fault.
type Problem struct {
	Field, Message string
}

func (p *Problem) Error() string { return p.Field + ": " + p.Message }

// Check validates q: a step and grouping heddle knows, from before to,
// buckets aligned and at most MaxBuckets of them.
func (q Query) Check() error {
	switch q.GroupBy {
	case ByTenant, ByUser, ByCluster, ByTemplate, ByHardwareType:
	default:
		return &Problem{"groupBy", fmt.Sprintf("%q is not a grouping; use tenant, user, cluster, template or hardwareType", q.GroupBy)}
	}
	if q.Step != Hour && q.Step != Day {
		return &Problem{"step", fmt.Sprintf("%q is not a step; use hour or day", q.Step)}
	}
	if !q.From.Before(q.To) {
		return &Problem{"to", fmt.Sprintf("%s is not after from (%s)", q.To.Format(time.RFC3339), q.From.Format(time.RFC3339))}
	}
	if n := q.buckets(); n > int64(MaxBuckets[q.Step]) {
		return &Problem{"from", fmt.Sprintf("the range holds %d %ss; a report holds at most %d (use step=day, or a shorter range)", n, q.Step, MaxBuckets[q.Step])}
	}
	return nil
}

// buckets counts q's buckets, the last one partial. A range longer than a
// time.Duration holds (about 292 years, which To.Sub saturates at) is
// counted in whole seconds, so that it is refused rather than wrapped
// around to a small or negative count.
func (q Query) buckets() int64 {
	d := q.Step.duration()
	if span := q.To.Sub(q.From); span < math.MaxInt64-d {
		return int64((span + d - 1) / d)
	}
	return (q.To.Unix()-q.From.Unix())/int64(d/time.Second) + 1
}

// Compute sums lifetimes into q's report. Pure: tests feed it a timeline.
func Compute(q Query, lifetimes []Lifetime, now time.Time) (Report, error) {
	if err := q.Check(); err != nil {
		return Report{}, err
	}
	d := q.Step.duration()
	n := int(q.buckets())
	r := Report{From: q.From, To: q.To, Step: q.Step, GroupBy: q.GroupBy, Buckets: make([]time.Time, n), Rows: []Row{}}
	for i := range r.Buckets {
		r.Buckets[i] = q.From.Add(time.Duration(i) * d)
	}
	rows := map[string]*Row{}
	for _, l := range lifetimes {
		if q.Owner != "" && l.Owner != q.Owner {
			continue
		}
		end := l.End
		if end.IsZero() || end.After(now) {
			end = now
		}
		start, stop := maxTime(l.Start, q.From), minTime(end, q.To)
		if !start.Before(stop) {
			continue
		}
		g := l.group(q.GroupBy)
		row := rows[g]
		if row == nil {
			row = &Row{Group: g, NodeHours: make([]float64, n)}
			rows[g] = row
		}
		for i := int(start.Sub(q.From) / d); i < n && r.Buckets[i].Before(stop); i++ {
			b0 := r.Buckets[i]
			s, e := maxTime(start, b0), minTime(stop, b0.Add(d))
			h := e.Sub(s).Hours()
			row.NodeHours[i] += h
			row.Total += h
		}
	}
	for _, row := range rows {
		r.Rows = append(r.Rows, *row)
	}
	sort.Slice(r.Rows, func(i, j int) bool {
		if r.Rows[i].Total != r.Rows[j].Total {
			return r.Rows[i].Total > r.Rows[j].Total
		}
		return r.Rows[i].Group < r.Rows[j].Group
	})
	return r, nil
}

func (l Lifetime) group(g Grouping) string {
	switch g {
	case ByUser:
		return l.Tenant + "/" + l.Owner
	case ByCluster:
		return l.Cluster
	case ByTemplate:
		return l.Template
	case ByHardwareType:
		return l.HardwareType
	}
	return l.Tenant
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Reader reads the recorded lifetimes.
type Reader struct{ s store.Store }

// NewReader reads from s.
func NewReader(s store.Store) *Reader { return &Reader{s: s} }

// Lifetimes returns every lifetime of a tenant that overlaps [from, to).
//
// A node's life may be recorded more than once: opened in one record and
// closed in another (batches are never rewritten), or, from before
// batches, in one record per node that its close replaced. Records of the
// same node and start are one lifetime, closed if any record closes it.
func (r *Reader) Lifetimes(ctx context.Context, tenant string, from, to time.Time) ([]Lifetime, error) {
	type life struct {
		cluster, node string
		start         time.Time
	}
	byLife := map[life]int{}
	var all []Lifetime
	add := func(l Lifetime) {
		k := life{l.Cluster, l.Node, l.Start.UTC()}
		i, ok := byLife[k]
		if !ok {
			byLife[k] = len(all)
			all = append(all, l)
			return
		}
		if cur := all[i]; cur.End.IsZero() || (!l.End.IsZero() && l.End.Before(cur.End)) {
			all[i] = l
		}
	}
	err := r.each(ctx, store.TenantPK(tenant, "USAGE"), func(it store.Item) error {
		var l Lifetime
		if err := json.Unmarshal(it.Data, &l); err != nil {
			return errors.Join(fmt.Errorf("reading usage record %s", it.SK), err)
		}
		add(l)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = r.each(ctx, store.TenantPK(tenant, batchPartition), func(it store.Item) error {
		var b batch
		if err := json.Unmarshal(it.Data, &b); err != nil {
			return errors.Join(fmt.Errorf("reading usage batch %s", it.SK), err)
		}
		for _, l := range b.Lifetimes {
			add(l)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Lifetime
	for _, l := range all {
		if l.Start.Before(to) && (l.End.IsZero() || l.End.After(from)) {
			out = append(out, l)
		}
	}
	return out, nil
}

// each calls fn with every item of partition pk.
func (r *Reader) each(ctx context.Context, pk string, fn func(store.Item) error) error {
	cursor := ""
	for {
		page, err := r.s.Query(ctx, pk, store.Query{Limit: store.MaxPageSize, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		cursor = page.Next
	}
}
