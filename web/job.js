// One job, live: its status, the stage view and every task with its
// attempt, duration, last error and output tails; abort, pause, resume and
// retry.

import { get, post, enc } from './api.js';
import { h, replace, badge, progressBar, stageView, when, duration, errorBox } from './dom.js';
import { confirmAction } from './ui.js';

// ALLOWED says in which job states each control is accepted (the engine
// refuses the others); the buttons are enabled accordingly.
const ALLOWED = {
  abort: ['RUNNING', 'PAUSED'],
  pause: ['RUNNING'],
  resume: ['PAUSED'],
  retry: ['FAILED', 'ABORTED'],
};

export function renderJob(view, { id, job }) {
  const base = `clusters/${enc(id)}/jobs/${enc(job)}`;
  const live = h('div', { id: 'job-live' }, h('p', { class: 'muted' }, 'Loading…'));
  const result = h('div', { id: 'job-result' });
  // Which tasks' output the user opened: kept across refreshes.
  const open = new Set();
  const refresh = async () => {
    try {
      const j = await get(base);
      if (view.stopped) return;
      for (const [verb, button] of Object.entries(buttons)) button.disabled = !ALLOWED[verb].includes(j.status);
      replace(live, jobInfo(j), taskTable(j.tasks || [], open));
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
    live);
  view.every(2000, refresh);
}

function jobInfo(j) {
  return h('section', { class: 'card', id: 'job-info', dataset: { status: j.status } },
    h('h1', {}, `Job ${j.id}: ${j.operation} `, badge(j.status)),
    j.statusMessage ? h('p', {}, j.statusMessage) : null,
    h('p', {}, progressBar(j.taskDone, j.taskTotal),
      h('span', { class: 'muted' }, ` · requested by ${j.requestedBy || '—'} · started ${when(j.startedAt)} · took ${duration(j.startedAt, j.endedAt)}`)),
    stageView(j.stages));
}

function taskTable(tasks, open) {
  const work = tasks.filter((t) => !t.rollback);
  const rollback = tasks.filter((t) => t.rollback);
  return [
    h('section', { class: 'card', id: 'tasks' }, h('h2', {}, `Tasks (${work.length})`), tasksOf(work, open)),
    rollback.length
      ? h('section', { class: 'card', id: 'rollback-tasks' },
        keepOpen(h('details', { open: open.has('rollback') },
          h('summary', {}, `Rollback tasks (${rollback.length}), run only if the job fails`), tasksOf(rollback, open)), 'rollback', open))
      : null,
  ];
}

function tasksOf(tasks, open) {
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Task', 'Status', 'Attempt', 'Duration', 'Last error / output'].map((t) => h('th', {}, t)))),
    h('tbody', {}, tasks.map((t) => taskRow(t, open))));
}

function taskRow(t, open) {
  const attempts = t.attempts || [];
  const last = attempts[attempts.length - 1] || {};
  return h('tr', { dataset: { task: t.id, status: t.status } },
    h('td', {}, h('code', {}, t.id), h('div', { class: 'muted' }, [t.service, t.action].filter(Boolean).join(' · '))),
    h('td', {}, badge(t.status)),
    h('td', {}, `${t.attempt ?? 0}/${t.maxAttempts ?? 0}`),
    h('td', {}, last.startedAt ? duration(last.startedAt, last.endedAt) : '—'),
    h('td', {},
      last.error ? h('p', { class: 'error' }, last.error) : null,
      last.exitCode ? h('span', { class: 'muted' }, `exit ${last.exitCode} `) : null,
      outputTails(t.id, last, open)));
}

function outputTails(id, attempt, open) {
  if (!attempt.stdout && !attempt.stderr) return null;
  return keepOpen(h('details', { open: open.has(id) },
    h('summary', {}, 'output'),
    attempt.stdout ? [h('div', { class: 'muted' }, 'stdout'), h('pre', {}, attempt.stdout)] : null,
    attempt.stderr ? [h('div', { class: 'muted' }, 'stderr'), h('pre', {}, attempt.stderr)] : null), id, open);
}

// keepOpen records whether the user opened a details element, so that the
// next refresh renders it the same way.
function keepOpen(details, key, open) {
  details.addEventListener('toggle', () => (details.open ? open.add(key) : open.delete(key)));
  return details;
}
