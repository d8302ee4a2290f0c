// Small DOM helpers. Text always goes in as text nodes (never as HTML), so
// nothing the API answers can inject markup.

// NAME_PATTERN is the pattern of an input for a name: what the API accepts
// as an entity, cluster, tenant or user name (domain.ValidName).
export const NAME_PATTERN = '[A-Za-z0-9][A-Za-z0-9_.\\-]{0,62}';

// h builds an element: h('a', {href: '#/x', class: 'y'}, 'text', child).
// Attributes starting with "on" are event listeners; false and null
// attributes and children are skipped; arrays of children are flattened.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
    } else if (name === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (name === 'value') {
      el.value = value;
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// replace empties el and fills it with children.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function badge(status) {
  return h('span', { class: `status ${status || ''}`, dataset: { status: status || '' } }, status || '—');
}

export function progressBar(done, total) {
  return h('span', { class: 'progress' },
    h('progress', { max: Math.max(total || 0, 1), value: done || 0 }),
    ` ${done || 0}/${total || 0}`);
}

// stageView shows each stage of a job as a small box: done, running, failed.
export function stageView(stages) {
  if (!stages || stages.length === 0) return null;
  return h('div', { class: 'stages' }, stages.map((s) => {
    let state = '';
    if (s.failed > 0) state = 'failed';
    else if (s.done >= s.total) state = 'done';
    else if (s.running > 0) state = 'running';
    const title = `stage ${s.stage}: ${s.done}/${s.total} done, ${s.running} running, ${s.failed} failed`;
    return h('span', { class: `stage ${state}`, title }, `${s.stage}: ${s.done}/${s.total}`);
  }));
}

export function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function duration(startIso, endIso) {
  if (!startIso) return '—';
  const ms = (endIso ? new Date(endIso) : new Date()) - new Date(startIso);
  if (!(ms >= 0)) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

// errorBox shows an API error: its message and, when the envelope has them,
// the problems by field path and the referrers.
export function errorBox(err) {
  return h('div', { class: 'error', role: 'alert' },
    h('p', { class: 'message' }, err.message),
    problemList(err.details),
    err.referrers && err.referrers.length
      ? h('p', {}, 'Used by: ', err.referrers.map((r) => `${r.kind}/${r.name}`).join(', '))
      : null);
}

export function problemList(details) {
  if (!details || details.length === 0) return null;
  return h('ul', { class: 'problems' }, details.map((p) =>
    h('li', { dataset: { field: p.field || '' } },
      h('code', {}, p.field || '(body)'), ': ', p.message, p.code ? h('span', { class: 'muted' }, ` (${p.code})`) : null)));
}

// secretBox shows a new API key's secret, which the API returns only in the
// answer that creates it: the page keeps it nowhere else, so it is gone once
// the user navigates away.
export function secretBox(title, key) {
  return h('section', { class: 'card secret', id: 'new-key', role: 'status' },
    h('h2', {}, title),
    h('code', { id: 'new-key-secret' }, key.secret),
    h('p', {}, h('strong', {}, 'Copy it now: it will not be shown again.'),
      ` Key ${key.id} of user ${key.user}${key.tenantId ? ` in tenant ${key.tenantId}` : ''}; it works as a bearer token and as the dashboard login.`));
}
