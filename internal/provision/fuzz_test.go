package provision

import (
	"regexp"
	"strings"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
)

var dnsName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?-[0-9]+(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$`)

// FuzzHostname: any cluster name and DNS suffix give a host name DNS
// accepts: labels of lower-case letters, digits and inner hyphens, the
// first at most 40 characters before the node number.
func FuzzHostname(f *testing.F) {
	for _, s := range []string{"ZK Ensemble", "", "---", "Ünïcode & co", strings.Repeat("x", 100), "a-", "-a"} {
		f.Add(s, "example.test")
	}
	f.Fuzz(func(t *testing.T, name, suffix string) {
		h := Hostname(&ClusterSpec{ClusterID: "c1", Name: name, DNSSuffix: suffix}, &domain.Node{Num: 1000})
		if !dnsName.MatchString(h) {
			t.Fatalf("%q gave %q", name, h)
		}
	})
}

// FuzzToken: every token is 40 characters EC2 accepts in a ClientToken.
func FuzzToken(f *testing.F) {
	f.Add("acme", "c1", "c1-job-1", "create:c1-1000")
	f.Fuzz(func(t *testing.T, tenant, cluster, job, task string) {
		tok := Token(tenant, domain.Task{ClusterID: cluster, JobID: job, ID: task})
		if len(tok) != 40 || strings.Trim(tok, "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Fatalf("token %q", tok)
		}
	})
}
