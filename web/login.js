// The login page: the user pastes an API key, which is checked against
// GET /v1/me and kept in session storage only (gone when the tab closes).

import { request, setKey } from './api.js';
import { h, replace, errorBox } from './dom.js';

export function renderLogin(view, { onLogin }) {
  const input = h('input', { id: 'key', type: 'password', autocomplete: 'off', placeholder: 'hdl_…', required: true });
  const out = h('div', { id: 'login-result' });
  const form = h('form', { id: 'login', class: 'login' },
    h('h1', {}, 'Log in'),
    h('p', { class: 'muted' }, 'Paste an API key. It stays in this tab (session storage) and is sent only to this API.'),
    h('label', {}, 'API key', input),
    h('div', { class: 'row' }, h('button', { type: 'submit', id: 'login-submit' }, 'Log in')),
    out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    try {
      const me = await request('GET', 'me', undefined, key);
      setKey(key);
      onLogin(me);
    } catch (err) {
      replace(out, errorBox(err));
    }
  });
  replace(view.root, h('section', { class: 'card' }, form));
  input.focus();
}
