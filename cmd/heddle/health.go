package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/events"
)

// exitRed is the exit status of `clusters verify --wait` when the cluster
// is RED: a script can act on a failing cluster without parsing output.
const exitRed = 2

func newClustersVerifyCommand(a *app) *cobra.Command {
	var m mutationFlags
	cmd := &cobra.Command{
		Use:   "verify CLUSTER",
		Short: "Verify a cluster's health: run every service's check on every node",
		Long: `Run every service's check action on every node that carries the service, as
a job. A check that exits 0 is healthy, one that exits 75 or runs past its
timeout degraded, anything else failing. When the job ends the cluster is
GREEN (every check healthy), RED (any failing) or YELLOW (otherwise); heddle
clusters show prints it. With --wait the command watches the job, prints the
health and exits 2 when the cluster is RED.`,
		Example: `  heddle clusters verify c-1a2b3c --wait`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.submit(cmd, http.MethodPost, clusterPath(args[0], "verify"), struct{}{}, m, nil); err != nil || !m.wait {
				return err
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			raw, err := c.Do(cmd.Context(), http.MethodGet, clusterPath(args[0]), nil, nil, "")
			if err != nil {
				return err
			}
			cl, err := decodeBody[domain.Cluster](raw)
			if err != nil {
				return err
			}
			if a.jsonOut() {
				if err := a.printRaw(cmd.OutOrStdout(), mustMarshal(cl.Health)); err != nil {
					return err
				}
			} else {
				printHealth(cmd.OutOrStdout(), cl.Health)
			}
			if cl.Health != nil && cl.Health.Status == domain.HealthRed {
				return &exitError{code: exitRed}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&m.wait, "wait", false, "watch the verification until it ends, then print the health")
	return cmd
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// healthWord is a cluster's health in one word: GREEN, YELLOW, RED, or "-"
// before its first verification.
func healthWord(h *domain.ClusterHealth) string {
	if h == nil {
		return "-"
	}
	return string(h.Status)
}

// printHealth renders the latest verification: the status, the counts and
// the checks that did not pass.
func printHealth(w io.Writer, h *domain.ClusterHealth) {
	if h == nil {
		fmt.Fprintln(w, "health   not verified yet: heddle clusters verify ID")
		return
	}
	fmt.Fprintf(w, "health   %s (%s, verified %s by job %s)\n", h.Status, checkCounts(h.Counts), humanTime(h.At), h.JobID)
	for _, p := range h.Problems {
		fmt.Fprintf(w, "  %s %s %s: %s\n", p.Node, p.Service, p.Status, dash(firstLine(p.Output)))
	}
}

func checkCounts(counts map[domain.CheckStatus]int) string {
	var parts []string
	for _, s := range []domain.CheckStatus{domain.CheckHealthy, domain.CheckDegraded, domain.CheckFailing, domain.CheckUnknown} {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "no checks"
	}
	return strings.Join(parts, ", ")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// followEvery is how often --follow asks for new events.
const followEvery = time.Second

func newClustersEventsCommand(a *app) *cobra.Command {
	var (
		since  string
		follow bool
		pf     pageFlags
	)
	cmd := &cobra.Command{
		Use:   "events CLUSTER",
		Short: "List a cluster's events, oldest first; --follow streams new ones",
		Long: `List a cluster's events, oldest first: every status change of the cluster
and of its jobs, and every verification result. --since ID starts after that
event. --follow prints the events there are, then every new one as it
happens, until interrupted; with -o json it prints one JSON object a line.`,
		Example: `  heddle clusters events c-1a2b3c
  heddle clusters events c-1a2b3c --follow`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := clusterPath(args[0], "events")
			q := url.Values{}
			if since != "" {
				q.Set("since", since)
			}
			if !follow {
				raw, err := pf.list(a, cmd, path, q)
				if err != nil {
					return err
				}
				return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, page *api.Page[events.Event]) {
					printEvents(w, page.Items, true)
					printMore(w, page.NextCursor)
				})
			}
			return a.followEvents(cmd, path, since)
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only events after this event id")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events until interrupted")
	pf.register(cmd, "events")
	cmd.MarkFlagsMutuallyExclusive("follow", "cursor")
	cmd.MarkFlagsMutuallyExclusive("follow", "all")
	return cmd
}

// followEvents prints every event after since, then polls for new ones
// until the command's context ends (Ctrl-C), which is no error. A server
// that does not answer for a moment is asked again.
func (a *app) followEvents(cmd *cobra.Command, path, since string) error {
	c, err := a.client(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	header := true
	for {
		q := url.Values{}
		if since != "" {
			q.Set("since", since)
		}
		raw, err := c.Do(ctx, http.MethodGet, path, q, nil, "")
		var ae *APIError
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && errors.As(err, &ae) && ae.Status < 500:
			return err
		case err != nil:
			fmt.Fprintf(stderr, "heddle: %v (trying again)\n", err)
		default:
			page, err := decodeBody[api.Page[events.Event]](raw)
			if err != nil {
				return err
			}
			if len(page.Items) > 0 {
				if a.jsonOut() {
					for _, ev := range page.Items {
						if _, err := fmt.Fprintf(out, "%s\n", mustMarshal(ev)); err != nil {
							return err
						}
					}
				} else {
					printEvents(out, page.Items, header)
					header = false
				}
				since = page.Items[len(page.Items)-1].ID
			}
			if page.NextCursor != "" {
				continue // more right away
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followEvery):
		}
	}
}

func printEvents(w io.Writer, list []events.Event, header bool) {
	if len(list) == 0 {
		if header {
			fmt.Fprintln(w, "no events")
		}
		return
	}
	tw := newTable(w)
	if header {
		fmt.Fprintln(tw, "WHEN\tTYPE\tJOB\tCHANGE\tMESSAGE\tID")
	}
	for _, ev := range list {
		change := ev.Status
		if ev.Previous != "" {
			change = ev.Previous + " -> " + ev.Status
		}
		if len(ev.Counts) > 0 {
			keys := make([]string, 0, len(ev.Counts))
			for k := range ev.Counts {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%d %s", ev.Counts[k], k))
			}
			change += " (" + strings.Join(parts, ", ") + ")"
		}
		job := ev.Job
		if ev.Operation != "" {
			job += " " + ev.Operation
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", humanTime(ev.At), ev.Type, dash(job), change, dash(firstLine(ev.Message)), ev.ID)
	}
	_ = tw.Flush()
}
