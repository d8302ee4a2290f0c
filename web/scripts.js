// Script resources: the list (latest versions, without content), one
// script's versions with the content of the one selected, and for admins
// an upload of a new version (the same content makes none) and delete,
// which the API refuses while a service runs the script.

import { get, putText, enc } from './api.js';
import { h, replace, when, errorBox, NAME_PATTERN } from './dom.js';
import { listLoader, confirmDelete } from './ui.js';

const ADMINS = new Set(['admin', 'superadmin']);

function shortSum(sum) {
  return sum ? sum.slice(0, 12) : '—';
}

export function renderScripts(view, { me, go }) {
  const list = h('div', { id: 'scripts' }, h('p', { class: 'muted' }, 'Loading…'));
  const refresh = listLoader(view, list, 'scripts', scriptTable);
  replace(view.root,
    h('h1', {}, 'Scripts'),
    h('p', { class: 'muted' }, 'Named, versioned scripts that service actions run with script_resource. ' +
      'A cluster runs the versions that were the latest when it was created or last synced.'),
    list,
    me && ADMINS.has(me.role) ? uploadForm({ go }) : null);
  refresh();
}

function scriptTable(scripts) {
  if (scripts.length === 0) return h('p', { class: 'muted' }, 'No scripts yet.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Name', 'Version', 'Bytes', 'SHA-256', 'Description'].map((t) => h('th', {}, t)))),
    h('tbody', {}, scripts.map((s) => h('tr', { dataset: { script: s.name } },
      h('td', {}, h('a', { href: `#/scripts/${enc(s.name)}` }, s.name)),
      h('td', { class: 'version' }, String(s.version ?? '')),
      h('td', {}, String(s.size ?? '')),
      h('td', {}, h('code', {}, shortSum(s.sha256))),
      h('td', {}, s.description || '')))));
}

// uploadForm PUTs the text (typed, or read from a chosen file) as the
// script's next version and opens the script.
function uploadForm({ go, name: fixed = '', content = '', onSaved }) {
  const name = h('input', { id: 'script-name', required: true, pattern: NAME_PATTERN, value: fixed, readonly: !!fixed });
  const file = h('input', { id: 'script-file', type: 'file' });
  const text = h('textarea', { id: 'script-text', spellcheck: 'false', rows: 14, 'aria-label': 'script text', value: content });
  const result = h('div', { id: 'script-result', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', id: 'upload-script' }, 'Upload');
  file.addEventListener('change', async () => {
    if (file.files.length > 0) text.value = await file.files[0].text();
  });
  const form = h('form', { id: 'script-form' },
    h('div', { class: 'row' }, h('label', {}, 'Name', name), h('label', {}, 'From a file', file)),
    h('div', { class: 'editor' }, text),
    h('div', { class: 'row' }, submit),
    result);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    submit.disabled = true;
    try {
      const saved = await putText(`scripts/${enc(name.value.trim())}`, text.value);
      replace(result, h('p', { class: 'ok', role: 'status' }, `Saved: ${saved.name} is at version ${saved.version}.`));
      if (onSaved) await onSaved(saved);
      else go(`#/scripts/${enc(saved.name)}`);
    } catch (err) {
      replace(result, errorBox(err));
    } finally {
      submit.disabled = false;
    }
  });
  return h('section', { class: 'card' }, h('h2', {}, fixed ? 'New version' : 'Upload a script'), form);
}

// renderScript shows one script: its versions, newest first, and the
// content of the selected one (the latest at first).
export async function renderScript(view, { name, me, go }) {
  const versions = h('div', { id: 'script-versions' }, h('p', { class: 'muted' }, 'Loading…'));
  const shown = h('section', { id: 'script-shown' });
  const result = h('div', { id: 'script-delete-result' });
  const admin = me && ADMINS.has(me.role);
  const remove = h('button', { type: 'button', id: 'delete-script', class: 'danger' }, 'Delete');
  const path = `scripts/${enc(name)}`;

  const show = async (version) => {
    try {
      const s = await get(version ? `${path}/versions/${version}` : path);
      if (view.stopped) return null;
      replace(shown, h('h2', {}, `Version ${s.version}`),
        h('p', { class: 'muted' }, `${s.size} bytes · sha256 `, h('code', {}, s.sha256)),
        h('pre', { id: 'script-content', dataset: { version: String(s.version) } }, s.content));
      return s;
    } catch (err) {
      if (!view.stopped) replace(shown, errorBox(err));
      return null;
    }
  };
  const loadVersions = listLoader(view, versions, `${path}/versions`, (items) => h('table', {},
    h('thead', {}, h('tr', {}, ['Version', 'Bytes', 'SHA-256', ''].map((t) => h('th', {}, t)))),
    h('tbody', {}, [...items].reverse().map((s) => h('tr', { dataset: { version: String(s.version) } },
      h('td', {}, String(s.version)),
      h('td', {}, String(s.size)),
      h('td', {}, h('code', {}, shortSum(s.sha256))),
      h('td', {}, h('button', { type: 'button', class: 'secondary show-version', onclick: () => show(s.version) }, 'Show')))))));

  replace(view.root, h('p', {}, h('a', { href: '#/scripts' }, '← Scripts')), h('h1', {}, `Script ${name}`),
    versions, shown, result, admin ? h('div', { class: 'row' }, remove) : null);
  remove.addEventListener('click', () => confirmDelete(`Delete script ${name} and all its versions? Clusters keep the versions they run.`,
    path, `Script ${name} deleted.`, result, async () => {
      if (!result.querySelector('.error')) go('#/scripts');
    }));
  await loadVersions();
  const latest = await show(0);
  if (admin && latest && !view.stopped) {
    view.root.append(uploadForm({ go, name, content: latest.content, onSaved: async (saved) => {
      await loadVersions();
      await show(saved.version);
    } }));
  }
}
