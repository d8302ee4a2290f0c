package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
)

// pollInterval is how often jobs watch asks for the job.
var pollInterval = 500 * time.Millisecond

// watchTransientErrors is how many failed polls in a row watch tolerates
// (the server restarting, a network blip) before it gives up.
const watchTransientErrors = 10

func newJobsCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "jobs",
		Aliases: []string{"job"},
		Short:   "Follow and control a cluster's jobs",
	}
	cmd.AddCommand(newJobsListCommand(a), newJobsShowCommand(a), newJobsTasksCommand(a), newJobsTaskCommand(a), newJobsWatchCommand(a))
	for _, what := range []struct{ name, short string }{
		{"abort", "Abort a running job (its rollback, if any, runs)"},
		{"pause", "Pause a job: running tasks finish, no new ones start"},
		{"resume", "Resume a paused job"},
		{"retry", "Retry a failed job's failed tasks"},
	} {
		cmd.AddCommand(newJobControlCommand(a, what.name, what.short))
	}
	// CLUSTER is an id or a name, JOB an id or latest.
	for _, sub := range cmd.Commands() {
		job := 1
		if sub.Name() == "list" {
			job = -1
		}
		clusterArgs(a, sub, 0, job)
	}
	return cmd
}

func jobPath(clusterID, jobID string) string {
	return clusterPath(clusterID, "jobs", pathEscape(jobID))
}

func newJobsListCommand(a *app) *cobra.Command {
	var pf pageFlags
	cmd := &cobra.Command{
		Use:     "list CLUSTER",
		Aliases: []string{"ls"},
		Short:   "List a cluster's jobs, newest first, a page at a time (--all for every page)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := pf.list(a, cmd, clusterPath(args[0], "jobs"), url.Values{})
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, jobs *api.Page[domain.Job]) {
				printJobs(w, jobs.Items, time.Now())
				printMore(w, jobs.NextCursor)
			})
		},
	}
	pf.register(cmd, "jobs")
	return cmd
}

func printJobs(w io.Writer, jobs []domain.Job, now time.Time) {
	if len(jobs) == 0 {
		fmt.Fprintln(w, "no jobs")
		return
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "JOB\tOPERATION\tSTATUS\tTASKS\tREQUESTED BY\tCREATED\tDURATION\n")
	for i := range jobs {
		j := &jobs[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", j.ID, j.Operation, j.Status, j.TaskDone, j.TaskTotal,
			dash(j.RequestedBy), humanTime(j.CreatedAt), jobDuration(j, now))
	}
	_ = tw.Flush()
}

// jobDuration is how long the job has taken, from its start (or, for a
// job that records none, its submission) to its end or now; a retried job's
// covers every attempt.
func jobDuration(j *domain.Job, now time.Time) string {
	start := j.StartedAt
	if start.IsZero() {
		start = j.CreatedAt
	}
	if start.IsZero() {
		return "-"
	}
	end := j.EndedAt
	if end.IsZero() {
		if j.Status.Terminal() {
			return "-" // ended, but when is not recorded
		}
		end = now
	}
	return humanDuration(max(end.Sub(start), 0))
}

// taskCounts is "8 tasks: 6 SUCCEEDED, 2 READY": every status's count, so
// the parts add up to the total.
func taskCounts(byStatus map[domain.TaskStatus]int) string {
	n := 0
	for _, c := range byStatus {
		n += c
	}
	what := "tasks"
	if n == 1 {
		what = "task"
	}
	return fmt.Sprintf("%d %s: %s", n, what, statusCounts(byStatus))
}

// lastAttempt is a task's latest attempt, or nil.
func lastAttempt(t *domain.Task) *domain.TaskAttempt {
	if len(t.Attempts) == 0 {
		return nil
	}
	return &t.Attempts[len(t.Attempts)-1]
}

// taskDuration is how long the task's latest attempt ran (so far).
func taskDuration(t *domain.Task, now time.Time) (time.Duration, bool) {
	at := lastAttempt(t)
	if at == nil || at.StartedAt.IsZero() {
		return 0, false
	}
	end := at.EndedAt
	if end.IsZero() {
		end = now
	}
	return end.Sub(at.StartedAt), true
}

func newJobsShowCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "show CLUSTER JOB",
		Short: "Show a job and its tasks",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			var ans answer
			v, err := c.GetJob(ans.keep(cmd.Context()), args[0], args[1])
			if err != nil {
				return err
			}
			return printValue(a, cmd.OutOrStdout(), &ans, v, func(w io.Writer, v *cluster.JobView) {
				printJob(w, v, a.clusterNames[v.ClusterID], time.Now())
			})
		},
	}
}

// printJob shows a job; clusterName, when known, stands beside its
// cluster's id.
func printJob(w io.Writer, v *cluster.JobView, clusterName string, now time.Time) {
	tw := newTable(w)
	fmt.Fprintf(tw, "job\t%s\n", v.ID)
	fmt.Fprintf(tw, "cluster\t%s\n", clusterLabel(v.ClusterID, clusterName))
	fmt.Fprintf(tw, "operation\t%s\n", v.Operation)
	status := string(v.Status)
	if v.StatusMessage != "" {
		status += ": " + v.StatusMessage
	}
	fmt.Fprintf(tw, "status\t%s\n", status)
	// The counts by status are of the tasks themselves and add up; the
	// job's done counter trails its workers.
	if len(v.TaskStatus) > 0 {
		fmt.Fprintf(tw, "tasks\t%s\n", taskCounts(v.TaskStatus))
	} else {
		fmt.Fprintf(tw, "tasks\t%d/%d done\n", v.TaskDone, v.TaskTotal)
	}
	if len(v.RollbackStatus) > 0 {
		fmt.Fprintf(tw, "rollback plan\t%s\n", statusCounts(v.RollbackStatus))
	}
	for _, st := range v.Stages {
		fmt.Fprintf(tw, "stage %d\t%d tasks: %s\n", st.Stage, st.Total, stageCounts(st))
	}
	fmt.Fprintf(tw, "requested by\t%s\n", dash(v.RequestedBy))
	fmt.Fprintf(tw, "created\t%s\n", humanTime(v.CreatedAt))
	fmt.Fprintf(tw, "started\t%s\n", humanTime(v.StartedAt))
	fmt.Fprintf(tw, "ended\t%s\n", humanTime(v.EndedAt))
	if v.Retries > 0 {
		fmt.Fprintf(tw, "retries\t%d\n", v.Retries)
	}
	_ = tw.Flush()
	if len(v.Tasks) == 0 {
		return
	}
	fmt.Fprintln(w)
	printTasks(w, v.Tasks, now)
	if v.TasksOmitted > 0 {
		fmt.Fprintf(w, "and %d more tasks: heddle jobs tasks %s %s --all (or --status, --node, --service, --action, --stage)\n", v.TasksOmitted, v.ClusterID, v.ID)
	}
}

// printTasks is a table of tasks, in the order given.
func printTasks(w io.Writer, tasks []domain.Task, now time.Time) {
	tw := newTable(w)
	fmt.Fprintf(tw, "TASK\tSTATUS\tATTEMPT\tDURATION\tLAST ERROR\n")
	for i := range tasks {
		t := &tasks[i]
		id := t.ID
		if t.Rollback {
			id += " (rollback)"
		}
		dur := "-"
		if d, ok := taskDuration(t, now); ok {
			dur = humanDuration(d)
		}
		lastErr := "-"
		if at := lastAttempt(t); at != nil && at.Error != "" {
			lastErr = oneLine(at.Error, 80)
		}
		attempt := "-"
		if !t.Join {
			attempt = fmt.Sprintf("%d/%d", t.Attempt, t.MaxAttempts)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, t.Status, attempt, dur, lastErr)
	}
	_ = tw.Flush()
}

func newJobsTasksCommand(a *app) *cobra.Command {
	var (
		pf                                   pageFlags
		status, node, service, action, stage string
	)
	cmd := &cobra.Command{
		Use:   "tasks CLUSTER JOB",
		Short: "List a job's tasks, failed and running first, a page at a time (--all for every page)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			for name, v := range map[string]string{"status": strings.ToUpper(status), "node": node, "service": service, "action": action, "stage": stage} {
				if v != "" {
					q.Set(name, v)
				}
			}
			raw, err := pf.list(a, cmd, jobPath(args[0], args[1])+"/tasks", q)
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, p *api.Page[domain.Task]) {
				printTasks(w, p.Items, time.Now())
				printMore(w, p.NextCursor)
			})
		},
	}
	pf.register(cmd, "tasks")
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only tasks in this status (BLOCKED, READY, RUNNING, SUCCEEDED, FAILED, CANCELED)")
	f.StringVar(&node, "node", "", "only tasks of this node")
	f.StringVar(&service, "service", "", "only tasks of this service")
	f.StringVar(&action, "action", "", "only tasks of this action (install, configure, start, ...)")
	f.StringVar(&stage, "stage", "", "only tasks of this stage of the stage view (from 1)")
	return cmd
}

func newJobsTaskCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "task CLUSTER JOB TASK",
		Short: "Show one task with its attempts and their output tails",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(a, cmd, http.MethodGet, jobPath(args[0], args[1])+"/tasks/"+pathEscape(args[2]), nil, func(w io.Writer, t *domain.Task) {
				printTaskDetail(w, t)
			})
		},
	}
}

// printTaskDetail prints a task and every attempt it keeps, with output.
func printTaskDetail(w io.Writer, t *domain.Task) {
	tw := newTable(w)
	fmt.Fprintf(tw, "task\t%s\n", t.ID)
	fmt.Fprintf(tw, "status\t%s\n", t.Status)
	fmt.Fprintf(tw, "node\t%s\n", dash(t.NodeID))
	fmt.Fprintf(tw, "service\t%s\n", dash(t.Service))
	fmt.Fprintf(tw, "action\t%s\n", t.Action)
	fmt.Fprintf(tw, "attempt\t%d/%d\n", t.Attempt, t.MaxAttempts)
	if len(t.DependsOn) > 0 {
		fmt.Fprintf(tw, "depends on\t%d tasks\n", len(t.DependsOn))
	}
	if t.Sends > 0 {
		// Why each message after the task's first was sent (a fault, a
		// hand-back, a retry); a continuation's polls moving to its own
		// message is its first.
		fmt.Fprintf(tw, "sent again\t%d (%s)\n", t.ExtraSends(), dash(strings.Join(t.SendReasons, ", ")))
	}
	_ = tw.Flush()
	for _, at := range t.Attempts {
		fmt.Fprintf(w, "\nattempt %d: %s, exit %d, started %s\n", at.Attempt, at.Status, at.ExitCode, humanTime(at.StartedAt))
		if at.Error != "" {
			fmt.Fprintf(w, "error: %s\n", at.Error)
		}
		for _, out := range []struct{ name, text string }{{"stdout", at.Stdout}, {"stderr", at.Stderr}} {
			if out.text != "" {
				fmt.Fprintf(w, "%s:\n", out.name)
				for _, l := range tail(out.text, 50) {
					fmt.Fprintf(w, "  %s\n", l)
				}
			}
		}
	}
}

func newJobsWatchCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "watch CLUSTER JOB",
		Short: "Follow a job until it ends; exits 1 if it FAILED or was ABORTED",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			return a.watch(cmd, c, args[0], args[1])
		},
	}
}

// watcher shows a job's progress: a progress bar on a terminal, otherwise
// one line per task status change.
type watcher struct {
	out  io.Writer
	bar  *progressbar.ProgressBar
	tty  bool
	seen map[string]domain.TaskStatus
}

func (w *watcher) update(v *cluster.JobView, now time.Time) {
	var lines []string
	for i := range v.Tasks {
		t := &v.Tasks[i]
		if t.Join {
			continue
		}
		prev, known := w.seen[t.ID]
		if known && prev == t.Status {
			continue
		}
		w.seen[t.ID] = t.Status
		if !known && (t.Status == domain.TaskBlocked || t.Status == domain.TaskReady) {
			continue // waiting is not news
		}
		line := fmt.Sprintf("  %-9s %s", t.Status, t.ID)
		if t.Status.Terminal() {
			if d, ok := taskDuration(t, now); ok {
				line += " (" + humanDuration(d) + ")"
			}
		}
		if t.Status == domain.TaskRunning && t.Attempt > 1 {
			line += fmt.Sprintf(" (attempt %d/%d)", t.Attempt, t.MaxAttempts)
		}
		lines = append(lines, line)
	}
	if !w.tty {
		for _, l := range lines {
			fmt.Fprintln(w.out, l)
		}
		return
	}
	desc := fmt.Sprintf("%s %s", v.Operation, v.Status)
	if w.bar == nil {
		w.bar = progressbar.NewOptions(max(v.TaskTotal, 1),
			progressbar.OptionSetWriter(w.out),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetRenderBlankState(true),
		)
	}
	for _, l := range lines {
		_, _ = progressbar.Bprintln(w.bar, l)
	}
	if v.TaskTotal > 0 && w.bar.GetMax() != v.TaskTotal {
		w.bar.ChangeMax(v.TaskTotal)
	}
	w.bar.Describe(desc)
	_ = w.bar.Set(v.TaskDone)
}

func (w *watcher) done() {
	if w.bar != nil {
		_ = w.bar.Exit()
		fmt.Fprintln(w.out)
	}
}

// watch polls the job until it ends and prints its progress, then its final
// status. A FAILED or ABORTED job is an *exitError (its status message and
// failed tasks are printed to stderr).
func (a *app) watch(cmd *cobra.Command, c *Client, clusterID, jobID string) error {
	ctx := cmd.Context()
	out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	w := &watcher{out: out, tty: isTerminal(out) && !a.jsonOut(), seen: map[string]domain.TaskStatus{}}
	if !a.jsonOut() && !w.tty {
		fmt.Fprintf(out, "watching job %s of cluster %s\n", jobID, clusterLabel(clusterID, a.clusterNames[clusterID]))
	}
	// The client backs off while nothing moves, up to four intervals.
	var ans answer
	v, err := c.WaitJob(ans.keep(ctx), clusterID, jobID, client.WaitOptions{
		Interval: pollInterval, MaxInterval: 4 * pollInterval, MaxFailures: watchTransientErrors,
		OnUpdate: func(v *client.JobView) {
			if !a.jsonOut() {
				w.update(v, time.Now())
			}
		},
		OnRetry: func(err error) { fmt.Fprintf(stderr, "heddle: %v (trying again)\n", err) },
	})
	if err != nil {
		w.done()
		return err
	}
	w.done()
	if err := printValue(a, out, &ans, v, func(out io.Writer, v *client.JobView) {
		fmt.Fprintln(out, jobOutcome(v, time.Now()))
	}); err != nil {
		return err
	}
	if v.Status == domain.JobSucceeded {
		return nil
	}
	reportFailure(stderr, v, func(id string) (*domain.Task, error) {
		return c.GetTask(ctx, clusterID, jobID, id)
	})
	return &exitError{code: 1}
}

// jobOutcome is the line that ends a watch: "job j1 SUCCEEDED in 12s:
// 8 tasks: 8 SUCCEEDED", or for a job that did not succeed what became of
// its tasks, so that "FAILED" is not read as every task failing.
func jobOutcome(v *client.JobView, now time.Time) string {
	s := fmt.Sprintf("job %s %s", v.ID, v.Status)
	if d := jobDuration(&v.Job, now); d != "-" {
		if v.Status == domain.JobSucceeded {
			s += " in " + d
		} else {
			s += " after " + d
		}
	}
	if len(v.TaskStatus) > 0 {
		s += ": " + taskCounts(v.TaskStatus)
	} else {
		s += fmt.Sprintf(": %d of %d tasks done", v.TaskDone, v.TaskTotal)
	}
	if len(v.RollbackStatus) > 0 {
		s += "; rollback " + taskCounts(v.RollbackStatus)
	}
	if v.Retries > 0 {
		s += fmt.Sprintf(" (retried %d times)", v.Retries)
	}
	return s
}

// reportedFailures bounds the failed tasks whose output reportFailure reads.
const reportedFailures = 10

// reportFailure prints why a job failed: its status message and each failed
// task's last error and stderr tail (the job view lists failed tasks first,
// without output; whole reads the task with it).
func reportFailure(w io.Writer, v *cluster.JobView, whole func(id string) (*domain.Task, error)) {
	fmt.Fprintf(w, "heddle: job %s %s", v.ID, v.Status)
	if v.StatusMessage != "" {
		fmt.Fprintf(w, ": %s", v.StatusMessage)
	}
	fmt.Fprintln(w)
	reported := 0
	for i := range v.Tasks {
		t := &v.Tasks[i]
		if t.Status != domain.TaskFailed {
			continue
		}
		if reported++; reported > reportedFailures {
			fmt.Fprintf(w, "  and more: heddle jobs tasks %s %s --status FAILED\n", v.ClusterID, v.ID)
			break
		}
		fmt.Fprintf(w, "  task %s failed (attempt %d/%d)\n", t.ID, t.Attempt, t.MaxAttempts)
		if full, err := whole(t.ID); err == nil {
			t = full
		}
		at := lastAttempt(t)
		if at == nil {
			continue
		}
		if at.Error != "" {
			fmt.Fprintf(w, "    error: %s\n", oneLine(at.Error, 200))
		}
		if at.Stderr != "" {
			fmt.Fprintln(w, "    stderr:")
			for _, l := range tail(at.Stderr, 10) {
				fmt.Fprintf(w, "      %s\n", l)
			}
		}
	}
	fmt.Fprintf(w, "  details: heddle jobs show %s %s\n", v.ClusterID, v.ID)
}

func newJobControlCommand(a *app, what, short string) *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   what + " CLUSTER JOB",
		Short: short,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			var ans answer
			j, err := c.ControlJob(ans.keep(cmd.Context()), args[0], args[1], what)
			if err != nil {
				return err
			}
			if err := printValue(a, cmd.OutOrStdout(), &ans, j, func(w io.Writer, j *domain.Job) {
				fmt.Fprintf(w, "job %s (%s): %s\n", j.ID, j.Operation, j.Status)
			}); err != nil {
				return err
			}
			if wait {
				return a.watch(cmd, c, args[0], args[1])
			}
			return nil
		},
	}
	if what == "resume" || what == "retry" || what == "abort" {
		cmd.Flags().BoolVar(&wait, "wait", false, "then watch the job until it ends")
	}
	return cmd
}
