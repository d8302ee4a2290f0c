// The catalog: entities by kind, and an editor that PUTs one entity as JSON
// and lists the API's validation problems by field path next to the text.

import { get, put, del, enc, ApiError } from './api.js';
import { h, replace, errorBox, NAME_PATTERN } from './dom.js';
import { confirmAction } from './ui.js';

export const KINDS = ['services', 'clustertemplates', 'partialtemplates', 'providers', 'hardwaretypes', 'imagetypes'];

const LABELS = {
  services: 'Services', clustertemplates: 'Cluster templates', partialtemplates: 'Partial templates',
  providers: 'Providers', hardwaretypes: 'Hardware types', imagetypes: 'Image types',
};

function kindTabs(current) {
  return h('nav', { class: 'row', id: 'kinds' }, KINDS.map((k) =>
    k === current ? h('strong', {}, LABELS[k]) : h('a', { href: `#/catalog/${k}` }, LABELS[k])));
}

export async function renderCatalog(view, { kind = 'services', go }) {
  if (!KINDS.includes(kind)) kind = 'services';
  const list = h('div', { id: 'entities' }, h('p', { class: 'muted' }, 'Loading…'));
  const newName = h('input', { id: 'new-name', placeholder: 'name', pattern: NAME_PATTERN, required: true });
  const create = h('form', { class: 'row' }, h('label', {}, `New ${LABELS[kind].toLowerCase().replace(/s$/, '')}`, newName),
    h('button', { type: 'submit', class: 'secondary' }, 'Edit new'));
  create.addEventListener('submit', (ev) => {
    ev.preventDefault();
    go(`#/catalog/${kind}/${enc(newName.value.trim())}`);
  });
  replace(view.root, h('h1', {}, 'Catalog'), kindTabs(kind), list, create);
  try {
    const page = await get(kind);
    const items = page.items || [];
    if (view.stopped) return;
    replace(list, items.length === 0 ? h('p', { class: 'muted' }, 'None yet.') : h('table', {},
      h('thead', {}, h('tr', {}, ['Name', 'Version', 'Description'].map((t) => h('th', {}, t)))),
      h('tbody', {}, items.map((e) => h('tr', { dataset: { entity: e.name } },
        h('td', {}, h('a', { href: `#/catalog/${kind}/${enc(e.name)}` }, e.name)),
        h('td', {}, String(e.version ?? '')),
        h('td', {}, e.description || e.label || ''))))));
  } catch (err) {
    if (!view.stopped) replace(list, errorBox(err));
  }
}

// renderEntity edits one entity. A name that does not exist yet starts from
// {"name": ...}, so the same page creates entities.
export async function renderEntity(view, { kind, name, go }) {
  const text = h('textarea', { id: 'entity-json', spellcheck: 'false', 'aria-label': `${kind}/${name} as JSON` });
  const problems = h('aside', { id: 'entity-errors', 'aria-live': 'polite' });
  const save = h('button', { type: 'submit', id: 'save-entity' }, 'Save (PUT)');
  const remove = h('button', { type: 'button', id: 'delete-entity', class: 'danger' }, 'Delete');
  // A static provider's hosts have a page of their own.
  const hostsLink = h('a', { id: 'provider-hosts', href: `#/providers/${enc(name)}/hosts`, hidden: true }, 'Hosts of this pool →');
  const form = h('form', { id: 'entity-form' },
    h('div', { class: 'editor' }, text, problems),
    h('div', { class: 'row' }, save, remove));
  replace(view.root, h('p', {}, h('a', { href: `#/catalog/${kind}` }, `← ${LABELS[kind] || kind}`)),
    h('h1', {}, `${kind}/${name}`), h('p', {}, hostsLink), form);
  const path = `${kind}/${enc(name)}`;

  try {
    const entity = await get(path);
    text.value = JSON.stringify(entity, null, 2);
    hostsLink.hidden = !(kind === 'providers' && entity.providerType === 'static');
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) {
      replace(problems, errorBox(err));
    }
    text.value = JSON.stringify({ name }, null, 2);
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    let body;
    try {
      body = JSON.parse(text.value);
    } catch (err) {
      replace(problems, h('div', { class: 'error', role: 'alert' }, h('p', { class: 'message' }, `Not valid JSON: ${err.message}`)));
      return;
    }
    save.disabled = true;
    try {
      const saved = await put(path, body);
      if (saved && typeof saved === 'object') text.value = JSON.stringify(saved, null, 2);
      replace(problems, h('p', { class: 'ok', role: 'status' }, `Saved${saved && saved.version ? ` as version ${saved.version}` : ''}.`));
    } catch (err) {
      // The envelope's message and its problems, one per field path.
      replace(problems, errorBox(err));
    } finally {
      save.disabled = false;
    }
  });

  remove.addEventListener('click', async () => {
    if (!(await confirmAction(`Delete ${kind}/${name} and all its versions?`, 'Delete'))) return;
    try {
      await del(path);
      go(`#/catalog/${kind}`);
    } catch (err) {
      replace(problems, errorBox(err));
    }
  });
}
