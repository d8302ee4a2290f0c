// The superadmin's pages: the tenants with their quotas and usage, creating
// one (its first admin's key is shown once), changing its quotas and
// workers, and deleting it.

import { get, post, put, enc } from './api.js';
import { h, replace, when, errorBox, secretBox, NAME_PATTERN } from './dom.js';
import { listLoader, confirmDelete } from './ui.js';

export function renderTenants(view) {
  const list = h('div', { id: 'tenants' }, h('p', { class: 'muted' }, 'Loading…'));
  const result = h('div', { id: 'tenant-result' });
  const refresh = listLoader(view, list, 'tenants', (items) => tenantTable(items, remove));
  const remove = (t) => confirmDelete(`Delete tenant ${t.id}, its users, keys and catalog? It must have no clusters.`,
    `tenants/${enc(t.id)}`, `Tenant ${t.id} deleted.`, result, refresh);
  replace(view.root, h('h1', {}, 'Tenants'), list, createTenantForm(result, refresh), result);
  refresh();
}

function used(n, max) {
  return `${n ?? 0} / ${max ?? 0}`;
}

function tenantTable(tenants, remove) {
  if (tenants.length === 0) return h('p', { class: 'muted' }, 'No tenants.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Tenant', 'Clusters', 'Nodes', 'Workers', 'Version', 'Created', ''].map((t) => h('th', {}, t)))),
    h('tbody', {}, tenants.map((t) => h('tr', { dataset: { tenant: t.id } },
      h('td', {}, h('a', { href: `#/tenants/${enc(t.id)}` }, t.id), t.description ? h('div', { class: 'muted' }, t.description) : null),
      h('td', { class: 'clusters' }, used(t.usage && t.usage.clusters, t.maxClusters)),
      h('td', { class: 'nodes' }, used(t.usage && t.usage.nodes, t.maxNodes)),
      h('td', { class: 'workers' }, String(t.workers ?? 0)),
      h('td', {}, String(t.version ?? '')),
      h('td', {}, when(t.createdAt)),
      h('td', {}, h('button', { type: 'button', class: 'danger delete-tenant', onclick: () => remove(t) }, 'Delete'))))));
}

function numberInput(id, value) {
  return h('input', { id, type: 'number', min: 0, value, required: true });
}

function createTenantForm(result, refresh) {
  const id = h('input', { id: 'tenant-id', required: true, pattern: NAME_PATTERN });
  const maxClusters = numberInput('tenant-max-clusters', 5);
  const maxNodes = numberInput('tenant-max-nodes', 20);
  const workers = numberInput('tenant-workers', 4);
  const admin = h('input', { id: 'tenant-admin', placeholder: 'admin', pattern: NAME_PATTERN });
  const form = h('form', { id: 'create-tenant-form', class: 'row' },
    h('label', {}, 'Tenant id', id),
    h('label', {}, 'Max clusters', maxClusters),
    h('label', {}, 'Max nodes', maxNodes),
    h('label', {}, 'Workers', workers),
    h('label', {}, 'First admin', admin),
    h('button', { type: 'submit', id: 'create-tenant' }, 'Create tenant'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = {
      id: id.value.trim(), maxClusters: Number(maxClusters.value), maxNodes: Number(maxNodes.value), workers: Number(workers.value),
    };
    if (admin.value.trim()) body.admin = admin.value.trim();
    try {
      const res = await post('tenants', body);
      replace(result, h('p', { class: 'ok' }, `Tenant ${res.tenant.id} created.`), adminKey(res));
      id.value = '';
    } catch (err) {
      // 503 onboarding_incomplete: the tenant exists, and its admin key is
      // in this answer only.
      replace(result, errorBox(err), adminKey(err.body || {}));
    }
    await refresh();
  });
  return h('section', { class: 'card' }, h('h2', {}, 'New tenant'), form);
}

function adminKey(res) {
  return res.adminKey ? secretBox(`API key of ${res.adminKey.user}, the first admin of ${res.adminKey.tenantId}`, res.adminKey) : null;
}

// renderTenant edits one tenant's description, quotas and workers. The PUT
// carries the version read here, so a change made meanwhile is refused
// (409) rather than overwritten.
export async function renderTenant(view, { tenant, go }) {
  const out = h('div', { id: 'tenant-edit' }, h('p', { class: 'muted' }, 'Loading…'));
  replace(view.root, h('p', {}, h('a', { href: '#/tenants' }, '← Tenants')), h('h1', {}, `Tenant ${tenant}`), out);
  try {
    const t = await get(`tenants/${enc(tenant)}`);
    if (!view.stopped) replace(out, tenantForm(t, go));
  } catch (err) {
    if (!view.stopped) replace(out, errorBox(err));
  }
}

function tenantForm(t, go) {
  const description = h('input', { id: 'tenant-description', value: t.description || '', size: 40 });
  const maxClusters = numberInput('tenant-max-clusters', t.maxClusters);
  const maxNodes = numberInput('tenant-max-nodes', t.maxNodes);
  const workers = numberInput('tenant-workers', t.workers);
  const result = h('div', { id: 'tenant-result' });
  const form = h('form', { id: 'tenant-form' },
    h('p', { class: 'muted' }, `Using ${used(t.usage && t.usage.clusters, t.maxClusters)} clusters and ${used(t.usage && t.usage.nodes, t.maxNodes)} nodes · version ${t.version}`),
    h('div', { class: 'row' },
      h('label', {}, 'Description', description),
      h('label', {}, 'Max clusters', maxClusters),
      h('label', {}, 'Max nodes', maxNodes),
      h('label', {}, 'Workers', workers),
      h('button', { type: 'submit', id: 'save-tenant' }, 'Save')),
    result);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await put(`tenants/${enc(t.id)}`, {
        id: t.id, version: t.version, description: description.value.trim(),
        maxClusters: Number(maxClusters.value), maxNodes: Number(maxNodes.value), workers: Number(workers.value),
      });
      go('#/tenants');
    } catch (err) {
      replace(result, errorBox(err));
    }
  });
  return h('section', { class: 'card' }, form);
}
