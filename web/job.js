// One job, live, at any size: its status, its tasks counted by status and
// by stage, its timeline and task graph (timeline.js, graph.js), and a page
// of its tasks (failed and running first, filtered by
// status) with each opened task's output read from the task itself;
// abort, pause, resume and retry.

import { get, post, enc } from './api.js';
import { h, replace, badge, progressBar, stageView, when, duration, errorBox } from './dom.js';
import { confirmAction } from './ui.js';
import { Timeline } from './timeline.js';
import { JobGraph } from './graph.js';

// ALLOWED says in which job states each control is accepted (the engine
// refuses the others); the buttons are enabled accordingly.
const ALLOWED = {
  abort: ['RUNNING', 'PAUSED'],
  pause: ['RUNNING'],
  resume: ['PAUSED'],
  retry: ['FAILED', 'ABORTED'],
};

// PAGE is how many tasks a page shows: a job of 40,000 tasks is read a page
// at a time, never whole.
const PAGE = 50;
const STATUSES = ['FAILED', 'RUNNING', 'READY', 'BLOCKED', 'SUCCEEDED', 'CANCELED'];

export function renderJob(view, { id, job }) {
  const base = `clusters/${enc(id)}/jobs/${enc(job)}`;
  const live = h('div', { id: 'job-live' }, h('p', { class: 'muted' }, 'Loading…'));
  const result = h('div', { id: 'job-result' });
  const tasks = h('div', { id: 'job-tasks' });
  const timeline = new Timeline(view, base);
  const graph = new JobGraph(view, id, job);
  // Which tasks' output the user opened (id -> the task whole, once read):
  // kept across refreshes.
  const open = new Map();
  // The page shown: the cursors of the pages before it, and its own.
  const paging = { status: '', cursors: [], cursor: '' };
  const statusFilter = h('select', { id: 'task-status', onchange: () => { paging.status = statusFilter.value; paging.cursors = []; paging.cursor = ''; refresh(); } },
    h('option', { value: '' }, 'every status'), STATUSES.map((st) => h('option', { value: st }, st)));
  const prev = h('button', { type: 'button', id: 'tasks-prev', class: 'secondary', disabled: true,
    onclick: () => { paging.cursor = paging.cursors.pop() || ''; refresh(); } }, '← Previous');
  const next = h('button', { type: 'button', id: 'tasks-next', class: 'secondary', disabled: true }, 'Next →');
  let nextCursor = '';
  next.addEventListener('click', () => { paging.cursors.push(paging.cursor); paging.cursor = nextCursor; refresh(); });
  const refresh = async () => {
    try {
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (paging.status) q.set('status', paging.status);
      if (paging.cursor) q.set('cursor', paging.cursor);
      const [j, page] = await Promise.all([get(base), get(`${base}/tasks?${q}`)]);
      for (const id of open.keys()) {
        open.set(id, await get(`${base}/tasks/${enc(id)}`).catch(() => open.get(id)));
      }
      if (view.stopped) return;
      timeline.update(j);
      graph.update(j);
      for (const [verb, button] of Object.entries(buttons)) button.disabled = !ALLOWED[verb].includes(j.status);
      nextCursor = page.nextCursor || '';
      next.disabled = !nextCursor;
      prev.disabled = paging.cursors.length === 0;
      replace(live, jobInfo(j));
      replace(tasks, taskTable(page.items || [], open, base, paging.cursors.length));
    } catch (err) {
      if (!view.stopped) replace(live, errorBox(err));
    }
  };
  const control = async (verb) => {
    if (verb === 'abort' && !(await confirmAction('Abort this job? Running tasks finish; the rest are canceled and rolled back.', 'Abort'))) {
      return;
    }
    try {
      await post(`${base}/${verb}`);
      replace(result, h('p', {}, `${verb}: done`));
      await refresh();
    } catch (err) {
      replace(result, errorBox(err));
    }
  };
  const buttons = {};
  for (const verb of Object.keys(ALLOWED)) {
    buttons[verb] = h('button', { type: 'button', id: `job-${verb}`, class: verb === 'abort' ? 'danger' : 'secondary',
      disabled: true, onclick: () => control(verb) }, verb[0].toUpperCase() + verb.slice(1));
  }
  replace(view.root,
    h('p', {}, h('a', { href: `#/clusters/${enc(id)}` }, '← Cluster')),
    h('div', { class: 'row', id: 'job-controls' }, Object.values(buttons)),
    result,
    live,
    timeline.el,
    graph.el,
    h('section', { class: 'card', id: 'tasks' },
      h('h2', {}, 'Tasks'),
      h('div', { class: 'row' }, h('label', {}, 'Status', statusFilter), prev, next),
      tasks));
  view.every(2000, refresh);
}

function jobInfo(j) {
  return h('section', { class: 'card', id: 'job-info', dataset: { status: j.status } },
    h('h1', {}, `Job ${j.id}: ${j.operation} `, badge(j.status)),
    j.statusMessage ? h('p', {}, j.statusMessage) : null,
    h('p', {}, progressBar(j.taskDone, j.taskTotal),
      h('span', { class: 'muted' }, ` · requested by ${j.requestedBy || '—'} · started ${when(j.startedAt)} · took ${duration(j.startedAt, j.endedAt)}`)),
    counts('task-counts', 'Tasks', j.taskStatus),
    counts('rollback-counts', 'Rollback plan (runs only if the job fails)', j.rollbackStatus),
    stageView(j.stages));
}

// counts shows tasks counted by status, failed first.
function counts(id, label, byStatus) {
  if (!byStatus || Object.keys(byStatus).length === 0) return null;
  const order = [...STATUSES, ...Object.keys(byStatus).filter((st) => !STATUSES.includes(st))];
  return h('p', { id }, h('span', { class: 'muted' }, `${label}: `),
    order.filter((st) => byStatus[st]).map((st) => h('span', { dataset: { count: st } }, badge(st), ` ${byStatus[st]} `)));
}

function taskTable(tasks, open, base, pageIndex) {
  if (tasks.length === 0) return h('p', { class: 'muted' }, 'No tasks match.');
  return [
    h('p', { class: 'muted', id: 'tasks-page' }, `Page ${pageIndex + 1}: ${tasks.length} tasks, failed and running first`),
    h('table', {},
      h('thead', {}, h('tr', {}, ['Task', 'Status', 'Attempt', 'Duration', 'Last error / output'].map((t) => h('th', {}, t)))),
      h('tbody', {}, tasks.map((t) => taskRow(t, open, base)))),
  ];
}

function taskRow(t, open, base) {
  const attempts = t.attempts || [];
  const last = attempts[attempts.length - 1] || {};
  return h('tr', { dataset: { task: t.id, status: t.status } },
    h('td', {}, h('code', {}, t.id), h('div', { class: 'muted' }, [t.rollback ? 'rollback' : '', t.service, t.action].filter(Boolean).join(' · '))),
    h('td', {}, badge(t.status)),
    h('td', {}, `${t.attempt ?? 0}/${t.maxAttempts ?? 0}`),
    h('td', {}, last.startedAt ? duration(last.startedAt, last.endedAt) : '—'),
    h('td', {},
      last.error ? h('p', { class: 'error' }, last.error) : null,
      last.exitCode ? h('span', { class: 'muted' }, `exit ${last.exitCode} `) : null,
      attempts.length ? output(t.id, open, base) : null));
}

// output is a task's output tails, read from the task when the user opens
// them (listings carry none).
function output(id, open, base) {
  const body = h('div', {});
  const show = (task) => {
    const as = (task && task.attempts) || [];
    const a = as[as.length - 1] || {};
    replace(body,
      a.stdout ? [h('div', { class: 'muted' }, 'stdout'), h('pre', {}, a.stdout)] : null,
      a.stderr ? [h('div', { class: 'muted' }, 'stderr'), h('pre', {}, a.stderr)] : null,
      task && !a.stdout && !a.stderr ? h('p', { class: 'muted' }, 'no output') : null);
  };
  if (open.has(id)) show(open.get(id));
  const details = h('details', { open: open.has(id) }, h('summary', {}, 'output'), body);
  details.addEventListener('toggle', async () => {
    if (!details.open) {
      open.delete(id);
      return;
    }
    open.set(id, open.get(id));
    replace(body, h('p', { class: 'muted' }, 'Loading…'));
    try {
      const task = await get(`${base}/tasks/${enc(id)}`);
      open.set(id, task);
      show(task);
    } catch (err) {
      replace(body, errorBox(err));
    }
  });
  return details;
}
