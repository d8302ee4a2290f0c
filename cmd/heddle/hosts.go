package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/inventory"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/sshexec"
)

func newHostsCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "hosts",
		Aliases: []string{"host"},
		Short:   "Fill and tend a static provider's pool of hosts (admin)",
		Long: `A static provider's nodes take hosts from its pool: machines that already
exist, registered with an address, a login and its private key (sealed at
rest, never shown again). A node takes a free host; deleting the node runs
the provider's wipe script and returns the host, or leaves it DIRTY when the
wipe fails, until a later delete succeeds or an admin readmits it.`,
	}
	cmd.AddCommand(newHostsAddCommand(a), newHostsImportCommand(a), newHostsListCommand(a),
		newHostsActionCommand(a, "drain", "Give the host to no new node (a node that holds it keeps it)"),
		newHostsActionCommand(a, "readmit", "Return a dirty host (after cleaning it) or a drained one to the pool"),
		newHostsRemoveCommand(a))
	return cmd
}

func hostsPath(provider string, rest ...string) string {
	p := "/v1/providers/" + pathEscape(provider) + "/hosts"
	for _, r := range rest {
		p += "/" + pathEscape(r)
	}
	return p
}

// hostFlags are what add and import share.
type hostFlags struct {
	user, keyFile, knownHosts string
	port                      int
	check                     bool
}

func (f *hostFlags) register(cmd *cobra.Command, defaults bool) {
	fl := cmd.Flags()
	what := ""
	if defaults {
		what = " for hosts the inventory gives none"
	}
	fl.StringVar(&f.user, "user", "", "the login user"+what)
	fl.StringVar(&f.keyFile, "key-file", "", "the login's private key file"+what)
	fl.IntVar(&f.port, "port", 0, "the SSH port"+what+" (default 22)")
	fl.StringVar(&f.knownHosts, "known-hosts", "", "a known_hosts file to take the hosts' keys from (hashed names too); without one a host's key is pinned on first contact")
	fl.BoolVar(&f.check, "check", false, "log in to every host first; an unreachable host, a refused key or a changed host key refuses the whole registration")
}

// keys reads private key files once each.
type keys map[string]string

func (k keys) read(path string) (string, error) {
	if pem, ok := k[path]; ok {
		return pem, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the private key: %w", err)
	}
	if _, err := sshexec.ParsePrivateKey(data); err != nil {
		return "", fmt.Errorf("%s is not an unencrypted OpenSSH or PEM private key", path)
	}
	k[path] = string(data)
	return k[path], nil
}

// knownHostKey looks up address:port in a known_hosts file: the key it
// lists, or "" when it lists none.
func knownHostKey(cb ssh.HostKeyCallback, address string, port int) string {
	if cb == nil {
		return ""
	}
	hostport := net.JoinHostPort(address, strconv.Itoa(port))
	// Asking about a key the file cannot hold makes the callback list the
	// keys it does hold for the host.
	probe, _ := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	err := cb(hostport, &net.TCPAddr{IP: net.ParseIP(address), Port: port}, probe)
	var ke *knownhosts.KeyError
	if errors.As(err, &ke) && len(ke.Want) > 0 {
		return sshexec.FormatPublicKey(ke.Want[0].Key)
	}
	return ""
}

func loadKnownHosts(path string) (ssh.HostKeyCallback, error) {
	if path == "" {
		return nil, nil
	}
	cb, err := knownhosts.New(path)
	if err != nil {
		return nil, fmt.Errorf("reading --known-hosts: %w", err)
	}
	return cb, nil
}

func newHostsAddCommand(a *app) *cobra.Command {
	var (
		f                hostFlags
		address, hostKey string
	)
	cmd := &cobra.Command{
		Use:   "add PROVIDER ID --address ADDR --user USER --key-file FILE",
		Short: "Register one host (or change a free one)",
		Example: `  heddle hosts add rack1 db-7 --address 10.0.0.7 --user admin --key-file ~/.ssh/id_ed25519
  heddle hosts add rack1 db-8 --address 10.0.0.8 --user admin --key-file key.pem --host-key "ssh-ed25519 AAAA..." --check`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			pem, err := keys{}.read(f.keyFile)
			if err != nil {
				return err
			}
			port := f.port
			if port == 0 {
				port = 22
			}
			if hostKey == "" {
				cb, err := loadKnownHosts(f.knownHosts)
				if err != nil {
					return err
				}
				hostKey = knownHostKey(cb, address, port)
			}
			body := api.RegisterHosts{Check: f.check, Hosts: []api.HostSpec{{ID: args[1], Address: address, Port: port, User: f.user, PrivateKey: pem, HostKey: hostKey}}}
			return call(a, cmd, http.MethodPost, hostsPath(args[0]), body, printRegistered)
		},
	}
	f.register(cmd, false)
	cmd.Flags().StringVar(&address, "address", "", "the host's name or IP address")
	cmd.Flags().StringVar(&hostKey, "host-key", "", "the host's key (authorized_keys form or a known_hosts line)")
	for _, name := range []string{"address", "user", "key-file"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func newHostsImportCommand(a *app) *cobra.Command {
	var f hostFlags
	cmd := &cobra.Command{
		Use:   "import PROVIDER FILE",
		Short: "Register the hosts of an Ansible inventory (INI or YAML) or a plain host list, all or nothing",
		Long: `Reads ansible_host, ansible_port, ansible_user and ansible_ssh_private_key_file
(with group vars and children) from an Ansible inventory, or [user@]host[:port]
lines; the inventory's host names become the hosts' ids. Everything is read and
checked before anything is sent, and the hosts are registered in one
transaction per 100; a second import of the same inventory changes nothing.
A FILE of - reads the standard input.`,
		Example: `  heddle hosts import rack1 inventory.ini --key-file ~/.ssh/ansible --check
  heddle hosts import rack1 hosts.yaml --known-hosts ~/.ssh/known_hosts`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			specs, err := readInventory(cmd, args[1], f)
			if err != nil {
				return err
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			var all api.RegisteredHosts
			for start := 0; start < len(specs); start += static.MaxRegister {
				batch := specs[start:min(start+static.MaxRegister, len(specs))]
				raw, err := c.JSON(cmd.Context(), http.MethodPost, hostsPath(args[0]), nil, api.RegisterHosts{Hosts: batch, Check: f.check})
				if err != nil {
					if start > 0 {
						fmt.Fprintf(cmd.ErrOrStderr(), "heddle: the first %d hosts were registered; fix the error and import again (registered hosts stay as they are)\n", start)
					}
					return err
				}
				got, err := decodeBody[api.RegisteredHosts](raw)
				if err != nil {
					return err
				}
				all.Items = append(all.Items, got.Items...)
			}
			return printAnswer(a, cmd.OutOrStdout(), mustJSON(all), printRegistered)
		},
	}
	f.register(cmd, true)
	return cmd
}

// readInventory reads FILE into host specs, refusing the whole of it on the
// first fault (with its line).
func readInventory(cmd *cobra.Command, file string, f hostFlags) ([]api.HostSpec, error) {
	var (
		data []byte
		err  error
	)
	name := file
	if file == "-" {
		data, err = io.ReadAll(cmd.InOrStdin())
		name = "stdin"
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the inventory: %w", err)
	}
	hosts, err := inventory.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; nothing was imported", name, err)
	}
	cb, err := loadKnownHosts(f.knownHosts)
	if err != nil {
		return nil, err
	}
	base := "."
	if file != "-" {
		base = filepath.Dir(file)
	}
	ks := keys{}
	specs := make([]api.HostSpec, 0, len(hosts))
	for _, h := range hosts {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s: line %d: host %s: %s; nothing was imported", name, h.Line, h.Name, fmt.Sprintf(format, args...))
		}
		if !domain.ValidName(h.Name) {
			return nil, fail("%q cannot be a host id (letters, digits, '.', '_' and '-', up to 63)", h.Name)
		}
		spec := api.HostSpec{ID: h.Name, Address: h.Address, Port: h.Port, User: h.User}
		if spec.Port == 0 {
			spec.Port = f.port
		}
		if spec.Port == 0 {
			spec.Port = 22
		}
		if spec.User == "" {
			spec.User = f.user
		}
		if spec.User == "" {
			return nil, fail("no login user: set ansible_user or pass --user")
		}
		keyFile := h.KeyFile
		if keyFile == "" {
			keyFile = f.keyFile
		} else if strings.HasPrefix(keyFile, "~/") {
			if home, err := os.UserHomeDir(); err == nil {
				keyFile = filepath.Join(home, keyFile[2:])
			}
		} else if !filepath.IsAbs(keyFile) {
			keyFile = filepath.Join(base, keyFile)
		}
		if keyFile == "" {
			return nil, fail("no private key: set ansible_ssh_private_key_file or pass --key-file")
		}
		if spec.PrivateKey, err = ks.read(keyFile); err != nil {
			return nil, fail("%v", err)
		}
		spec.HostKey = knownHostKey(cb, spec.Address, spec.Port)
		specs = append(specs, spec)
	}
	return specs, nil
}

func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

func printRegistered(w io.Writer, res *api.RegisteredHosts) {
	counts := map[string]int{}
	t := newTable(w)
	fmt.Fprintln(t, "ID\tADDRESS\tUSER\tRESULT\tSTATUS\tHOST KEY")
	for _, h := range res.Items {
		counts[h.Result]++
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\n", h.ID, net.JoinHostPort(h.Address, strconv.Itoa(h.Port)), h.User, h.Result, h.Status, hostKeyCell(h.Host))
	}
	_ = t.Flush()
	fmt.Fprintf(w, "%d created, %d updated, %d unchanged\n", counts[static.ResultCreated], counts[static.ResultUpdated], counts[static.ResultUnchanged])
	for _, h := range res.Items {
		if h.HostKey == "" {
			fmt.Fprintln(w, "hosts without a host key: the key each presents on first contact (its first node's create) will be pinned and checked from then on")
			break
		}
	}
}

func hostKeyCell(h static.Host) string {
	if h.HostKey == "" {
		return "(pinned on first contact)"
	}
	k, err := sshexec.ParsePublicKey(h.HostKey)
	if err != nil {
		return h.HostKey
	}
	return sshexec.Fingerprint(k) + " (" + h.HostKeySource + ")"
}

func newHostsListCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list PROVIDER",
		Aliases: []string{"ls"},
		Short:   "List a static provider's hosts and their state",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			hosts, err := fetchAll[static.Host](cmd.Context(), c, hostsPath(args[0]), nil)
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), mustJSON(api.Page[static.Host]{Items: hosts}), func(w io.Writer, p *api.Page[static.Host]) {
				printHosts(w, p.Items)
			})
		},
	}
	return cmd
}

func printHosts(w io.Writer, hosts []static.Host) {
	t := newTable(w)
	fmt.Fprintln(t, "ID\tADDRESS\tUSER\tSTATUS\tCLUSTER\tNODE\tHOST KEY\tREASON")
	for _, h := range hosts {
		status := h.Status
		if h.Drained {
			status += " (drained)"
		}
		var cluster, node string
		if h.Claim != nil {
			cluster, node = h.Claim.ClusterID, h.Claim.NodeID
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.ID, net.JoinHostPort(h.Address, strconv.Itoa(h.Port)), h.User, status,
			dash(cluster), dash(node), hostKeyCell(h), dash(oneLine(h.Reason, 60)))
	}
	_ = t.Flush()
}

func newHostsActionCommand(a *app, action, short string) *cobra.Command {
	return &cobra.Command{
		Use:   action + " PROVIDER ID",
		Short: short,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(a, cmd, http.MethodPost, hostsPath(args[0], args[1], action), nil, func(w io.Writer, h *static.Host) {
				printHosts(w, []static.Host{*h})
			})
		},
	}
}

func newHostsRemoveCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "remove PROVIDER ID",
		Aliases: []string{"rm"},
		Short:   "Take a free host out of the pool (a host a node holds is refused, naming its cluster)",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if _, err := c.Do(cmd.Context(), http.MethodDelete, hostsPath(args[0], args[1]), nil, nil, ""); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed host %s from %s\n", args[1], args[0])
			return nil
		},
	}
}
