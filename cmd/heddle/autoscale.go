package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/cluster"
)

func newClustersAutoscaleCommand(a *app) *cobra.Command {
	var set string
	cmd := &cobra.Command{
		Use:   "autoscale ID",
		Short: "Show a cluster's autoscale policy and its last decisions, or override the policy",
		Long: `Show the cluster's autoscale policy (its template's administration.autoscale,
or the cluster's override), the range it keeps the cluster in, the metrics
pushed for it, the latest evaluation and the last decisions with why. With
--set the policy is overridden within the template's: min and max may
narrow its range, never widen it.`,
		Example: `  heddle clusters autoscale web
  heddle clusters autoscale web --set '{"min":1,"max":2,"target":{"metric":"queue_depth","value":10}}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			method, body := http.MethodGet, []byte(nil)
			if set != "" {
				method = http.MethodPut
				if body, err = policyValue(set); err != nil {
					return err
				}
			}
			raw, err := c.Do(cmd.Context(), method, clusterPath(args[0], "autoscale"), nil, body, "application/json")
			if err != nil {
				return err
			}
			if a.jsonOut() {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			v, err := decodeBody[cluster.AutoscaleView](raw)
			if err != nil {
				return err
			}
			printAutoscale(cmd.OutOrStdout(), v)
			return nil
		},
	}
	cmd.Flags().StringVar(&set, "set", "", "override the policy: a JSON object (or @FILE holding one)")
	return cmd
}

// policyValue reads --set: inline JSON, or @FILE.
func policyValue(v string) ([]byte, error) {
	data := []byte(v)
	if strings.HasPrefix(v, "@") {
		var err error
		if data, err = os.ReadFile(v[1:]); err != nil {
			return nil, err
		}
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("--set must be a JSON object (or @FILE holding one): %w", err)
	}
	return data, nil
}

func newClustersMetricsCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "metrics ID NAME=VALUE...",
		Short: "Push metric values for a cluster's autoscale policy",
		Long: `Push the latest value of one or more metrics for the cluster's autoscale
policy, as an outside monitor would (POST /v1/clusters/{cluster}/metrics). A
value counts for 10 minutes; the janitor's next evaluation reads it.`,
		Example: `  heddle clusters metrics web queue_depth=42`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req cluster.MetricsRequest
			for _, kv := range args[1:] {
				k, v, ok := strings.Cut(kv, "=")
				f, err := strconv.ParseFloat(v, 64)
				if !ok || err != nil {
					return fmt.Errorf("%q is not NAME=NUMBER", kv)
				}
				req.Metrics = append(req.Metrics, cluster.MetricValue{Name: k, Value: f})
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			body, err := json.Marshal(req)
			if err != nil {
				return err
			}
			raw, err := c.Do(cmd.Context(), http.MethodPost, clusterPath(args[0], "metrics"), nil, body, "application/json")
			if err != nil {
				return err
			}
			if a.jsonOut() {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			v, err := decodeBody[cluster.AutoscaleView](raw)
			if err != nil {
				return err
			}
			printAutoscale(cmd.OutOrStdout(), v)
			return nil
		},
	}
	return cmd
}

func printAutoscale(w io.Writer, v cluster.AutoscaleView) {
	if v.Policy == nil {
		fmt.Fprintln(w, "policy     none: the cluster's template sets no administration.autoscale")
		return
	}
	p := v.Policy
	fmt.Fprintf(w, "policy     %s: min %d, max %d; keeps the cluster in [%d, %d]; size now %d\n", v.Source, p.Min, p.Max, v.Min, v.Max, v.Size)
	for _, s := range p.Schedules {
		fmt.Fprintf(w, "schedule   %q in %s: size %d\n", s.Cron, orUTC(s.Timezone), s.Size)
	}
	if t := p.Target; t != nil {
		fmt.Fprintf(w, "target     %s = %g (hysteresis %g%%, cooldown %s, max step %d)\n", t.Metric, t.Value, t.Hysteresis*100, t.Cooldown, t.MaxStep)
	}
	for name, m := range v.Metrics {
		fmt.Fprintf(w, "metric     %s = %g (pushed %s)\n", name, m.Value, humanTime(m.At))
	}
	if v.Last != nil {
		fmt.Fprintf(w, "last       %s: %d -> %d: %s\n", humanTime(v.Last.At), v.Last.From, v.Last.To, v.Last.Reason)
	}
	fmt.Fprintf(w, "next       %s\n", humanTime(v.NextEvaluation))
	if len(v.Decisions) == 0 {
		fmt.Fprintln(w, "decisions  none yet")
		return
	}
	fmt.Fprintln(w, "decisions")
	for i := len(v.Decisions) - 1; i >= 0; i-- {
		d := v.Decisions[i]
		outcome := "job " + d.Job
		if d.Job == "" {
			outcome = "refused: " + firstLine(d.Refused)
		}
		fmt.Fprintf(w, "  %s  %d -> %d  %s  (%s)\n", humanTime(d.At), d.From, d.To, outcome, d.Reason)
	}
}

func orUTC(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}
