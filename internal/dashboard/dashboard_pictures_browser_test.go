package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/demotest"
)

// statusColors are web/svg.js's STATUS_COLORS as RGB: the test reads them
// back from the timeline's canvas.
var statusColors = map[string][3]int{
	"SUCCEEDED": {0x2e, 0x9d, 0x57},
	"FAILED":    {0xd0, 0x39, 0x2b},
	"RUNNING":   {0xe8, 0xa3, 0x17},
	"READY":     {0x5b, 0x8d, 0xef},
}

// canvasPixels is JavaScript that counts the timeline canvas's pixels of
// each status colour.
func canvasPixels() string {
	var b strings.Builder
	b.WriteString(`(() => { const c = document.querySelector('#timeline-canvas');
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		const want = {`)
	for st, rgb := range statusColors {
		fmt.Fprintf(&b, "%q: [%d, %d, %d],", st, rgb[0], rgb[1], rgb[2])
	}
	b.WriteString(`}; const out = {};
		for (const st in want) out[st] = 0;
		for (let i = 0; i < d.length; i += 4) {
			for (const st in want) {
				const w = want[st];
				if (d[i] === w[0] && d[i + 1] === w[1] && d[i + 2] === w[2]) out[st]++;
			}
		}
		return JSON.stringify(out); })()`)
	return b.String()
}

type graphAnswer struct {
	Groups []struct {
		ID       int            `json:"id"`
		Tasks    int            `json:"tasks"`
		Critical bool           `json:"critical"`
		Status   map[string]int `json:"status"`
	} `json:"groups"`
	Edges []struct {
		Critical bool `json:"critical"`
	} `json:"edges"`
}

func (g graphAnswer) critical() (groups, edges int) {
	for _, grp := range g.Groups {
		if grp.Critical {
			groups++
		}
	}
	for _, e := range g.Edges {
		if e.Critical {
			edges++
		}
	}
	return groups, edges
}

// TestDashboardPicturesInBrowser draws the pictures of a 200-node cluster:
// the plan preview's task graph and layout, the create job's timeline (one
// row per node, a bar per task in its status's colour, live while the job
// runs, zoomed and scrolled) and task graph with the critical path, and the
// cluster's layout as node groups; it compares each with what the API
// answers and reads the timeline's colours back from its canvas.
func TestDashboardPicturesInBrowser(t *testing.T) {
	// A 200-node create takes some 20 s on a quiet machine, minutes on a
	// loaded one: the bounds are liveness bounds.
	ctx, problems := browserFor(t, 8*time.Minute)
	s := startServer(t)
	s.admin = demotest.TenantWithCatalog(t, s.srv.URL(), s.super, "acme", 250, demotest.BigCatalog)
	shot := newShots(t)
	shot.n = 110 // after the other flows' screenshots
	step, value := steps(t, ctx, time.Now())
	intOf := func(name, expr string) int {
		t.Helper()
		n, err := strconv.Atoi(value(name, chromedp.Evaluate[string](expr)))
		require.NoError(t, err, name)
		return n
	}

	var dry struct {
		Preview struct {
			Graph graphAnswer `json:"graph"`
		} `json:"preview"`
		Layout []struct {
			Count int `json:"count"`
		} `json:"layout"`
	}
	req := map[string]any{"name": "wide", "template": "big", "size": 200}
	require.Equal(t, http.StatusOK, s.call(s.admin, "POST", "/v1/clusters?dryRun=true", req, &dry))
	planGroups := len(dry.Preview.Graph.Groups)
	planCritical, planCriticalEdges := dry.Preview.Graph.critical()
	require.Positive(t, planCritical)

	step("the plan preview draws the task graph and the layout",
		chromedp.Navigate(s.srv.URL()+"/"),
		login(s.admin, "ann"),
		chromedp.Navigate(s.srv.URL()+"/#/clusters/new"),
		until(`!!document.querySelector('#cluster-template option[value="big"]')`),
		chromedp.SendKeys(css("#cluster-name"), "wide"),
		chromedp.SetValue(css("#cluster-template"), "big"),
		chromedp.SetValue(css("#cluster-size"), "200"),
		chromedp.Click(css("#preview-button")),
		until(fmt.Sprintf(`document.querySelectorAll('#plan-graph-svg g.group').length === %d`, planGroups)),
		shot.take("plan-graph"))
	require.Equal(t, planCritical, intOf("critical groups", `String(document.querySelectorAll('#plan-graph-svg g.group.critical').length)`))
	require.Equal(t, planCriticalEdges, intOf("critical arrows", `String(document.querySelectorAll('#plan-graph-svg path.edge.critical').length)`))
	require.Equal(t, len(dry.Layout), intOf("layout groups", `String(document.querySelectorAll('#plan-layout-picture figure.layout-group').length)`))
	require.Equal(t, "200", value("layout nodes", chromedp.Evaluate[string](`document.querySelector('#plan-layout-picture').dataset.nodes`)))
	require.Contains(t, value("critical note", chromedp.Text(css("#plan-graph-summary .critical-note"))), "Critical path")

	step("create and open the job while it runs",
		chromedp.Click(css("#confirm-create")),
		chromedp.WaitVisible(css("#progress a")),
		chromedp.Click(css("#progress a")),
		chromedp.WaitVisible(css("#timeline")),
		until(`Number(document.querySelector('#timeline').dataset.bars || 0) > 0`),
		shot.take("timeline-live"))
	live := value("the job while the timeline first drew", chromedp.Evaluate[string](`document.querySelector('#job-info').dataset.status`))
	firstBars := intOf("bars first drawn", `document.querySelector('#timeline').dataset.bars`)

	step("the job ends and the timeline follows it",
		chromedp.Poll[chromedp.Void](`document.querySelector('#job-info')?.dataset.status === 'SUCCEEDED'`,
			chromedp.WithPollingInterval(250*time.Millisecond), chromedp.WithPollingTimeout(6*time.Minute)),
		until(`document.querySelector('#timeline').dataset.rows === '200' &&
			document.querySelector('#timeline').dataset.barsRunning === '0' &&
			document.querySelector('#timeline').dataset.bars === document.querySelector('#timeline').dataset.barsSucceeded`),
		shot.take("timeline-done"))
	t.Logf("the job was %s when the timeline first drew %d bars", live, firstBars)

	// What the API says ran: every task with an attempt, read page by page.
	jobPath := strings.TrimPrefix(value("job URL", chromedp.Evaluate[string](`location.hash`)), "#")
	ran := 0
	cursor := ""
	for {
		var page struct {
			Items []struct {
				Attempts []any `json:"attempts"`
			} `json:"items"`
			NextCursor string `json:"nextCursor"`
		}
		require.Equal(t, http.StatusOK, s.call(s.admin, "GET", "/v1"+jobPath+"/tasks?limit=500&cursor="+cursor, nil, &page))
		for _, it := range page.Items {
			if len(it.Attempts) > 0 {
				ran++
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	require.Greater(t, ran, 200)
	require.Equal(t, ran, intOf("bars", `document.querySelector('#timeline').dataset.bars`), "a bar per task that ran")
	if live == "RUNNING" {
		require.Less(t, firstBars, ran, "the timeline drew the running job and then followed it")
		require.Greater(t, intOf("reads", `document.querySelector('#timeline').dataset.reads`), 1)
	}

	var pixels map[string]int
	require.NoError(t, json.Unmarshal([]byte(value("canvas colours", chromedp.Evaluate[string](canvasPixels()))), &pixels))
	require.Greater(t, pixels["SUCCEEDED"], 1000, "succeeded bars are drawn in green: %v", pixels)
	require.Zero(t, pixels["FAILED"], "no failed bar: %v", pixels)
	require.Zero(t, pixels["RUNNING"], "no running bar: %v", pixels)
	require.Equal(t, "1", value("legend", chromedp.Evaluate[string](`String(document.querySelectorAll('#timeline-legend .legend-item').length)`)))
	require.Equal(t, strconv.Itoa(ran), value("legend count", chromedp.Evaluate[string](`document.querySelector('#timeline-legend .legend-item[data-status="SUCCEEDED"]').dataset.count`)))

	// Virtualised: only the rows in view are drawn; scrolling draws others.
	rows := `[Number(document.querySelector('#timeline-canvas').dataset.firstRow), Number(document.querySelector('#timeline-canvas').dataset.lastRow)]`
	require.Equal(t, "[0,126]", strings.ReplaceAll(value("rows in view", chromedp.Evaluate[string](`JSON.stringify(`+rows+`)`)), " ", ""))
	step("scroll to the last rows and zoom in",
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#timeline-scroller').scrollTop = 1e6`),
		until(`document.querySelector('#timeline-canvas').dataset.lastRow === '200'`),
		chromedp.Evaluate[chromedp.Void](`window.fullRange = document.querySelector('#timeline-range').textContent; window.fullBars = document.querySelector('#timeline-canvas').dataset.drawnBars`),
		chromedp.Click(css("#timeline-zoom-in")),
		chromedp.Click(css("#timeline-zoom-in")),
		until(`document.querySelector('#timeline-range').textContent !== window.fullRange`),
		shot.take("timeline-zoomed"))
	require.Positive(t, intOf("bars drawn at the end", `document.querySelector('#timeline-canvas').dataset.drawnBars`))
	step("rows of 14 px and back to the whole job",
		chromedp.SetValue(css("#timeline-row-height"), "14"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#timeline-row-height').dispatchEvent(new Event('change'))`),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#timeline-scroller').scrollTop = 0`),
		chromedp.Click(css("#timeline-fit")),
		until(`document.querySelector('#timeline-range').textContent === window.fullRange && document.querySelector('#timeline-canvas').dataset.lastRow === '37'`),
		shot.take("timeline-rows-14"))

	var jg graphAnswer
	require.Equal(t, http.StatusOK, s.call(s.admin, "GET", "/v1"+jobPath+"/graph", nil, &jg))
	jobCritical, jobCriticalEdges := jg.critical()
	require.Positive(t, jobCritical)
	step("the job's task graph",
		chromedp.ScrollIntoView(css("#job-graph")),
		until(fmt.Sprintf(`document.querySelectorAll('#job-graph-svg g.group').length === %d`, len(jg.Groups))),
		shot.take("job-graph"))
	require.Equal(t, jobCritical, intOf("critical groups", `String(document.querySelectorAll('#job-graph-svg g.group.critical').length)`))
	require.Equal(t, jobCriticalEdges, intOf("critical arrows", `String(document.querySelectorAll('#job-graph-svg path.edge.critical').length)`))
	// Each group's status bar: one green segment, as every task succeeded.
	segs := value("segments", chromedp.Evaluate[string](`JSON.stringify([...document.querySelectorAll('#job-graph-svg rect.seg')].map((r) => [r.dataset.status, r.getAttribute('fill')]))`))
	require.Equal(t, "["+strings.TrimSuffix(strings.Repeat(`["SUCCEEDED","#2e9d57"],`, len(jg.Groups)), ",")+"]", segs)

	var rg graphAnswer
	require.Equal(t, http.StatusOK, s.call(s.admin, "GET", "/v1"+jobPath+"/graph?rollback=true", nil, &rg))
	require.NotEmpty(t, rg.Groups)
	step("the rollback plan's graph",
		chromedp.Click(css("#graph-rollback")),
		until(fmt.Sprintf(`document.querySelectorAll('#job-graph-svg g.group').length === %d &&
			[...document.querySelectorAll('#job-graph-svg rect.seg')].every((r) => r.dataset.status === 'BLOCKED')`, len(rg.Groups))))

	var c struct {
		Layout []struct {
			Count    int      `json:"count"`
			Services []string `json:"services"`
		} `json:"layout"`
	}
	clusterPath := jobPath[:strings.Index(jobPath, "/jobs/")]
	require.Equal(t, http.StatusOK, s.call(s.admin, "GET", "/v1"+clusterPath, nil, &c))
	step("the cluster's layout as node groups",
		chromedp.Navigate(s.srv.URL()+"/#"+clusterPath),
		until(fmt.Sprintf(`document.querySelectorAll('#layout-picture figure.layout-group').length === %d`, len(c.Layout))),
		shot.take("cluster-layout"))
	for i, g := range c.Layout {
		fig := fmt.Sprintf(`document.querySelectorAll('#layout-picture figure.layout-group')[%d]`, i)
		require.Equal(t, strconv.Itoa(g.Count), value("group count", chromedp.Evaluate[string](fig+`.dataset.count`)))
		require.Equal(t, strings.Join(g.Services, ","), value("group services", chromedp.Evaluate[string](fig+`.dataset.services`)))
		require.Equal(t, g.Count, intOf("squares", `String(`+fig+`.querySelectorAll('rect.cell').length)`), "a square per node up to 400")
	}
	require.Empty(t, problems())
}
