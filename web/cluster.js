// One cluster: its status, the latest job's progress with the stage view,
// the nodes grouped by layout, the jobs, and the actions.

import { get, post, del, enc } from './api.js';
import { h, replace, badge, progressBar, stageView, when, errorBox } from './dom.js';
import { confirmAction } from './ui.js';
import { healthCard, eventList } from './health.js';
import { driftCard } from './drift.js';
import { layoutPicture } from './layout.js';

// EVENTS is how many of the latest events the page shows.
const EVENTS = 20;

const ENDED = new Set(['SUCCEEDED', 'FAILED', 'ABORTED']);

// CLUSTER_ID is the form of the ids heddle gives clusters; anything else in
// #/clusters/... is taken for a name.
const CLUSTER_ID = /^c[0-9a-f]{16,}$/;

export function renderCluster(view, { id }) {
  if (!CLUSTER_ID.test(id)) {
    // #/clusters/NAME: the same look-up as the CLI's (GET
    // /v1/clusters?name=) finds the live cluster of that name.
    replace(view.root, h('p', { class: 'muted' }, 'Loading…'));
    byName(id).then((found) => {
      if (view.stopped) return;
      if (found) location.replace(`#/clusters/${enc(found)}`);
      else replace(view.root, h('p', { class: 'error' }, `No live cluster is named ${id}.`), h('p', {}, h('a', { href: '#/clusters' }, '← Clusters')));
    });
    return;
  }
  const top = h('div', { id: 'cluster-top' }, h('p', { class: 'muted' }, 'Loading…'));
  const live = h('div', { id: 'cluster-live' });
  const result = h('div', { id: 'action-result' });
  const base = `clusters/${enc(id)}`;
  const refresh = async () => {
    try {
      const [c, jobs] = await Promise.all([get(base), get(`${base}/jobs`)]);
      const evs = await latestEvents(base);
      if (view.stopped) return;
      replace(top, clusterInfo(c));
      replace(live, progressCard(c), healthCard(c, () => run('Verify', () => post(`${base}/verify`, {}))),
        driftCard(c, () => run('Drift check', () => post(`${base}/drift`, {})),
          () => run('Repair', () => post(`${base}/repair`, {}))),
        nodeGroups(c), jobList(id, jobs.items || []), eventList(evs));
    } catch (err) {
      if (!view.stopped) replace(top, errorBox(err));
    }
  };
  // run sends one action and shows its job (or the API's error).
  const run = async (label, call) => {
    replace(result, h('p', { class: 'muted' }, `${label}…`));
    try {
      const res = await call();
      const job = res && res.job;
      replace(result, h('p', {}, `${label}: submitted`, job ? [' as job ', h('a', { href: `#/clusters/${enc(id)}/jobs/${enc(job.id)}` }, job.id)] : null));
      await refresh();
    } catch (err) {
      replace(result, errorBox(err));
    }
  };
  replace(view.root,
    h('p', {}, h('a', { href: '#/clusters' }, '← Clusters')),
    top,
    actions(base, run),
    result,
    live);
  view.every(2000, refresh);
}

// byName is the id of the live cluster named name, or null.
async function byName(name) {
  try {
    const page = await get(`clusters?name=${enc(name)}`);
    const items = page.items || [];
    return items.length === 1 ? items[0].id : null;
  } catch {
    return null;
  }
}

// latestEvents reads the cluster's events, oldest first, and keeps the
// last EVENTS (a cluster keeps 30 days of them: the pages are followed).
async function latestEvents(base) {
  let out = [];
  let cursor = '';
  for (;;) {
    const page = await get(`${base}/events?limit=1000${cursor ? `&cursor=${enc(cursor)}` : ''}`);
    out = out.concat(page.items || []).slice(-EVENTS);
    if (!page.nextCursor) return out;
    cursor = page.nextCursor;
  }
}

function clusterInfo(c) {
  return h('section', { class: 'card', id: 'cluster-info', dataset: { status: c.status } },
    h('h1', {}, c.name, ' ', badge(c.status)),
    c.statusMessage ? h('p', { id: 'status-message' }, c.statusMessage) : null,
    h('table', {}, h('tbody', {},
      row('ID', c.id),
      row('Template', c.template ? `${c.template.name} v${c.template.version}` : '—'),
      row('Provider', c.provider || '—'),
      row('Services', (c.services || []).join(', ') || '—'),
      row('Nodes', h('span', { id: 'node-count' }, String(c.nodeCount ?? 0))),
      row('Owner', c.owner || '—'),
      row('Created', when(c.createdAt)),
      row('Lease expires', h('span', { id: 'lease' }, when(c.expiresAt))))));
}

function row(label, value) {
  return h('tr', {}, h('th', {}, label), h('td', {}, value));
}

function progressCard(c) {
  const p = c.progress;
  if (!p) return null;
  return h('section', { class: 'card', id: 'progress', dataset: { operation: p.operation, status: p.status, job: p.jobId } },
    h('h2', {}, 'Latest job: ', p.operation, ' ', badge(p.status)),
    h('p', {}, progressBar(p.done, p.total), ' ',
      h('a', { href: `#/clusters/${enc(c.id)}/jobs/${enc(p.jobId)}` }, ENDED.has(p.status) ? 'tasks' : 'watch the tasks')),
    stageView(p.stages));
}

// layoutKey groups nodes that share hardware, image and services.
function layoutKey(n) {
  return [n.hardwareType, n.imageType, [...(n.services || [])].sort().join(',')].join('|');
}

// serviceStates shows each service's recorded run state on a node; a failed
// one says which action failed and why (as a tooltip).
function serviceStates(n) {
  const states = n.serviceStates || {};
  return (n.services || []).map((s) => {
    const st = states[s];
    if (!st) return h('div', {}, s, ' ', h('span', { class: 'muted' }, 'unknown'));
    const title = st.state === 'failed' ? `${st.action} failed: ${st.message || ''}` : `after ${st.action} in job ${st.jobId}`;
    return h('div', { title, dataset: { service: s, state: st.state } }, s, ' ', h('span', { class: `runstate ${st.state}` }, st.state));
  });
}

// nodeGroups shows the cluster's layout (every live node, counted by layout
// and by status) and its first nodes, grouped; a large cluster's view
// carries only the first nodes.
function nodeGroups(c) {
  const nodes = c.nodes || [];
  const layout = c.layout || [];
  const total = layout.reduce((sum, g) => sum + g.count, 0);
  const summary = h('div', { id: 'layout' },
    layoutPicture(layout, 'layout-picture'),
    h('table', {},
      h('thead', {}, h('tr', {}, ['Nodes', 'Services', 'Hardware', 'Image'].map((t) => h('th', {}, t)))),
      h('tbody', {}, layout.map((g) => h('tr', { dataset: { layout: (g.services || []).join(',') } },
        h('td', {}, String(g.count)), h('td', {}, (g.services || []).join(', ') || '—'), h('td', {}, g.hardwareType), h('td', {}, g.imageType))))),
    h('p', { id: 'node-status' }, Object.entries(c.nodeStatus || {}).map(([st, n]) => [badge(st), ` ${n} `])),
    c.nodesOmitted ? h('p', { class: 'muted', id: 'nodes-omitted' }, `Below: the first ${nodes.length} nodes; ${c.nodesOmitted} more (heddle clusters nodes ${c.id} --all).`) : null);
  const groups = new Map();
  for (const n of nodes) {
    const k = layoutKey(n);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(n);
  }
  return h('section', { class: 'card', id: 'nodes' },
    h('h2', {}, `Nodes (${total})`),
    nodes.length === 0 ? h('p', { class: 'muted' }, 'No nodes.') : summary,
    [...groups.values()].map((group) => {
      const first = group[0];
      return h('div', { class: 'node-group' },
        h('h3', {}, `${(first.services || []).join(', ') || 'no services'} `,
          h('span', { class: 'muted' }, `· ${first.hardwareType} / ${first.imageType} · ${group.length} node${group.length === 1 ? '' : 's'}`)),
        h('table', {},
          h('thead', {}, h('tr', {}, ['#', 'Node', 'Hostname', 'Status', 'Services', 'Addresses'].map((t) => h('th', {}, t)))),
          h('tbody', {}, group.map((n) => h('tr', { dataset: { node: n.id } },
            h('td', {}, String(n.num)),
            h('td', {}, n.id),
            h('td', {}, n.hostname || '—'),
            h('td', {}, badge(n.status)),
            h('td', { class: 'service-states' }, serviceStates(n)),
            h('td', {}, Object.entries(n.addresses || {}).map(([k, v]) => h('div', {}, h('span', { class: 'muted' }, `${k} `), v))))))));
    }));
}

function jobList(id, jobs) {
  if (jobs.length === 0) return null;
  return h('section', { class: 'card', id: 'jobs' },
    h('h2', {}, 'Jobs'),
    h('table', {},
      h('thead', {}, h('tr', {}, ['Job', 'Operation', 'Status', 'Tasks', 'Started', 'Took'].map((t) => h('th', {}, t)))),
      h('tbody', {}, jobs.map((j) => h('tr', {},
        h('td', {}, h('a', { href: `#/clusters/${enc(id)}/jobs/${enc(j.id)}` }, j.id)),
        h('td', {}, j.operation),
        h('td', {}, badge(j.status)),
        h('td', {}, `${j.taskDone ?? 0}/${j.taskTotal ?? 0}`),
        h('td', {}, when(j.startedAt || j.createdAt)),
        h('td', {}, j.endedAt && j.startedAt ? `${((new Date(j.endedAt) - new Date(j.startedAt)) / 1000).toFixed(1)} s` : '—'))))));
}

// actions is rendered once (the live part below refreshes on its own), so
// what the user types survives the polling.
function actions(base, run) {
  const expandCount = h('input', { id: 'expand-count', type: 'number', min: 1, value: 1 });
  const shrinkCount = h('input', { id: 'shrink-count', type: 'number', min: 1, value: 1 });
  const services = h('input', { id: 'action-services', placeholder: 'all', size: 16 });
  const restart = h('input', { type: 'checkbox', id: 'reconfigure-restart' });
  const leaseBy = h('input', { id: 'lease-by', value: '24h', size: 6 });
  const batchSize = h('input', { id: 'batch-size', type: 'number', min: 1, value: 1 });
  const named = () => services.value.split(',').map((s) => s.trim()).filter(Boolean);
  // Naming no service means all of them: the field is left out.
  const body = (extra = {}) => (named().length ? { services: named(), ...extra } : extra);
  const button = (id, label, onClick, cls) => h('button', { type: 'button', id, class: cls || false, onclick: onClick }, label);

  return h('section', { class: 'card', id: 'actions' },
    h('h2', {}, 'Actions'),
    h('div', { class: 'row' },
      h('label', {}, 'Expand by', expandCount),
      button('expand', 'Expand', () => run('Expand', () => post(`${base}/expand`, { count: Number(expandCount.value) }))),
      h('label', {}, 'Shrink by', shrinkCount),
      button('shrink', 'Shrink', async () => {
        const n = Number(shrinkCount.value);
        if (await confirmAction(`Remove ${n} node${n === 1 ? '' : 's'} from this cluster? Their data is lost.`, 'Shrink')) {
          run('Shrink', () => post(`${base}/shrink`, { count: n }));
        }
      }, 'danger')),
    h('div', { class: 'row' },
      h('label', {}, 'Services (comma-separated)', services),
      button('start', 'Start', () => run('Start', () => post(`${base}/start`, body())), 'secondary'),
      button('stop', 'Stop', async () => {
        if (await confirmAction(`Stop ${named().join(', ') || 'all services'}?`, 'Stop')) {
          run('Stop', () => post(`${base}/stop`, body()));
        }
      }, 'secondary'),
      button('restart', 'Restart', () => run('Restart', () => post(`${base}/restart`, body())), 'secondary'),
      h('label', { class: 'inline' }, restart, ' restart after'),
      button('reconfigure', 'Reconfigure', () => run('Reconfigure',
        () => post(`${base}/reconfigure`, body({ restart: restart.checked }))), 'secondary'),
      h('label', {}, 'Batch size', batchSize),
      button('rolling-restart', 'Rolling restart', () => run('Rolling restart',
        () => post(`${base}/rolling-restart`, body(positive('batchSize', batchSize)))), 'secondary')),
    serviceChanges(base, run),
    h('div', { class: 'row' },
      h('label', {}, 'Extend lease by', leaseBy),
      button('extend-lease', 'Extend lease', () => run('Extend lease', () => post(`${base}/lease`, { by: leaseBy.value.trim() })), 'secondary'),
      button('delete', 'Delete cluster', async () => {
        if (await confirmAction('Delete this cluster and all its nodes? This cannot be undone.', 'Delete')) {
          run('Delete', () => del(base));
        }
      }, 'danger')));
}

// positive is {name: n} for a number input holding n > 0, else {} (the API's
// default).
function positive(name, input) {
  const n = Number(input.value);
  return n > 0 ? { [name]: n } : {};
}

function serviceList(input) {
  return input.value.split(',').map((s) => s.trim()).filter(Boolean);
}

// serviceChanges adds or removes services and syncs the cluster to its
// template's latest (or a given) version.
function serviceChanges(base, run) {
  const services = h('input', { id: 'change-services', placeholder: 'e.g. kv, web', size: 16 });
  const maxNewNodes = h('input', { id: 'max-new-nodes', type: 'number', min: 0, value: 0 });
  const version = h('input', { id: 'sync-version', type: 'number', min: 0, value: 0 });
  const button = (id, label, onClick, cls) => h('button', { type: 'button', id, class: cls, onclick: onClick }, label);
  return [
    h('div', { class: 'row' },
      h('label', {}, 'Services to add or remove (comma-separated)', services),
      h('label', {}, 'Max new nodes', maxNewNodes),
      button('add-services', 'Add services', () => run('Add services',
        () => post(`${base}/add-services`, { services: serviceList(services), ...positive('maxNewNodes', maxNewNodes) })), 'secondary'),
      button('remove-services', 'Remove services', async () => {
        const named = serviceList(services);
        if (await confirmAction(`Remove ${named.join(', ') || '(no services named)'} from this cluster? Their data on its nodes is lost.`, 'Remove')) {
          run('Remove services', () => post(`${base}/remove-services`, { services: named }));
        }
      }, 'danger')),
    h('div', { class: 'row' },
      h('label', {}, 'Template version (0 = latest)', version),
      button('sync', 'Sync to template', () => run('Sync to template',
        () => post(`${base}/sync`, positive('templateVersion', version))), 'secondary')),
  ];
}
