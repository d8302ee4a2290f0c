package main

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// sentTask is what the sends and timeline checks read of a task.
type sentTask struct {
	ID          string    `json:"id"`
	Action      string    `json:"action"`
	ReadyAt     time.Time `json:"readyAt"`
	Sends       int       `json:"sends"`
	SendReasons []string  `json:"sendReasons"`
	Attempts    []struct {
		StartedAt time.Time `json:"startedAt"`
		EndedAt   time.Time `json:"endedAt"`
	} `json:"attempts"`
}

// extra is how many messages were sent for the task beyond its first
// (domain.Task.ExtraSends, from the API's view).
func (v sentTask) extra() int {
	t := domain.Task{Sends: v.Sends, SendReasons: v.SendReasons}
	return t.ExtraSends()
}

// jobTasks reads every task of a job through the API, each in full.
func (d *deployment) jobTasks(cluster, job string) []sentTask {
	d.t.Helper()
	var tasks []sentTask
	cursor := ""
	for {
		var page struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
			NextCursor string `json:"nextCursor"`
		}
		path := "/v1/clusters/" + cluster + "/jobs/" + job + "/tasks?limit=500"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		d.api(http.MethodGet, path, nil, &page)
		for _, it := range page.Items {
			var tv sentTask
			d.api(http.MethodGet, "/v1/clusters/"+cluster+"/jobs/"+job+"/tasks/"+url.PathEscape(it.ID), nil, &tv)
			tasks = append(tasks, tv)
		}
		if cursor = page.NextCursor; cursor == "" {
			return tasks
		}
	}
}

// requireSentOnce: in a run without faults, no task's message is sent
// more than once (issue 35: 61 of a 20-node create's 160 tasks were).
// A continuation's polls moving to its own first message is no extra
// send; anything else says why it was sent (SendReasons).
func requireSentOnce(t *testing.T, tasks []sentTask) {
	t.Helper()
	require.NotEmpty(t, tasks)
	var extra []string
	for _, tv := range tasks {
		if tv.extra() > 0 {
			extra = append(extra, tv.ID+" sends "+strings.Join(tv.SendReasons, ",")+" (of "+strconv.Itoa(tv.Sends)+")")
		}
	}
	require.Empty(t, extra, "tasks sent more than once in a run without faults")
}
