// A job's timeline: one row per node, a bar per task that ran (from its
// first attempt's start to its last attempt's end, or to now while it
// runs) coloured by the task's status, drawn on a canvas. Only the rows in
// view are drawn (the canvas is the height of the view, the scroll height
// comes from a spacer), so 1,000 nodes or 10,000 scroll as smoothly as 10.
// Time zooms (buttons, or Ctrl/Alt + wheel at the pointer) and pans (drag,
// or Shift + wheel); the row height is chosen from a list.
//
// The tasks are read through the paged task listing (500 a page, following
// the cursors, never the whole job in one answer), by status and only the
// statuses of tasks that may have run, again only when the job's counts
// change, and never sooner than twice the last read took, so a big job's
// reads stay a small share of the API's time. At most MAX_TASKS are read;
// a larger job's timeline says how many it shows.

import { get } from './api.js';
import { h, replace, errorBox } from './dom.js';
import { STATUS_ORDER, statusColor, legend, shortDuration } from './svg.js';

const PAGE = 500;
export const MAX_TASKS = 20000;
const HEADER = 20; // the time axis, in CSS pixels
const LABELS = 150; // the node names' column
const VIEW_HEIGHT = 520;
const ROW_HEIGHTS = [2, 4, 8, 14, 20];
const ENDED = new Set(['SUCCEEDED', 'FAILED', 'ABORTED']);
// RAN are the statuses of tasks that may have run (READY: waiting to retry).
const RAN = ['RUNNING', 'FAILED', 'SUCCEEDED', 'READY', 'CANCELED'];

export class Timeline {
  constructor(view, base) {
    this.view = view;
    this.base = base;
    this.bars = [];
    this.rows = [];
    this.byRow = [];
    this.labels = [];
    this.loadedSig = '';
    this.loading = false;
    this.nextLoad = 0;
    this.window = null; // [start, end] in ms, null: fit
    this.live = false;
    this.reads = 0;

    this.canvas = h('canvas', { id: 'timeline-canvas', class: 'timeline-canvas' });
    this.spacer = h('div', { class: 'timeline-spacer' });
    this.scroller = h('div', { class: 'timeline-scroller', id: 'timeline-scroller', onscroll: () => this.draw() }, this.canvas, this.spacer);
    this.rowHeight = h('select', { id: 'timeline-row-height', onchange: () => { this.layout(); this.draw(); } },
      ROW_HEIGHTS.map((px) => h('option', { value: String(px) }, `${px} px`)));
    this.range = h('span', { class: 'muted', id: 'timeline-range' });
    this.note = h('p', { class: 'muted', id: 'timeline-note' });
    this.tip = h('p', { class: 'timeline-tip', id: 'timeline-tip' }, ' ');
    this.legendBox = h('div', {});
    const button = (id, label, title, fn) => h('button', { type: 'button', class: 'secondary', id, title, onclick: fn }, label);
    this.el = h('section', { class: 'card', id: 'timeline' },
      h('h2', {}, 'Timeline'),
      h('div', { class: 'row timeline-tools' },
        button('timeline-zoom-in', '+', 'Zoom in (Ctrl + wheel)', () => this.zoom(0.5)),
        button('timeline-zoom-out', '−', 'Zoom out', () => this.zoom(2)),
        button('timeline-fit', 'Fit', 'Show the whole job', () => { this.window = null; this.draw(); }),
        h('label', { class: 'inline' }, 'Row height ', this.rowHeight),
        this.range),
      this.legendBox,
      this.scroller,
      this.tip,
      this.note);
    this.rowHeight.value = '14';
    this.rowHeightChosen = false;
    this.rowHeight.addEventListener('change', () => { this.rowHeightChosen = true; });
    this.wire();
    // Drawn again when it first shows and whenever its width changes.
    new ResizeObserver(() => this.draw()).observe(this.scroller);
  }

  // update is called with the job each time the job page polls it.
  update(job) {
    this.job = job;
    this.live = !ENDED.has(job.status);
    const sig = JSON.stringify([job.status, job.taskDone, job.taskStatus, job.rollbackStatus]);
    if (sig !== this.loadedSig && !this.loading && Date.now() >= this.nextLoad) this.load(sig);
    // Running bars grow with the clock.
    if (this.live) this.draw();
  }

  async load(sig) {
    this.loading = true;
    const began = Date.now();
    try {
      // Only the statuses a task that ran can have, and only those the job
      // counts: a blocked task never ran, and a big job's blocked tasks
      // (its rollback plan's too) are most of it.
      const job = this.job || {};
      const count = (st) => ((job.taskStatus || {})[st] || 0) + ((job.rollbackStatus || {})[st] || 0);
      const tasks = [];
      let more = false;
      // Before any task has started, ready tasks have not run either (but
      // for one waiting to retry its first failed attempt, drawn once it
      // runs again): a big job's first wave is not read for nothing.
      const started = RAN.some((st) => st !== 'READY' && count(st) > 0);
      for (const status of RAN.filter((st) => count(st) > 0 && (started || st !== 'READY'))) {
        let cursor = '';
        do {
          if (tasks.length >= MAX_TASKS) {
            more = true;
            break;
          }
          const q = new URLSearchParams({ limit: String(PAGE), status });
          if (cursor) q.set('cursor', cursor);
          const page = await get(`${this.base}/tasks?${q}`);
          if (this.view.stopped) return;
          tasks.push(...(page.items || []));
          cursor = page.nextCursor || '';
        } while (cursor);
      }
      this.reads++;
      this.loadedSig = sig;
      this.set(tasks, more);
    } catch (err) {
      if (!this.view.stopped) replace(this.note, errorBox(err));
    } finally {
      this.loading = false;
      this.nextLoad = Date.now() + 2 * (Date.now() - began);
    }
  }

  // set turns tasks into rows and bars.
  set(tasks, more) {
    const rowOf = new Map();
    const bars = [];
    const counts = {};
    for (const t of tasks) {
      const as = t.attempts || [];
      if (as.length === 0 || !as[0].startedAt) continue; // never ran: no bar
      const start = Date.parse(as[0].startedAt);
      const last = as[as.length - 1];
      const end = last.endedAt ? Date.parse(last.endedAt) : null;
      const node = t.nodeId || '(cluster)';
      if (!rowOf.has(node)) rowOf.set(node, rowOf.size);
      bars.push({ node, start, end, status: t.status, id: t.id, service: t.service || '', action: t.action, rollback: !!t.rollback });
      counts[t.status] = (counts[t.status] || 0) + 1;
    }
    const collator = new Intl.Collator(undefined, { numeric: true });
    this.rows = [...rowOf.keys()].sort(collator.compare);
    this.labels = shortLabels(this.rows);
    const index = new Map(this.rows.map((r, i) => [r, i]));
    this.byRow = this.rows.map(() => []);
    for (const b of bars) {
      b.row = index.get(b.node);
      this.byRow[b.row].push(b);
    }
    for (const list of this.byRow) list.sort((a, b) => a.start - b.start);
    this.bars = bars;
    this.counts = counts;
    if (!this.rowHeightChosen) this.rowHeight.value = this.rows.length <= 40 ? '14' : '4';
    replace(this.legendBox, legend(counts, 'timeline-legend'));
    const total = (this.job && this.job.taskTotal) || tasks.length;
    replace(this.note, this.rows.length === 0
      ? 'No task has started yet.'
      : `${bars.length} tasks that ran, on ${this.rows.length} rows${more ? `; only the first ${tasks.length} of the tasks that may have run were read (running, failed and succeeded first; the job has ${total} tasks)` : ''}.`);
    this.el.dataset.rows = String(this.rows.length);
    this.el.dataset.bars = String(bars.length);
    this.el.dataset.reads = String(this.reads);
    for (const st of STATUS_ORDER) this.el.dataset[`bars${st[0]}${st.slice(1).toLowerCase()}`] = String(counts[st] || 0);
    this.layout();
    this.draw();
  }

  // extent is the whole job's time span.
  extent() {
    const now = Date.now();
    let lo = Infinity;
    let hi = -Infinity;
    for (const b of this.bars) {
      lo = Math.min(lo, b.start);
      hi = Math.max(hi, b.end ?? now);
    }
    if (!(lo < hi)) return [lo === Infinity ? now - 1000 : lo, (lo === Infinity ? now : lo) + 1000];
    return [lo, hi + (hi - lo) * 0.02];
  }

  visible() {
    return this.window || this.extent();
  }

  zoom(factor, at) {
    const [lo, hi] = this.visible();
    const width = Math.max((hi - lo) * factor, 50); // 50 ms at most zoomed
    const pivot = at ?? (lo + hi) / 2;
    const share = (pivot - lo) / (hi - lo);
    this.window = [pivot - width * share, pivot - width * share + width];
    this.draw();
  }

  pan(ms) {
    const [lo, hi] = this.visible();
    this.window = [lo + ms, hi + ms];
    this.draw();
  }

  layout() {
    const rh = Number(this.rowHeight.value);
    const total = HEADER + this.rows.length * rh;
    const height = Math.min(total, VIEW_HEIGHT);
    this.canvas.style.height = `${height}px`;
    this.spacer.style.height = `${total - height}px`;
    this.scroller.style.height = `${height}px`;
  }

  // draw paints the rows in view.
  draw() {
    const c = this.canvas;
    const width = this.scroller.clientWidth;
    const height = c.clientHeight;
    if (width === 0 || height === 0) return;
    const dpr = window.devicePixelRatio || 1;
    if (c.width !== Math.round(width * dpr) || c.height !== Math.round(height * dpr)) {
      c.width = Math.round(width * dpr);
      c.height = Math.round(height * dpr);
    }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    g.fillStyle = '#ffffff';
    g.fillRect(0, 0, width, height);
    const rh = Number(this.rowHeight.value);
    const [lo, hi] = this.visible();
    const plot = width - LABELS;
    const x = (t) => LABELS + ((t - lo) / (hi - lo)) * plot;
    const top = this.scroller.scrollTop;
    const first = Math.max(0, Math.floor(top / rh));
    const last = Math.min(this.rows.length, Math.ceil((top + height - HEADER) / rh) + 1);
    const now = Date.now();
    let drawn = 0;
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'middle';
    for (let r = first; r < last; r++) {
      const y = HEADER + r * rh - top;
      if (r % 2 === 1) {
        g.fillStyle = '#f4f6f9';
        g.fillRect(0, y, width, rh);
      }
      if (rh >= 8) {
        g.fillStyle = '#5d6678';
        g.fillText(clip(this.labels[r], 22), 4, y + rh / 2);
      }
      const inset = rh >= 8 ? 2 : rh >= 4 ? 1 : 0;
      for (const b of this.byRow[r]) {
        const end = b.end ?? now;
        if (end < lo || b.start > hi) continue;
        const x0 = Math.max(LABELS, Math.round(x(b.start)));
        const x1 = Math.min(width, Math.round(x(end)));
        g.fillStyle = statusColor(b.status);
        g.fillRect(x0, Math.round(y + inset), Math.max(x1 - x0, 1), Math.max(rh - 2 * inset, 1));
        drawn++;
      }
    }
    this.axis(g, width, lo, hi, x);
    c.dataset.drawnBars = String(drawn);
    c.dataset.firstRow = String(first);
    c.dataset.lastRow = String(last);
    this.range.textContent = `${shortDuration(hi - lo)} in view`;
  }

  // axis draws the time ticks across the top, relative to the job's start.
  axis(g, width, lo, hi, x) {
    g.fillStyle = '#ffffff';
    g.fillRect(0, 0, width, HEADER);
    g.fillStyle = '#dde1e8';
    g.fillRect(0, HEADER - 1, width, 1);
    g.fillRect(LABELS - 1, 0, 1, g.canvas.height);
    const origin = this.extent()[0];
    const span = hi - lo;
    const steps = [10, 50, 100, 250, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000, 7200000];
    const step = steps.find((s) => span / s <= 10) || 14400000;
    g.fillStyle = '#5d6678';
    g.textBaseline = 'middle';
    for (let t = Math.ceil((lo - origin) / step) * step; origin + t <= hi; t += step) {
      const px = Math.round(x(origin + t));
      if (px < LABELS) continue;
      g.fillRect(px, HEADER - 5, 1, 5);
      g.fillText(`+${shortDuration(t)}`, px + 3, HEADER / 2);
    }
  }

  // barAt finds the bar under a point of the canvas.
  barAt(px, py) {
    const rh = Number(this.rowHeight.value);
    const r = Math.floor((py - HEADER + this.scroller.scrollTop) / rh);
    if (py < HEADER || r < 0 || r >= this.rows.length || px < LABELS) return null;
    const [lo, hi] = this.visible();
    const t = lo + ((px - LABELS) / (this.scroller.clientWidth - LABELS)) * (hi - lo);
    const slack = (2 / (this.scroller.clientWidth - LABELS)) * (hi - lo); // 2 px
    const now = Date.now();
    return this.byRow[r].find((b) => b.start - slack <= t && t <= (b.end ?? now) + slack) || { node: this.rows[r] };
  }

  wire() {
    const c = this.canvas;
    c.addEventListener('wheel', (ev) => {
      if (!ev.ctrlKey && !ev.altKey && !ev.shiftKey) return; // scroll the rows
      ev.preventDefault();
      const [lo, hi] = this.visible();
      const rect = c.getBoundingClientRect();
      const at = lo + ((ev.clientX - rect.left - LABELS) / (rect.width - LABELS)) * (hi - lo);
      if (ev.shiftKey) this.pan(((ev.deltaY || ev.deltaX) / rect.width) * (hi - lo));
      else this.zoom(ev.deltaY < 0 ? 0.8 : 1.25, at);
    }, { passive: false });
    let drag = null;
    c.addEventListener('pointerdown', (ev) => {
      drag = { x: ev.clientX, window: this.visible() };
      c.setPointerCapture(ev.pointerId);
    });
    c.addEventListener('pointerup', () => { drag = null; });
    c.addEventListener('pointermove', (ev) => {
      const rect = c.getBoundingClientRect();
      if (drag) {
        const [lo, hi] = drag.window;
        const ms = ((drag.x - ev.clientX) / (rect.width - LABELS)) * (hi - lo);
        this.window = [lo + ms, hi + ms];
        this.draw();
        return;
      }
      const b = this.barAt(ev.clientX - rect.left, ev.clientY - rect.top);
      this.tip.textContent = !b ? ' ' : !b.id ? b.node
        : `${b.node} · ${[b.rollback ? 'rollback' : '', b.service, b.action].filter(Boolean).join(' ')} · ${b.status} · ${shortDuration((b.end ?? Date.now()) - b.start)}`;
    });
  }
}

// shortLabels drops what every node id shares (the cluster's id: node ids
// are the cluster's id and a number), so the rows read -1000, -1001, ...
function shortLabels(rows) {
  if (rows.length < 2) return rows;
  let common = rows[0];
  for (const r of rows) {
    let i = 0;
    while (i < common.length && i < r.length && common[i] === r[i]) i++;
    common = common.slice(0, i);
  }
  const cut = Math.max(common.lastIndexOf('-'), 0);
  return rows.map((r) => r.slice(cut));
}

function clip(text, n) {
  return text.length <= n ? text : `…${text.slice(-(n - 1))}`;
}
