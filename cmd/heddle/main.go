// Command heddle is heddle's CLI and its all-in-one local server.
//
//	heddle server       run the API (and, as they land, workers and janitor) locally
//	heddle worker       run the tenants' long tasks from SQS (the Fargate worker)
//	heddle keygen       print a fresh API key, e.g. for HEDDLE_BOOTSTRAP_KEY
//	heddle version      print the build: version, VCS revision and time, modified or not
//	heddle config       show or set the client's endpoint and key
//	heddle apply        import a catalog document; converge the clusters it declares
//	heddle diff         show what apply would do to the declared clusters
//	heddle tenants      create, list, show, update and delete tenants (superadmin)
//	heddle users        add, list and remove your tenant's users, set their roles (admin)
//	heddle keys         list, create and revoke a user's API keys
//	heddle catalog      read one catalog entity and its versions, or delete it
//	heddle clusters     create, inspect and operate clusters
//	heddle jobs         follow and control a cluster's jobs
//	heddle hosts        fill and tend a static provider's pool of hosts
//	heddle backup       save the local server's store and master key while it runs
//	heddle restore      bring a backup back into a data directory
//	heddle completion   shell completion scripts
//
// The client commands find the API's endpoint and key in the --endpoint and
// --key flags, then HEDDLE_ENDPOINT and HEDDLE_KEY, then the config file
// ($HEDDLE_CONFIG or ~/.config/heddle/config.yaml). They exit 1 when the API
// answers with an error, or when a job they watch ends FAILED or ABORTED.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/heddle-io/heddle/internal/buildinfo"
)

func main() {
	// Ctrl-C cancels the command's context: a wait for a rate limit, a
	// watch or a request in flight ends at once (heddle server shuts down
	// gracefully on it, as on SIGTERM).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, newRootCommand(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes root with args and returns the process's exit code, having
// printed any error to stderr.
func run(ctx context.Context, root *cobra.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return reportError(stderr, root.ExecuteContext(ctx))
}

// exitError ends the process with code; what it means was printed already.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func reportError(stderr io.Writer, err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ae *APIError
	if errors.As(err, &ae) {
		if ae.Status == http.StatusUnauthorized {
			writeUnauthorized(stderr, ae)
			return 1
		}
		ae.Write(stderr)
		return 1
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "heddle: interrupted")
		return 130
	}
	fmt.Fprintln(stderr, "heddle:", err)
	return 1
}

// writeUnauthorized prints a 401 with how to give the CLI a key or sign
// in. The API's generic sentence names the HTTP header, which is for
// programs; a token's own reason (expired, another audience) is kept.
func writeUnauthorized(w io.Writer, ae *APIError) {
	if strings.Contains(ae.Message, "Authorization: Bearer") {
		fmt.Fprintln(w, "heddle: the API did not accept the key (401): it is missing, mistyped or revoked")
	} else {
		fmt.Fprintf(w, "heddle: the API did not accept the credentials (401): %s\n", ae.Message)
	}
	fmt.Fprintln(w, "  give an API key with --key or HEDDLE_KEY, or keep one with `heddle config set key hdl_...`,")
	fmt.Fprintln(w, "  or sign in with `heddle login`; `heddle config show` says which endpoint and key the CLI uses")
}

// app holds the client commands' global flags.
type app struct {
	output string
	// httpClient replaces the default HTTP client (tests).
	httpClient *http.Client
	// clusterNames are the names of the clusters the arguments named, by
	// id (resolveRefs), shown beside the ids.
	clusterNames map[string]string
}

// jsonOut tells whether the output is for programs: the API's answers as
// they are, as JSON or (-o yaml) the same converted to YAML.
func (a *app) jsonOut() bool { return a.output == "json" || a.output == "yaml" }

// printRaw prints an API answer as -o asks: indented JSON, or YAML.
func (a *app) printRaw(w io.Writer, raw []byte) error {
	if a.output == "yaml" {
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return fmt.Errorf("converting the answer to YAML: %w", err)
		}
		_, err = w.Write(y)
		return err
	}
	return printJSON(w, raw)
}

func newRootCommand() *cobra.Command {
	a := &app{}
	root := &cobra.Command{
		Use:           "heddle",
		Short:         "heddle manages whole clusters as single entities",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			switch a.output {
			case "table", "json", "yaml":
			default:
				return fmt.Errorf("--output is table, json or yaml, not %q", a.output)
			}
			return a.resolveRefs(cmd, args)
		},
	}
	pf := root.PersistentFlags()
	pf.String("endpoint", "", "the API's base URL (HEDDLE_ENDPOINT, config file; default "+defaultEndpoint+")")
	pf.String("key", "", "the API key (HEDDLE_KEY, config file)")
	pf.StringVarP(&a.output, "output", "o", "table", "table, json or yaml (json prints the API's answers, yaml the same as YAML)")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	root.AddCommand(newServerCommand(), newWorkerCommand(), newKeygenCommand(), newVersionCommand(),
		newConfigCommand(a), newApplyCommand(a), newDiffCommand(a), newTenantsCommand(a), newClustersCommand(a), newJobsCommand(a),
		newScriptsCommand(a), newAuditCommand(a), newUsageCommand(a), newHostsCommand(a), newExportCommand(a),
		newBackupCommand(a), newRestoreCommand(), newLoginCommand(a), newLogoutCommand(a), newIssuersCommand(a),
		newWebhooksCommand(a), newMigrateCommand(a), newUsersCommand(a), newKeysCommand(a), newCatalogCommand(a))
	return root
}

// buildVersion names this build in one word (User-Agent, backup manifests).
func buildVersion() string { return buildinfo.Read().Short() }

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the build: module version, VCS revision and time, and whether the tree was modified",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), buildinfo.Read()) },
	}
}
