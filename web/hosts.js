// A static provider's pool (#/providers/NAME/hosts): every host with its
// state (FREE, TAKEN by which cluster and node, WIPING, DIRTY with the
// reason, drained), the actions on one host (drain, readmit, remove), and a
// form that registers a host. Private keys go to the API once and are never
// shown again: the API returns none.

import { get, post, enc } from './api.js';
import { h, replace, badge, when, errorBox } from './dom.js';
import { confirmDelete } from './ui.js';

export function renderHosts(view, { provider }) {
  const base = `providers/${enc(provider)}/hosts`;
  const list = h('div', { id: 'hosts' }, h('p', { class: 'muted' }, 'Loading…'));
  const more = h('button', { type: 'button', id: 'more-hosts', class: 'secondary', hidden: true }, 'More');
  const result = h('div', { id: 'host-result', 'aria-live': 'polite' });
  let hosts = [];
  let next = '';

  // load reads the first page again (or, with more, the next one). The
  // page is polled: hosts change as clusters take and give them back.
  const load = async (appendNext = false) => {
    try {
      const page = await get(appendNext && next ? `${base}?cursor=${enc(next)}` : base);
      if (view.stopped) return;
      hosts = appendNext ? hosts.concat(page.items || []) : (page.items || []);
      next = page.nextCursor || '';
      more.hidden = !next;
      replace(list, hostTable(hosts, act));
    } catch (err) {
      if (!view.stopped) replace(list, errorBox(err));
    }
  };
  more.addEventListener('click', () => load(true));

  const act = async (host, action) => {
    if (action === 'remove') {
      await confirmDelete(`Remove host ${host.id} from the pool of ${provider}?`, `${base}/${enc(host.id)}`,
        `Host ${host.id} removed.`, result, () => load());
      return;
    }
    try {
      await post(`${base}/${enc(host.id)}/${action}`);
      replace(result, h('p', { class: 'ok' }, action === 'drain'
        ? `Host ${host.id} drained: no new node takes it.`
        : `Host ${host.id} is back in the pool.`));
    } catch (err) {
      replace(result, errorBox(err));
    }
    await load();
  };

  replace(view.root,
    h('p', {}, h('a', { href: `#/catalog/providers/${enc(provider)}` }, `← provider ${provider}`)),
    h('h1', {}, `Hosts of ${provider}`),
    h('p', { class: 'muted' }, 'A node takes a free host; deleting the node runs the provider\'s wipe script and returns the host, or leaves it DIRTY when the wipe fails.'),
    list, more, result, registerForm(base, result, () => load()));
  view.every(3000, () => load());
}

function hostTable(hosts, act) {
  if (hosts.length === 0) return h('p', { class: 'muted' }, 'No hosts yet: register one below, or import an inventory with `heddle hosts import`.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Host', 'Address', 'User', 'State', 'Held by', 'Host key', 'Reason', ''].map((t) => h('th', {}, t)))),
    h('tbody', {}, hosts.map((host) => h('tr', { dataset: { host: host.id, status: host.status, drained: String(!!host.drained) } },
      h('td', {}, host.id),
      h('td', {}, `${host.address}:${host.port}`),
      h('td', {}, host.user),
      h('td', { class: 'state' }, badge(host.status), host.drained ? h('span', { class: 'muted drained' }, ' drained') : null),
      h('td', { class: 'claim' }, host.claim
        ? [h('a', { href: `#/clusters/${enc(host.claim.clusterId)}` }, host.claim.clusterId), h('br'),
          h('span', { class: 'muted' }, `node ${host.claim.nodeId} since ${when(host.claim.takenAt)}`)]
        : '—'),
      h('td', { class: 'hostkey' }, host.hostKey
        ? h('code', { title: host.hostKey }, `${host.hostKey.slice(0, 24)}… (${host.hostKeySource})`)
        : h('span', { class: 'muted' }, 'pinned on first contact')),
      h('td', { class: 'reason' }, host.reason || '—'),
      h('td', { class: 'actions' },
        host.drained ? null : h('button', { type: 'button', class: 'secondary drain-host', onclick: () => act(host, 'drain') }, 'Drain'),
        host.status === 'DIRTY' || (host.drained && (host.status === 'FREE' || host.status === 'TAKEN'))
          ? h('button', { type: 'button', class: 'secondary readmit-host', onclick: () => act(host, 'readmit') }, 'Readmit')
          : null,
        h('button', { type: 'button', class: 'danger remove-host', onclick: () => act(host, 'remove') }, 'Remove'))))));
}

function registerForm(base, result, refresh) {
  const id = h('input', { id: 'host-id', required: true });
  const address = h('input', { id: 'host-address', required: true, placeholder: '10.0.0.7' });
  const port = h('input', { id: 'host-port', type: 'number', value: '22', min: 1, max: 65535 });
  const user = h('input', { id: 'host-user', required: true, placeholder: 'admin' });
  const key = h('textarea', { id: 'host-private-key', required: true, rows: 4, cols: 64, placeholder: '-----BEGIN OPENSSH PRIVATE KEY-----' });
  const hostKey = h('input', { id: 'host-host-key', size: 60, placeholder: 'ssh-ed25519 AAAA… or a known_hosts line (optional)' });
  const check = h('input', { id: 'host-check', type: 'checkbox' });
  const form = h('form', { id: 'register-host-form' },
    h('div', { class: 'row' },
      h('label', {}, 'Id', id), h('label', {}, 'Address', address), h('label', {}, 'Port', port), h('label', {}, 'User', user)),
    h('div', { class: 'row' }, h('label', {}, 'Private key (sealed at rest, never shown again)', key)),
    h('div', { class: 'row' }, h('label', {}, 'Host key', hostKey),
      h('label', { class: 'inline' }, check, ' log in first (check)')),
    h('button', { type: 'submit', id: 'register-host' }, 'Register host'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const spec = { id: id.value.trim(), address: address.value.trim(), port: Number(port.value) || 0, user: user.value.trim(), privateKey: key.value };
    if (hostKey.value.trim()) spec.hostKey = hostKey.value.trim();
    try {
      const res = await post(base, { hosts: [spec], check: check.checked });
      const got = res.items[0];
      replace(result, h('p', { class: 'ok' }, `Host ${got.id} ${got.result}.`, got.note ? ` ${got.note}` : ''));
      key.value = '';
      await refresh();
    } catch (err) {
      replace(result, errorBox(err));
    }
  });
  return h('section', { class: 'card' }, h('h2', {}, 'Register a host'), form);
}
