// The admin pages for the caller's tenant: its users (create, delete) and
// each user's API keys (create, showing the secret once, and delete).

import { post, enc } from './api.js';
import { h, replace, when, errorBox, secretBox, NAME_PATTERN } from './dom.js';
import { listLoader, confirmDelete } from './ui.js';

export function renderUsers(view, { me }) {
  const list = h('div', { id: 'users' }, h('p', { class: 'muted' }, 'Loading…'));
  const result = h('div', { id: 'user-result' });
  const refresh = listLoader(view, list, 'users', (items) => userTable(items, me, remove));
  const remove = (u) => confirmDelete(`Delete user ${u.name} and all their API keys? Their clusters stay.`,
    `users/${enc(u.name)}`, `User ${u.name} deleted.`, result, refresh);
  replace(view.root,
    h('h1', {}, 'Users', me ? h('span', { class: 'muted' }, ` · tenant ${me.tenant}`) : null),
    list,
    createUserForm(result, refresh),
    result);
  refresh();
}

function userTable(users, me, remove) {
  if (users.length === 0) return h('p', { class: 'muted' }, 'No users.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Name', 'Role', 'Created', 'API keys', ''].map((t) => h('th', {}, t)))),
    h('tbody', {}, users.map((u) => h('tr', { dataset: { user: u.name } },
      h('td', {}, u.name),
      h('td', {}, u.role),
      h('td', {}, when(u.createdAt)),
      h('td', {}, h('a', { href: `#/users/${enc(u.name)}/keys` }, 'Keys')),
      h('td', {}, me && me.user === u.name
        ? h('span', { class: 'muted' }, 'you')
        : h('button', { type: 'button', class: 'danger delete-user', onclick: () => remove(u) }, 'Delete'))))));
}

function createUserForm(result, refresh) {
  const name = h('input', { id: 'user-name', required: true, pattern: NAME_PATTERN });
  const role = h('select', { id: 'user-role' }, h('option', { value: 'user' }, 'user'), h('option', { value: 'admin' }, 'admin'));
  const form = h('form', { id: 'create-user-form', class: 'row' },
    h('label', {}, 'Name', name),
    h('label', {}, 'Role', role),
    h('button', { type: 'submit', id: 'create-user' }, 'Create user'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const u = await post('users', { name: name.value.trim(), role: role.value });
      replace(result, h('p', { class: 'ok' }, `User ${u.name} (${u.role}) created. `,
        h('a', { href: `#/users/${enc(u.name)}/keys` }, 'Create an API key for them.')));
      name.value = '';
      await refresh();
    } catch (err) {
      replace(result, errorBox(err));
    }
  });
  return h('section', { class: 'card' }, h('h2', {}, 'New user'), form);
}

// renderKeys lists a user's keys. A new key's secret is shown in this view
// only; the list shows ids, never secrets.
export function renderKeys(view, { user, me }) {
  const base = `users/${enc(user)}/keys`;
  const list = h('div', { id: 'keys' }, h('p', { class: 'muted' }, 'Loading…'));
  const result = h('div', { id: 'key-result' });
  const refresh = listLoader(view, list, base, (items) => keyTable(items, me, remove));
  const remove = (k) => {
    const own = me && k.id === me.keyId;
    const message = own
      ? `Delete key ${k.id}? It is the key you are logged in with: you will be logged out.`
      : `Delete key ${k.id} of ${user}? Anything using it stops working.`;
    return confirmDelete(message, `${base}/${enc(k.id)}`, `Key ${k.id} deleted.`, result, refresh);
  };
  const create = h('button', { type: 'button', id: 'create-key' }, 'Create key');
  create.addEventListener('click', async () => {
    create.disabled = true;
    try {
      const key = await post(base);
      replace(result, secretBox(`New API key for ${user}`, key));
      await refresh();
    } catch (err) {
      replace(result, errorBox(err));
    } finally {
      create.disabled = false;
    }
  });
  replace(view.root,
    h('p', {}, h('a', { href: '#/users' }, '← Users')),
    h('h1', {}, `API keys of ${user}`),
    h('div', { class: 'row' }, create),
    result,
    list);
  refresh();
}

function keyTable(keys, me, remove) {
  if (keys.length === 0) return h('p', { class: 'muted' }, 'No keys.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Key', 'Created', ''].map((t) => h('th', {}, t)))),
    h('tbody', {}, keys.map((k) => h('tr', { dataset: { key: k.id } },
      h('td', {}, h('code', {}, k.id), me && me.keyId === k.id ? h('span', { class: 'muted' }, ' (this session)') : null),
      h('td', {}, when(k.createdAt)),
      h('td', {}, h('button', { type: 'button', class: 'danger delete-key', onclick: () => remove(k) }, 'Delete'))))));
}
