package inventory

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestINI(t *testing.T) {
	t.Parallel()
	doc := `# the shop's machines
bastion ansible_host=203.0.113.9 ansible_user=ops

[web]
web[01:03] ansible_port=2222
db1 ansible_host="10.0.0.7" ansible_ssh_private_key_file='/keys/db key'  # trailing comment

[web:vars]
ansible_user=deploy
ansible_ssh_private_key_file=/keys/web

[prod:children]
web

[prod:vars]
ansible_port=22
ansible_user=nobody

[all:vars]
ansible_port=2200
`
	hosts, err := Parse([]byte(doc))
	require.NoError(t, err)
	require.Equal(t, []Host{
		{Name: "bastion", Address: "203.0.113.9", Port: 2200, User: "ops", Line: 2},
		{Name: "db1", Address: "10.0.0.7", Port: 22, User: "deploy", KeyFile: "/keys/db key", Line: 6},
		{Name: "web01", Address: "web01", Port: 2222, User: "deploy", KeyFile: "/keys/web", Line: 5},
		{Name: "web02", Address: "web02", Port: 2222, User: "deploy", KeyFile: "/keys/web", Line: 5},
		{Name: "web03", Address: "web03", Port: 2222, User: "deploy", KeyFile: "/keys/web", Line: 5},
	}, hosts)
}

func TestPlainList(t *testing.T) {
	t.Parallel()
	hosts, err := Parse([]byte("10.0.0.1\nadmin@10.0.0.2:2222\n\n  host-3.example  \n"))
	require.NoError(t, err)
	require.Equal(t, []Host{
		{Name: "10.0.0.1", Address: "10.0.0.1", Line: 1},
		{Name: "10.0.0.2", Address: "10.0.0.2", Port: 2222, User: "admin", Line: 2},
		{Name: "host-3.example", Address: "host-3.example", Line: 4},
	}, hosts)
}

func TestYAML(t *testing.T) {
	t.Parallel()
	doc := `all:
  vars:
    ansible_user: admin
  hosts:
    lb1:
      ansible_host: 10.0.1.1
  children:
    web:
      vars:
        ansible_ssh_private_key_file: /keys/web
        unrelated: [1, 2]
      hosts:
        web[1:2]:
          ansible_port: 2222
        web3:
`
	hosts, err := Parse([]byte(doc))
	require.NoError(t, err)
	require.Equal(t, []Host{
		{Name: "lb1", Address: "10.0.1.1", User: "admin", Line: 5},
		{Name: "web1", Address: "web1", Port: 2222, User: "admin", KeyFile: "/keys/web", Line: 13},
		{Name: "web2", Address: "web2", Port: 2222, User: "admin", KeyFile: "/keys/web", Line: 13},
		{Name: "web3", Address: "web3", User: "admin", KeyFile: "/keys/web", Line: 15},
	}, hosts)
}

func TestMalformedNamesTheLine(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		doc  string
		line int
		msg  string
	}{
		"unclosed section": {"a\n[web\nb\n", 2, "no closing ]"},
		"bad section kind": {"[web:stuff]\n", 1, "is not [group]"},
		"bad host var":     {"[web]\nweb1 port\n", 2, "is not name=value"},
		"bad vars line":    {"[web:vars]\nansible_user\n", 2, "is not name=value"},
		"bad port":         {"[web]\nweb1\nweb2 ansible_port=http\n", 3, "is not a port"},
		"unclosed quote":   {"web1 ansible_user='x\n", 1, "unclosed"},
		"bad range":        {"web[a:9]\n", 1, "not numeric"},
		"two ranges":       {"w[1:2]x[1:2]\n", 1, "more than one range"},
		"unknown child":    {"[prod:children]\nweb\n[x]\nh\n", 1, "not defined"},
		"no hosts":         {"# nothing\n", 1, "names no host"},
		"bad host name":    {"we$b\n", 1, "not a host name"},
		"yaml syntax":      {"all:\n  hosts:\n    a: [\n", 3, "did not find"},
		"yaml not mapping": {"all:\n  hosts: [a, b]\n", 2, "not a mapping"},
		"yaml unknown key": {"all:\n  host:\n    a:\n", 2, `has "host"`},
		"yaml bad port":    {"all:\n  hosts:\n    a:\n      ansible_port: 99999\n", 3, "is not a port"},
		"yaml list var":    {"all:\n  hosts:\n    a:\n      ansible_host: [x]\n", 4, "not a single value"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.doc))
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.line, e.Line, "%v", err)
			require.Contains(t, err.Error(), tc.msg)
			require.True(t, strings.HasPrefix(err.Error(), "line "))
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"[web]\nweb[01:03] ansible_port=2222\n[web:vars]\nansible_user=x\n[prod:children]\nweb\n",
		"admin@10.0.0.2:2222\nhost\n",
		"all:\n  hosts:\n    a:\n      ansible_host: 1.2.3.4\n  children:\n    b:\n      hosts: {c: }\n",
		"web[0:99999999]\n", "x ansible_user=\"a b\" # c\n", "---\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		hosts, err := Parse(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Line < 1 {
				t.Fatalf("an error without a line: %v", err)
			}
			return
		}
		if len(hosts) == 0 || len(hosts) > MaxHosts {
			t.Fatalf("%d hosts without an error", len(hosts))
		}
		seen := map[string]bool{}
		for _, h := range hosts {
			if h.Name == "" || h.Address == "" || seen[h.Name] || h.Port < 0 || h.Port > 65535 {
				t.Fatalf("bad host %+v", h)
			}
			seen[h.Name] = true
		}
	})
}
