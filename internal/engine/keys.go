package engine

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
)

// indexShards spreads the janitor's index partitions so no one partition is
// hot (DynamoDB GSI write sharding).
const indexShards = 4

func clusterKey(tenant, cluster string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "CLUSTERS"), SK: cluster}
}

func nodeKey(tenant, cluster, node string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "NODES#"+cluster), SK: node}
}

func jobKey(tenant, cluster, job string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "JOBS#"+cluster), SK: job}
}

func taskKey(tenant, job, task string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "TASKS#"+job), SK: task}
}

func tenantKey(tenant string) store.Key { return store.Key{PK: "TENANTS", SK: tenant} }

func shardOf(s string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return int(h.Sum32() % indexShards)
}

func runningPartition(shard int) string { return fmt.Sprintf("RUNNING#%d", shard) }
func readyPartition(shard int) string   { return fmt.Sprintf("READY#%d", shard) }
func jobPartition(shard int) string     { return fmt.Sprintf("JOB#%d", shard) }
func leasePartition(shard int) string   { return fmt.Sprintf("LEASE#%d", shard) }

// TaskRef locates a task: what a queue message carries.
type TaskRef struct {
	Tenant  string
	Cluster string
	Job     string
	Task    string
}

// refSep cannot occur in cluster or job ids (generated) nor in task ids
// (node ids, service names, actions and the planner's separators).
const refSep = "|"

// String is the message form: cluster|job|task (the queue names the tenant).
func (r TaskRef) String() string { return r.Cluster + refSep + r.Job + refSep + r.Task }

// ParseTaskRef reads a message's task reference for tenant.
func ParseTaskRef(tenant, s string) (TaskRef, error) {
	parts := strings.SplitN(s, refSep, 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return TaskRef{}, fmt.Errorf("engine: %q is not a task reference", s)
	}
	return TaskRef{Tenant: tenant, Cluster: parts[0], Job: parts[1], Task: parts[2]}, nil
}

// group is the FIFO message group of a task: one node runs one task at a
// time, nodes run in parallel; joins get their own group each.
//
// A task sent again (sends > 0: the janitor took its message for lost, a
// resume, a job's retry, a failed attempt's retry, polls moved to a fresh
// message) gets a group of its own, <group>#r<sends>: the message it replaces may be stuck in flight
// (hidden for the queue's visibility timeout after a worker died before
// its handler could hold the batch), and in the node's group the new one
// would wait behind it. The planner chains each node's tasks, so no other
// task of the node is ready meanwhile; the claim's condition keeps the old
// and new message from running the task twice.
func group(cluster, node, task string, sends int) string {
	var g string
	if node == "" {
		g = fmt.Sprintf("%s#j%08x", cluster, fnvHash(task))
	} else {
		g = cluster + "#" + node
	}
	if sends > 0 {
		g += "#r" + strconv.Itoa(sends)
	}
	if len(g) > queue.MaxGroupLength {
		g = fmt.Sprintf("%s#n%08x", cluster, fnvHash(g))
	}
	return g
}

func fnvHash(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
