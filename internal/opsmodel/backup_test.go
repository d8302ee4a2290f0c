package opsmodel

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/backup"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/localserver"
)

// backupWhileBusy takes a backup as `heddle backup` does (backup.Save: the
// store streamed by GET /v1/backup with the superadmin's key, the master
// key copied from the data directory), with whatever jobs the sequence left
// running, and checks that it restores to one consistent store: restored
// into a fresh directory (backup.Restore, as `heddle restore`) and opened
// by a server with no workers (so nothing moves on from the copy), it
// holds every cluster the model knew before the backup and none it did
// not, and its records agree with each other as they do after every
// transaction (consistentCopy). The server's temporary copy of the store
// is gone once the backup is (the data directory holds no .backup-*).
//
// A backup reserves nothing of the tenant's (no quota, lock, name or
// host): it is one read transaction. Its temporary copy in the data
// directory is removed by the backup itself when it ends, and by the next
// start or backup when the process died mid-way (killBackup).
func (w *world) backupWhileBusy(t *rapid.T) {
	out, err := os.MkdirTemp(w.dir, "backup-") // empty, as Save wants it
	if err != nil {
		t.Fatalf("backup directory: %v", err)
	}
	known := map[string]bool{}
	for id := range w.m.clusters {
		known[id] = true
	}
	_, err = backup.Save(out, w.cfg.DataDir, "opsmodel", func(dst io.Writer) (int64, error) {
		ctx, cancel := callCtx()
		defer cancel()
		data, err := w.super.Do(ctx, http.MethodGet, "/v1/backup", nil, nil, "")
		if err != nil {
			return 0, err
		}
		n, err := dst.Write(data)
		return int64(n), err
	})
	if err != nil {
		t.Fatalf("backup while jobs run: %v", err)
	}
	defer os.RemoveAll(out)
	left, err := filepath.Glob(filepath.Join(w.cfg.DataDir, ".backup-*"))
	if err != nil || len(left) > 0 {
		t.Fatalf("the backup left its temporary copies in the data directory: %v %v", left, err)
	}

	dir := out + "-restored"
	defer os.RemoveAll(dir)
	if _, err := backup.Restore(out, dir, false); err != nil {
		t.Fatalf("restoring the backup taken while jobs ran: %v", err)
	}
	cfg := w.cfg
	cfg.DataDir, cfg.NoWorkers, cfg.JanitorPeriod = dir, true, time.Hour
	srv, err := localserver.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("starting a server on the restored backup: %v", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	copyOf := &world{dir: dir, m: w.m, super: client.New(srv.URL(), w.super.Key), admin: client.New(srv.URL(), w.admin.Key)}
	copyOf.consistentCopy(t, known)
}

// consistentCopy checks a restored store (w is a view of the server on it):
// what holds after every transaction of the engine, whatever jobs were
// running when the copy was taken.
//   - Every cluster the model knew of before the backup is there, and every
//     cluster there was made by one of the model's accepted creates.
//   - The tenant's counters are within the quotas and equal what the
//     clusters hold: the clusters not TERMINATED, and the nodes they count
//     (a job's reservation and its clusters' counts change in one
//     transaction).
//   - Live names are unique.
//   - A cluster held by a job names a job that has not ended, and every job
//     that has not ended holds its cluster (the lock and the job's state
//     change together).
//   - A cluster no job holds counts exactly its nodes not DELETED (none when
//     TERMINATED).
func (w *world) consistentCopy(t *rapid.T, known map[string]bool) {
	cs, u := w.consistent(t)
	w.checkCounters(t, cs, u)
	listed := clusterIDs(cs)
	for id := range known {
		if !listed[id] {
			t.Fatalf("the restored backup lacks cluster %s, made before the backup", id)
		}
	}
	counted := 0
	for _, c := range cs {
		if c.Status != domain.ClusterTerminated {
			counted += c.NodeCount
		}
		var open []string
		for _, j := range w.jobs(t, c.ID) {
			if !j.Status.Terminal() {
				open = append(open, j.ID+" "+string(j.Status))
				if j.ID != c.ActiveJobID {
					t.Fatalf("restored backup: job %s of cluster %s is %s, but the cluster is held by %q", j.ID, c.ID, j.Status, c.ActiveJobID)
				}
			}
		}
		if c.ActiveJobID != "" {
			if len(open) != 1 {
				t.Fatalf("restored backup: cluster %s is held by job %s, and its jobs not ended are %v", c.ID, c.ActiveJobID, open)
			}
			continue
		}
		live := 0
		for _, n := range w.nodes(t, c.ID) {
			if n.Status != domain.NodeDeleted {
				live++
			}
		}
		want := c.NodeCount
		if c.Status == domain.ClusterTerminated {
			want = 0
		}
		if live != want {
			t.Fatalf("restored backup: cluster %s (%s, no job) counts %d nodes and has %d not deleted", c.ID, c.Status, want, live)
		}
	}
	if u.Nodes != counted {
		t.Fatalf("restored backup: the node counter says %d, the live clusters count %d:%s", u.Nodes, counted, describe(cs))
	}
	t.Logf("backup restored: %d clusters, usage %+v, held by jobs: %s", len(cs), u, held(cs))
}

func held(cs []client.Cluster) string {
	var b []string
	for _, c := range cs {
		if c.ActiveJobID != "" {
			b = append(b, c.ID+":"+c.ActiveJobID)
		}
	}
	return strings.Join(b, ",")
}
