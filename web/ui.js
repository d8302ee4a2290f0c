// Page-wide pieces: the confirmation dialog, the flash message, and the
// listings with a delete button that the admin pages share.

import { get, del } from './api.js';
import { h, replace, errorBox } from './dom.js';

// confirmAction opens the page's own dialog (not window.confirm: it can be
// styled, and tests can click it) and resolves to true when confirmed.
export function confirmAction(message, okLabel = 'Confirm') {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-message').textContent = message;
  document.getElementById('confirm-ok').textContent = okLabel;
  dialog.returnValue = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
    dialog.showModal();
  });
}

// listLoader returns a function that (re)loads the listing at path into el,
// drawn by table from its items; an answer that comes after the view
// stopped is dropped.
export function listLoader(view, el, path, table) {
  return async () => {
    try {
      const page = await get(path);
      if (!view.stopped) replace(el, table(page.items || []));
    } catch (err) {
      if (!view.stopped) replace(el, errorBox(err));
    }
  };
}

// confirmDelete asks question, then DELETEs path, says done (or the error)
// in result, and refreshes the listing.
export async function confirmDelete(question, path, done, result, refresh) {
  if (!(await confirmAction(question, 'Delete'))) return;
  try {
    await del(path);
    replace(result, h('p', { class: 'ok' }, done));
  } catch (err) {
    replace(result, errorBox(err));
  }
  await refresh();
}

let flashTimer = 0;

// flash shows a message above the page for a few seconds.
export function flash(message) {
  const el = document.getElementById('flash');
  el.textContent = message;
  el.hidden = false;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => { el.hidden = true; }, 8000);
}

export function clearFlash() {
  const el = document.getElementById('flash');
  el.hidden = true;
  el.textContent = '';
}

// A View is the lifetime of one page: the router stops it when the user
// navigates away, which ends its polling and drops late answers.
export class View {
  constructor(root) {
    this.root = root;
    this.stopped = false;
    this.timers = new Set();
  }

  // every runs fn now and then ms after each run ends, until the view stops.
  every(ms, fn) {
    const tick = async () => {
      if (this.stopped) return;
      try {
        await fn();
      } finally {
        if (!this.stopped) {
          const t = setTimeout(() => { this.timers.delete(t); tick(); }, ms);
          this.timers.add(t);
        }
      }
    };
    tick();
  }

  stop() {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
