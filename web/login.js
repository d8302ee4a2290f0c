// The login page: a "Sign in with ..." button per identity provider heddle
// trusts (signin.js), or an API key pasted, which is checked against
// GET /v1/me and kept in session storage only (gone when the tab closes).

import { request, setKey } from './api.js';
import { h, replace, errorBox } from './dom.js';
import { signInOptions, startSignIn } from './signin.js';

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
  const providers = h('div', { id: 'signin', class: 'signin' });
  replace(view.root, h('section', { class: 'card' }, providers, form));
  input.focus();
  signInOptions().then((options) => {
    const buttons = options.map((o, i) => {
      const b = h('button', { type: 'button', id: `signin-${i}`, class: 'signin-button', disabled: !o.authorizationEndpoint,
        title: o.authorizationEndpoint ? o.issuer : 'the identity provider cannot be reached now' }, `Sign in with ${o.label}`);
      b.addEventListener('click', () => startSignIn(o).catch((err) => replace(out, errorBox(err))));
      return b;
    });
    if (buttons.length) replace(providers, h('h1', {}, 'Sign in'), ...buttons, h('p', { class: 'muted' }, 'or use an API key:'));
  }).catch((err) => replace(providers, errorBox(err)));
}
