// The task graph of a plan preview or of a job, drawn in SVG as the API
// summarises it (planner.GroupGraph): one box per group of tasks that run
// the same action of the same service in the same stage, in one column per
// stage, an arrow where a group waits for another, and the critical path's
// boxes and arrows in red. A job's boxes carry a bar of their tasks by
// status. Whatever the job's size the summary is a few kilobytes, so a
// 10,000-node create is a few dozen boxes, not 40,000.

import { get, enc } from './api.js';
import { h, replace, errorBox } from './dom.js';
import { s, STATUS_ORDER, statusColor, parseDuration, shortDuration } from './svg.js';

const BOX_W = 160;
const BOX_H = 46;
const COL_GAP = 56;
const ROW_GAP = 14;
const PAD = 12;
const HEAD = 24;
const ENDED = new Set(['SUCCEEDED', 'FAILED', 'ABORTED']);

function label(grp) {
  return grp.service ? `${grp.service} ${grp.action}` : grp.action;
}

// graphPicture draws a group graph; id names the SVG.
export function graphPicture(g, id) {
  const groups = (g && g.groups) || [];
  if (groups.length === 0) return h('p', { class: 'muted' }, 'No tasks to draw.');
  const place = new Map();
  const perStage = new Map();
  for (const grp of groups) {
    const row = perStage.get(grp.stage) || 0;
    perStage.set(grp.stage, row + 1);
    place.set(grp.id, { x: PAD + (grp.stage - 1) * (BOX_W + COL_GAP), y: HEAD + row * (BOX_H + ROW_GAP) });
  }
  const stages = Math.max(g.stages || 0, ...groups.map((grp) => grp.stage));
  const width = PAD * 2 + stages * BOX_W + (stages - 1) * COL_GAP;
  const height = HEAD + Math.max(...perStage.values()) * (BOX_H + ROW_GAP) + PAD;
  const edges = [...(g.edges || [])].sort((a, b) => Number(!!a.critical) - Number(!!b.critical)); // critical on top
  const svg = s('svg', { id, class: 'graph', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': `task graph: ${groups.length} groups in ${stages} stages` },
  s('defs', {},
    s('marker', { id: `${id}-arrow`, viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 8, markerHeight: 8, markerUnits: 'userSpaceOnUse', orient: 'auto' },
      s('path', { d: 'M0,0 L8,4 L0,8 z', class: 'arrow' })),
    s('marker', { id: `${id}-arrow-critical`, viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 8, markerHeight: 8, markerUnits: 'userSpaceOnUse', orient: 'auto' },
      s('path', { d: 'M0,0 L8,4 L0,8 z', class: 'arrow critical' }))),
  Array.from({ length: stages }, (_, i) => s('text', { x: PAD + i * (BOX_W + COL_GAP), y: 15, class: 'stage-label' }, `stage ${i + 1}`)),
  edges.map((e) => {
    const a = place.get(e.from);
    const b = place.get(e.to);
    if (!a || !b) return null;
    const x0 = a.x + BOX_W;
    const y0 = a.y + BOX_H / 2;
    const x1 = b.x;
    const y1 = b.y + BOX_H / 2;
    const mid = (x0 + x1) / 2;
    return s('path', { d: `M${x0},${y0} C${mid},${y0} ${mid},${y1} ${x1},${y1}`, class: e.critical ? 'edge critical' : 'edge',
      'marker-end': `url(#${id}-arrow${e.critical ? '-critical' : ''})`, dataset: { from: e.from, to: e.to } });
  }),
  groups.map((grp) => box(grp, place.get(grp.id))));
  return svg;
}

function box(grp, at) {
  const status = grp.status || {};
  const longest = parseDuration(grp.longest);
  const counts = STATUS_ORDER.filter((st) => status[st]).map((st) => `${status[st]} ${st.toLowerCase()}`).join(', ');
  const title = `${label(grp)}, stage ${grp.stage}: ${grp.tasks} task${grp.tasks === 1 ? '' : 's'}` +
    `${counts ? ` (${counts})` : ''}; longest ${shortDuration(longest)}${grp.critical ? '; on the critical path' : ''}`;
  const segs = [];
  let x = at.x + 8;
  const barW = BOX_W - 16;
  for (const st of STATUS_ORDER) {
    const n = status[st] || 0;
    if (!n) continue;
    const w = (n / grp.tasks) * barW;
    segs.push(s('rect', { x: x.toFixed(2), y: at.y + BOX_H - 10, width: w.toFixed(2), height: 5, fill: statusColor(st), class: 'seg', dataset: { status: st, count: n } }));
    x += w;
  }
  return s('g', { class: grp.critical ? 'group critical' : 'group', dataset: { group: grp.id, stage: grp.stage, tasks: grp.tasks, label: label(grp) } },
    s('title', {}, title),
    s('rect', { x: at.x, y: at.y, width: BOX_W, height: BOX_H, rx: 5, class: 'box' }),
    s('text', { x: at.x + 8, y: at.y + 16, class: 'group-label' }, clip(label(grp), 22)),
    s('text', { x: at.x + 8, y: at.y + (segs.length ? 29 : 33), class: 'group-count' },
      `${grp.tasks} task${grp.tasks === 1 ? '' : 's'} · ${shortDuration(longest)}`),
    segs);
}

function clip(text, n) {
  return text.length <= n ? text : `${text.slice(0, n - 1)}…`;
}

// graphSummary says what the picture shows: its size, the critical path
// (its length and tasks) and anything the API left out.
export function graphSummary(g, id) {
  const groups = (g && g.groups) || [];
  const tasks = groups.reduce((n, grp) => n + grp.tasks, 0);
  const path = (g && g.criticalPath) || {};
  const ids = path.tasks || [];
  const omitted = [g.omittedGroups ? `${g.omittedGroups} groups` : '', g.omittedEdges ? `${g.omittedEdges} arrows` : '']
    .filter(Boolean).join(' and ');
  return h('div', { id },
    h('p', { class: 'muted' },
      `${tasks} tasks in ${groups.length} groups over ${g.stages || 0} stages. `,
      h('span', { class: 'critical-note' }, `Critical path (red): ${shortDuration(parseDuration(path.length))} through ${ids.length} tasks.`),
      omitted ? ` Not drawn: ${omitted}.` : ''),
    ids.length ? h('details', {}, h('summary', {}, 'critical path tasks'),
      h('ol', { class: 'critical-path' }, ids.map((t) => h('li', {}, h('code', {}, t))))) : null);
}

// planGraph is the card of a dry run's preview graph.
export function planGraph(preview) {
  if (!preview || !preview.graph) return null;
  return h('div', { id: 'plan-graph' },
    h('h3', {}, 'Task graph'),
    graphSummary(preview.graph, 'plan-graph-summary'),
    h('div', { class: 'graph-scroller' }, graphPicture(preview.graph, 'plan-graph-svg')));
}

// JobGraph is the job page's graph card, read again when the job's counts
// change (the critical path of a running job moves as tasks end), and
// never sooner than twice the last read took.
export class JobGraph {
  constructor(view, clusterID, jobID) {
    this.view = view;
    this.base = `clusters/${enc(clusterID)}/jobs/${enc(jobID)}/graph`;
    this.sig = '';
    this.loading = false;
    this.nextLoad = 0;
    this.rollback = h('input', { type: 'checkbox', id: 'graph-rollback', onchange: () => { this.sig = ''; this.nextLoad = 0; this.update(this.job); } });
    this.body = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
    this.el = h('section', { class: 'card', id: 'job-graph' },
      h('h2', {}, 'Task graph'),
      h('label', { class: 'inline' }, this.rollback, ' the rollback plan (runs only if the job fails)'),
      this.body);
  }

  async update(job) {
    if (!job) return;
    this.job = job;
    // Running tasks lengthen the critical path: while some run, read again
    // every 10 s even if the counts stand still.
    const running = !ENDED.has(job.status) && ((job.taskStatus || {}).RUNNING || (job.rollbackStatus || {}).RUNNING);
    const sig = JSON.stringify([this.rollback.checked, job.status, job.taskStatus, job.rollbackStatus,
      running ? Math.floor(Date.now() / 10000) : 0]);
    if (sig === this.sig || this.loading || Date.now() < this.nextLoad) return;
    this.loading = true;
    const began = Date.now();
    try {
      const g = await get(`${this.base}${this.rollback.checked ? '?rollback=true' : ''}`);
      if (this.view.stopped) return;
      this.sig = sig;
      replace(this.body, graphSummary(g, 'job-graph-summary'),
        h('div', { class: 'graph-scroller' }, graphPicture(g, 'job-graph-svg')));
    } catch (err) {
      if (!this.view.stopped) replace(this.body, errorBox(err));
    } finally {
      this.loading = false;
      // A big job's graph reads every task: never more than a third of
      // the time.
      this.nextLoad = Date.now() + 2 * (Date.now() - began);
    }
  }
}
