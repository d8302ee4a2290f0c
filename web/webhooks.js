// The admin pages for webhooks: the tenant's endpoints (register, showing
// the secret once; delete) and each endpoint's delivery log.

import { post, get, enc } from './api.js';
import { h, replace, when, errorBox, badge } from './dom.js';
import { listLoader, confirmDelete } from './ui.js';

const TYPES = ['cluster.status', 'job.status', 'cluster.verified'];

export function renderWebhooks(view) {
  const list = h('div', { id: 'webhooks' }, h('p', { class: 'muted' }, 'Loading…'));
  const result = h('div', { id: 'webhook-result' });
  const refresh = listLoader(view, list, 'webhooks', (items) => webhookTable(items, remove));
  const remove = (e) => confirmDelete(`Delete webhook ${e.id} (${e.url})? Deliveries under way to it give up.`,
    `webhooks/${enc(e.id)}`, `Webhook ${e.id} deleted.`, result, refresh);
  replace(view.root, h('h1', {}, 'Webhooks'), list, createForm(result, refresh), result);
  refresh();
}

function webhookTable(items, remove) {
  if (items.length === 0) return h('p', { class: 'muted' }, 'No webhooks.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Endpoint', 'Types', 'Pre-start', 'Created', '', ''].map((t) => h('th', {}, t)))),
    h('tbody', {}, items.map((e) => h('tr', { dataset: { webhook: e.id } },
      h('td', {}, e.url, h('div', { class: 'muted' }, e.id)),
      h('td', {}, (e.types || []).join(', ') || (e.preStart ? '—' : 'all')),
      h('td', {}, e.preStart ? 'yes' : 'no'),
      h('td', {}, when(e.createdAt)),
      h('td', {}, h('a', { href: `#/webhooks/${enc(e.id)}` }, 'Deliveries')),
      h('td', {}, h('button', { type: 'button', class: 'danger delete-webhook', onclick: () => remove(e) }, 'Delete'))))));
}

function createForm(result, refresh) {
  const url = h('input', { id: 'webhook-url', required: true, size: 40, placeholder: 'https://hooks.example.com/heddle' });
  const boxes = TYPES.map((t) => h('input', { type: 'checkbox', value: t, class: 'webhook-type' }));
  const preStart = h('input', { type: 'checkbox', id: 'webhook-prestart' });
  const form = h('form', { id: 'create-webhook-form', class: 'row' },
    h('label', {}, 'URL', url),
    boxes.map((b) => h('label', { class: 'inline' }, b, ` ${b.value}`)),
    h('label', { class: 'inline' }, preStart, ' pre-start hook'),
    h('button', { type: 'submit', id: 'create-webhook' }, 'Register'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const types = boxes.filter((b) => b.checked).map((b) => b.value);
      const e = await post('webhooks', { url: url.value.trim(), types, preStart: preStart.checked });
      replace(result, h('section', { class: 'card secret', id: 'new-webhook', role: 'status' },
        h('h2', {}, `Webhook ${e.id}`),
        h('code', { id: 'new-webhook-secret' }, e.secret),
        h('p', {}, h('strong', {}, 'Copy the secret now: it will not be shown again.'),
          ' Deliveries carry Heddle-Signature: t=<time>,v1=<HMAC-SHA256 of "<time>.<body>"> made with it.')));
      url.value = '';
      await refresh();
    } catch (err) {
      replace(result, errorBox(err));
    }
  });
  return h('section', { class: 'card' }, h('h2', {}, 'New webhook'), form);
}

// renderDeliveries shows an endpoint's delivery log, newest first.
export function renderDeliveries(view, { id }) {
  const list = h('div', { id: 'deliveries' }, h('p', { class: 'muted' }, 'Loading…'));
  replace(view.root, h('p', {}, h('a', { href: '#/webhooks' }, '← Webhooks')), h('h1', {}, `Deliveries of ${id}`), list);
  const refresh = async () => {
    try {
      const page = await get(`webhooks/${enc(id)}/deliveries`);
      if (!view.stopped) replace(list, deliveryTable(page.items || []));
    } catch (err) {
      if (!view.stopped) replace(list, errorBox(err));
    }
  };
  view.every(2000, refresh);
}

function deliveryTable(items) {
  if (items.length === 0) return h('p', { class: 'muted' }, 'No deliveries yet.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Event', 'Status', 'Attempts', 'Last answer'].map((t) => h('th', {}, t)))),
    h('tbody', {}, items.map((d) => {
      const last = (d.attempts || [])[(d.attempts || []).length - 1];
      const answer = !last ? '—' : last.status ? `${last.status} ${last.answer || ''}` : last.error || '—';
      return h('tr', { dataset: { status: d.status } },
        h('td', {}, `${d.event.type} ${d.event.previous ? `${d.event.previous} → ` : ''}${d.event.status}`,
          h('div', { class: 'muted' }, when(d.event.at), ' · ', d.event.cluster || '')),
        h('td', {}, badge(d.status)),
        h('td', {}, String((d.attempts || []).length)),
        h('td', {}, h('code', {}, answer)));
    })));
}
