package dashboard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// thousandNodes is JavaScript that imports the dashboard's timeline into the
// page, gives it a finished job of 1,000 nodes with 6 tasks each (one failed
// on every 100th node), draws it and answers what it drew and how long
// frames took, as JSON: each frame is drawn scrolled to another place.
const thousandNodes = `(async () => {
	const { Timeline } = await import('./timeline.js');
	const t = new Timeline({ stopped: false }, 'unused');
	document.querySelector('main').replaceChildren(t.el);
	const start = Date.parse('2026-01-01T00:00:00Z');
	const tasks = [];
	for (let n = 0; n < 1000; n++) {
		for (let k = 0; k < 6; k++) {
			const s = start + k * 10000 + (n % 37) * 300;
			tasks.push({ id: 'c1-' + (1000 + n) + '/svc/a' + k, nodeId: 'c1-' + (1000 + n), action: 'a' + k,
				status: k === 5 && n % 100 === 0 ? 'FAILED' : 'SUCCEEDED',
				attempts: [{ startedAt: new Date(s).toISOString(), endedAt: new Date(s + 8000).toISOString() }] });
		}
	}
	t.job = { status: 'SUCCEEDED', taskTotal: tasks.length }; // not update(): that would read the API
	t.set(tasks, false);
	const frames = [];
	for (let i = 0; i < 50; i++) {
		t.scroller.scrollTop = (i * 97) % 3000;
		const began = performance.now();
		t.draw();
		frames.push(performance.now() - began);
	}
	frames.sort((a, b) => a - b);
	t.scroller.scrollTop = 2000;
	t.draw();
	const c = t.canvas;
	return JSON.stringify({ rows: t.el.dataset.rows, bars: t.el.dataset.bars, failed: t.el.dataset.barsFailed,
		first: c.dataset.firstRow, last: c.dataset.lastRow, drawn: c.dataset.drawnBars,
		median: frames[25], p90: frames[45] });
})()`

type thousand struct {
	Rows, Bars, Failed, First, Last, Drawn string
	Median, P90                            float64
}

func drawThousand(t *testing.T, ctx context.Context, url string) thousand {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url+"/"), chromedp.WaitVisible(css("#key"))))
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](thousandNodes, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	var got thousand
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	return got
}

// The timeline of a 1,000-node job: every node a row, every task a bar,
// and only the rows in view drawn, wherever the view is scrolled to. It
// prints how long a frame takes (median and p90 of 50, each scrolled
// elsewhere: the cost of every scroll, zoom or live redraw); run with -v.
func TestDashboardTimelineOfAThousandNodesInBrowser(t *testing.T) {
	ctx, problems := browser(t)
	s := startServer(t)
	got := drawThousand(t, ctx, s.srv.URL())
	require.Equal(t, "1000", got.Rows)
	require.Equal(t, "6000", got.Bars)
	require.Equal(t, "10", got.Failed)
	// Rows of 4 px: scrolled 2,000 px down, rows 500 to 626 are in view.
	require.Equal(t, "500", got.First)
	require.Equal(t, "626", got.Last)
	require.Equal(t, "756", got.Drawn, "six bars for each of the 126 rows in view")
	t.Logf("a frame of 1,000 rows: median %.2f ms, p90 %.2f ms", got.Median, got.P90)

	parsed, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
		const { parseDuration } = await import('./svg.js');
		return JSON.stringify(['10s', '1m30.5s', '250ms', '2d', '1h0m0s', '0s', 'soon', '', '5x'].map(parseDuration));
	})()`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Equal(t, `[10000,90500,250,172800000,3600000,0,null,null,null]`, parsed, "Go durations as the API writes them (NaN is null)")
	require.Empty(t, problems())
}
