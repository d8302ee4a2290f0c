package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
)

// workerEnv sets the worker's environment; empty values unset it.
func workerEnv(t *testing.T, table, prefix, key string) {
	t.Helper()
	t.Setenv("HEDDLE_TABLE", table)
	t.Setenv("HEDDLE_QUEUE_PREFIX", prefix)
	t.Setenv("HEDDLE_KMS_KEY_ID", key)
}

// TestWorkerRefusesWithoutItsEnvironment: `heddle worker` stops before
// making any AWS client when its environment is incomplete.
func TestWorkerRefusesWithoutItsEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name, table, prefix, key, want string
	}{
		{"nothing", "", "", "", "HEDDLE_TABLE is not set"},
		{"no table", "", "heddle-dev-", "arn:aws:kms:eu-west-1:123456789012:key/k", "HEDDLE_TABLE is not set"},
		{"no queue prefix", "heddle-dev", "", "arn:aws:kms:eu-west-1:123456789012:key/k", "HEDDLE_QUEUE_PREFIX is not set"},
		{"no key", "heddle-dev", "heddle-dev-", "", "HEDDLE_KMS_KEY_ID must be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			workerEnv(t, tc.table, tc.prefix, tc.key)
			r := runCLI(t, "", "worker")
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, tc.want)
			}
			if r.stdout != "" {
				t.Fatalf("stdout %q", r.stdout)
			}
		})
	}
}

func TestWorkerFlags(t *testing.T) {
	workerEnv(t, "", "", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"worker", "--workers", "0"}, "--workers must be at least 1, not 0"},
		{[]string{"worker", "--workers=-3"}, "--workers must be at least 1, not -3"},
		{[]string{"worker", "--workers", "many"}, `invalid argument "many" for "--workers"`},
		{[]string{"worker", "acme"}, `unknown command "acme"`},
		{[]string{"worker", "--queue-prefix", "heddle-dev-"}, "unknown flag: --queue-prefix"},
		// A valid count gets as far as the environment.
		{[]string{"worker", "--workers", "5"}, "HEDDLE_TABLE is not set"},
	} {
		r := runCLI(t, "", tc.args...)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}

	r := runCLI(t, "", "worker", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "--workers int") || !strings.Contains(r.stdout, "(default 2)") ||
		!strings.Contains(r.stdout, "HEDDLE_QUEUE_PREFIX") {
		t.Fatalf("help: exit %d, stdout %q", r.code, r.stdout)
	}
	r = runCLI(t, "", "--help")
	if !strings.Contains(r.stdout, "worker") {
		t.Fatalf("the root's help does not list worker: %q", r.stdout)
	}
}

// pagedTenants answers ListTenants two tenants a page.
type pagedTenants struct {
	ids   []string
	err   error
	calls int
}

func (p *pagedTenants) ListTenants(_ context.Context, limit int, cursor string) ([]access.TenantView, string, error) {
	p.calls++
	if p.err != nil {
		return nil, "", p.err
	}
	start := 0
	if cursor != "" {
		for i, id := range p.ids {
			if id == cursor {
				start = i + 1
			}
		}
	}
	end := min(start+2, len(p.ids))
	var page []access.TenantView
	for _, id := range p.ids[start:end] {
		page = append(page, access.TenantView{Tenant: domain.Tenant{ID: id}})
	}
	next := ""
	if end < len(p.ids) {
		next = p.ids[end-1]
	}
	return page, next, nil
}

func TestWorkerTenantIDs(t *testing.T) {
	t.Parallel()
	p := &pagedTenants{ids: []string{"acme", "globex", domain.SystemTenant, "initech", "umbrella"}}
	got, err := tenantIDs(p)(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "acme,globex,initech,umbrella" || p.calls != 3 {
		t.Fatalf("got %v in %d calls; want every page, without the system tenant", got, p.calls)
	}
	boom := errors.New("the table is unreachable")
	if _, err := tenantIDs(&pagedTenants{err: boom})(t.Context()); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
}
