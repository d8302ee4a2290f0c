package main

import (
	"bytes"
	"crypto/rand"
	"encoding/xml"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/ec2"
	"github.com/heddle-io/heddle/internal/secrets"
)

// miniEC2 answers the four calls of a sweep in EC2's query protocol (form
// POSTs, XML answers shaped like EC2's, which the SDK's deserializers
// read) from a fixed set of instances and key pairs, and records what it
// was asked to remove.
type miniEC2 struct {
	mu         sync.Mutex
	instances  []miniResource
	keyPairs   []miniResource
	actions    []string
	auth       []string
	terminated []string
	deleted    []string
}

type miniResource struct {
	id, tenant, cluster string
	at                  time.Time
}

func (m *miniEC2) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		http.Error(w, "expected a form POST", http.StatusBadRequest)
		return
	}
	f := r.PostForm
	m.mu.Lock()
	defer m.mu.Unlock()
	m.actions = append(m.actions, f.Get("Action"))
	m.auth = append(m.auth, r.Header.Get("Authorization"))
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<%sResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>7f1c2a3b-4d5e-46f7-8a9b-000000000001</requestId>`, f.Get("Action"))
	switch f.Get("Action") {
	case "DescribeInstances":
		b.WriteString("<reservationSet>")
		for _, i := range m.instances {
			if containsForm(f, "Filter.", "tag-key", ec2.TagCluster) {
				fmt.Fprintf(&b, `<item><reservationId>r-%s</reservationId><ownerId>111122223333</ownerId><instancesSet><item>`+
					`<instanceId>%s</instanceId><instanceState><code>16</code><name>running</name></instanceState>`+
					`<instanceType>t3.micro</instanceType><launchTime>%s</launchTime>%s</item></instancesSet></item>`,
					i.id, i.id, i.at.UTC().Format("2006-01-02T15:04:05.000Z"), tagSet(i))
			}
		}
		b.WriteString("</reservationSet>")
	case "DescribeKeyPairs":
		b.WriteString("<keySet>")
		for _, k := range m.keyPairs {
			fmt.Fprintf(&b, `<item><keyPairId>key-0%s</keyPairId><keyName>%s</keyName><keyType>ed25519</keyType>%s<createTime>%s</createTime></item>`,
				k.id, esc(k.id), tagSet(k), k.at.UTC().Format("2006-01-02T15:04:05.000Z"))
		}
		b.WriteString("</keySet>")
	case "TerminateInstances":
		b.WriteString("<instancesSet>")
		for i := 1; f.Has("InstanceId." + strconv.Itoa(i)); i++ {
			id := f.Get("InstanceId." + strconv.Itoa(i))
			m.terminated = append(m.terminated, id)
			fmt.Fprintf(&b, `<item><instanceId>%s</instanceId><currentState><code>32</code><name>shutting-down</name></currentState>`+
				`<previousState><code>16</code><name>running</name></previousState></item>`, id)
		}
		b.WriteString("</instancesSet>")
	case "DeleteKeyPair":
		m.deleted = append(m.deleted, f.Get("KeyName"))
		b.WriteString("<return>true</return>")
	default:
		http.Error(w, "unexpected action "+f.Get("Action"), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(&b, "</%sResponse>", f.Get("Action"))
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	_, _ = w.Write(b.Bytes())
}

// containsForm reports whether some Filter.N names name and lists value.
func containsForm(f url.Values, prefix, name, value string) bool {
	for n := 1; f.Has(prefix + strconv.Itoa(n) + ".Name"); n++ {
		p := prefix + strconv.Itoa(n)
		if f.Get(p+".Name") != name {
			continue
		}
		for v := 1; f.Has(p + ".Value." + strconv.Itoa(v)); v++ {
			if f.Get(p+".Value."+strconv.Itoa(v)) == value {
				return true
			}
		}
	}
	return false
}

func tagSet(r miniResource) string {
	return fmt.Sprintf(`<tagSet><item><key>%s</key><value>%s</value></item><item><key>%s</key><value>%s</value></item></tagSet>`,
		ec2.TagTenant, esc(r.tenant), ec2.TagCluster, esc(r.cluster))
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// TestSweepEndToEnd drives the real path: providers stored as the catalog
// stores them (the secret key sealed, bound to tenant, provider and
// field), opened through the registry, and ec2.EC2.Sweep against an EC2
// endpoint served by httptest. Only the orphans (of a cluster whose record
// is gone and of a TERMINATED one) and the gone cluster's key pair are
// removed; a live cluster's, a too young one's and one whose cluster lookup
// fails are spared; the account is swept once though two providers name it.
func TestSweepEndToEnd(t *testing.T) {
	t.Parallel()
	old, young := time.Now().Add(-2*time.Hour), time.Now().Add(-time.Minute)
	m := &miniEC2{
		instances: []miniResource{
			{"i-0000000000000a001", "acme", "live", old},
			{"i-0000000000000a002", "acme", "gone", old},
			{"i-0000000000000a003", "acme", "gone-young", young},
			{"i-0000000000000a004", "acme", "flaky", old},
			{"i-0000000000000a005", "acme", "done", old},
		},
		keyPairs: []miniResource{
			{ec2.KeyPairName("acme", "live"), "acme", "live", old},
			{ec2.KeyPairName("acme", "gone"), "acme", "gone", old},
		},
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)

	registry := provider.NewRegistry()
	require.NoError(t, registry.Register(ec2.Type(), ec2.New(ec2.Config{HTTPClient: srv.Client()})))
	master := make([]byte, 32)
	_, _ = rand.Read(master)
	lk, err := secrets.NewLocalKey(master)
	require.NoError(t, err)
	kr := secrets.NewKeyring(lk)

	stored := func(name string) *domain.Provider {
		p := &domain.Provider{Meta: domain.Meta{Name: name}, ProviderType: ec2.TypeName, Fields: map[string]string{
			ec2.FieldRegion: "eu-west-1", ec2.FieldAccessKeyID: "AKIDEXAMPLE",
			ec2.FieldSecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ec2.FieldEndpoint: srv.URL,
		}}
		require.Empty(t, registry.Validate(p))
		require.NoError(t, registry.SealFields(t.Context(), kr, "acme", p))
		require.True(t, secrets.IsSealed(p.Fields[ec2.FieldSecretAccessKey]))
		return p
	}
	impl, _ := registry.Provider(ec2.TypeName)
	s := &ec2Sweep{
		mode:      SweepOn,
		tenants:   &fakeTenants{ids: []string{"acme"}},
		providers: &fakeProviders{byTenant: map[string][]domain.Entity{"acme": {stored("aws-a"), stored("aws-b")}}},
		opener:    registryOpener{registry: registry, keyring: kr},
		clusters: fakeClusters{
			"acme/live":  {c: domain.Cluster{ID: "live", Status: domain.ClusterActive}},
			"acme/done":  {c: domain.Cluster{ID: "done", Status: domain.ClusterTerminated}},
			"acme/flaky": {err: fmt.Errorf("dynamodb: throttled")},
		},
		sweeper: impl.(Sweeper),
		log:     slog.New(slog.DiscardHandler),
	}

	// A dry run removes nothing.
	s.mode = SweepDryRun
	rep := s.run(t.Context())
	require.Equal(t, 2, rep.Terminated)
	require.Empty(t, m.terminated)
	require.Empty(t, m.deleted)

	s.mode = SweepOn
	rep = s.run(t.Context())
	require.Equal(t, SweepReport{Mode: SweepOn, Providers: 2, Swept: 1, Examined: 5, Terminated: 2, KeyPairsDeleted: 1, Doubts: 1}, rep)
	require.ElementsMatch(t, []string{"i-0000000000000a002", "i-0000000000000a005"}, m.terminated, "only the orphans")
	require.Equal(t, []string{ec2.KeyPairName("acme", "gone")}, m.deleted)

	m.mu.Lock()
	defer m.mu.Unlock()
	require.Equal(t, []string{"DescribeInstances", "DescribeKeyPairs", "DescribeInstances", "DescribeKeyPairs", "TerminateInstances", "DeleteKeyPair"},
		m.actions, "one sweep per pass for the one account")
	for _, a := range m.auth {
		require.True(t, strings.Contains(a, "Credential=AKIDEXAMPLE/"), "signed with the provider's keys: %s", a)
	}
}
