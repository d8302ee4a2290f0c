// The clusters list and the create page (plan preview, then confirm).

import { get, post, enc } from './api.js';
import { h, replace, badge, progressBar, when, errorBox, NAME_PATTERN } from './dom.js';
import { healthBadge } from './health.js';
import { driftBadge } from './drift.js';
import { layoutPicture } from './layout.js';
import { planGraph } from './graph.js';

// renderClusters lists the clusters, polled every 2 s. Busy clusters (with
// an active job) are read one by one for their progress.
export function renderClusters(view) {
  const all = h('input', { type: 'checkbox', id: 'show-all' });
  const table = h('div', { id: 'clusters' }, h('p', { class: 'muted' }, 'Loading…'));
  replace(view.root,
    h('h1', {}, 'Clusters'),
    h('div', { class: 'row' },
      h('a', { href: '#/clusters/new', class: 'button' }, 'New cluster'),
      h('label', { class: 'inline' }, all, ' show terminated')),
    table);
  const refresh = async () => {
    try {
      const page = await get(`clusters${all.checked ? '?all=true' : ''}`);
      const items = page.items || [];
      const progress = await Promise.all(items.map((c) =>
        c.activeJobId ? get(`clusters/${enc(c.id)}`).then((v) => v.progress, () => null) : null));
      if (!view.stopped) replace(table, clusterTable(items, progress));
    } catch (err) {
      if (!view.stopped) replace(table, errorBox(err));
    }
  };
  all.addEventListener('change', refresh);
  view.every(2000, refresh);
}

function clusterTable(items, progress) {
  if (items.length === 0) {
    return h('p', { class: 'muted' }, 'No clusters yet. ', h('a', { href: '#/clusters/new' }, 'Create one.'));
  }
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Name', 'Status', 'Health', 'Drift', 'Nodes', 'Template', 'Owner', 'Progress', 'Lease expires'].map((t) => h('th', {}, t)))),
    h('tbody', {}, items.map((c, i) => h('tr', { dataset: { cluster: c.id, name: c.name } },
      h('td', {}, h('a', { href: `#/clusters/${enc(c.id)}` }, c.name), h('div', { class: 'muted' }, c.id)),
      h('td', {}, badge(c.status), c.statusMessage ? h('div', { class: 'muted' }, c.statusMessage) : null),
      h('td', { class: 'health' }, healthBadge(c.health)),
      h('td', { class: 'drift' }, driftBadge(c.drift)),
      h('td', {}, String(c.nodeCount ?? 0)),
      h('td', {}, c.template ? `${c.template.name} v${c.template.version}` : '—'),
      h('td', {}, c.owner || '—'),
      h('td', {}, progress[i] ? [progress[i].operation, ' ', progressBar(progress[i].done, progress[i].total)] : '—'),
      h('td', {}, when(c.expiresAt))))));
}

// renderCreate asks for a name, a template and a size, shows the plan
// preview of a dry run, and creates the cluster only on Confirm.
export async function renderCreate(view, { go }) {
  const name = h('input', { id: 'cluster-name', required: true, pattern: NAME_PATTERN, value: '' });
  const template = h('select', { id: 'cluster-template', required: true });
  const size = h('input', { id: 'cluster-size', type: 'number', min: 1, value: 3, required: true });
  const preview = h('div', { id: 'preview' });
  const form = h('form', { id: 'create' },
    h('div', { class: 'row' },
      h('label', {}, 'Name', name),
      h('label', {}, 'Template', template),
      h('label', {}, 'Size (nodes)', size),
      h('button', { type: 'submit', id: 'preview-button' }, 'Preview plan')));
  replace(view.root, h('h1', {}, 'New cluster'), h('section', { class: 'card' }, form), preview);

  try {
    const page = await get('clustertemplates');
    replace(template, (page.items || []).map((t) => h('option', { value: t.name }, t.label || t.name)));
  } catch (err) {
    replace(preview, errorBox(err));
  }

  const request = () => ({ name: name.value.trim(), template: template.value, size: Number(size.value) });
  // Any change invalidates the preview: Confirm must create what was shown.
  for (const el of [name, template, size]) el.addEventListener('input', () => replace(preview));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const req = request();
    replace(preview, h('p', { class: 'muted' }, 'Planning…'));
    try {
      const res = await post('clusters?dryRun=true', req);
      replace(preview, previewCard(res, async (button) => {
        button.disabled = true;
        try {
          const created = await post('clusters', req);
          go(`#/clusters/${enc(created.cluster.id)}`);
        } catch (err) {
          button.disabled = false;
          replace(preview, errorBox(err));
        }
      }));
    } catch (err) {
      replace(preview, errorBox(err));
    }
  });
}

function previewCard(res, onConfirm) {
  const pv = res.preview || {};
  const sum = pv.summary || {};
  const confirm = h('button', { type: 'button', id: 'confirm-create' }, 'Confirm and create');
  confirm.addEventListener('click', () => onConfirm(confirm));
  return h('section', { class: 'card', id: 'plan' },
    h('h2', {}, `Plan: ${pv.operation || 'create'} ${res.cluster ? res.cluster.name : ''}`),
    h('p', { id: 'plan-summary' },
      `${sum.workTasks ?? 0} tasks in ${sum.stages ?? 0} stages (${sum.edges ?? 0} dependencies, ${sum.joins ?? 0} joins)`),
    layoutPicture(res.layout || [], 'plan-layout-picture'),
    layoutTable(res.layout || []),
    serviceChanges(pv.diff && pv.diff.services),
    h('div', { class: 'row' }, confirm),
    planGraph(pv));
}

export function layoutTable(groups) {
  if (groups.length === 0) return null;
  return h('table', { id: 'plan-layout' },
    h('thead', {}, h('tr', {}, ['Nodes', 'Services', 'Hardware', 'Image'].map((t) => h('th', {}, t)))),
    h('tbody', {}, groups.map((g) => h('tr', {},
      h('td', {}, String(g.count)),
      h('td', {}, (g.services || []).join(', ')),
      h('td', {}, g.hardwareType),
      h('td', {}, g.imageType)))));
}

function serviceChanges(changes) {
  if (!changes || changes.length === 0) return null;
  return h('p', { class: 'muted' }, changes.map((s) => `${s.service}: ${s.before} → ${s.after} nodes`).join(' · '));
}
