// The dashboard's entry point: a router over the URL fragment (#/clusters,
// #/clusters/ID, #/clusters/ID/jobs/JOB, #/clusters/new, #/catalog/KIND/NAME)
// that renders one view at a time into <main>, and the header.

import { get, getKey, clearKey, ApiError, UNAUTHORIZED } from './api.js';
import { renderLogin } from './login.js';
import { renderClusters, renderCreate } from './clusters.js';
import { renderCluster } from './cluster.js';
import { renderJob } from './job.js';
import { renderCatalog, renderEntity } from './catalog.js';
import { View, flash, clearFlash } from './ui.js';

const routes = [
  [/^#\/clusters\/new$/, () => renderCreate],
  [/^#\/clusters\/([^/]+)\/jobs\/([^/]+)$/, (m) => [renderJob, { id: m[1], job: m[2] }]],
  [/^#\/clusters\/([^/]+)$/, (m) => [renderCluster, { id: m[1] }]],
  [/^#\/clusters$/, () => renderClusters],
  [/^#\/catalog\/([^/]+)\/([^/]+)$/, (m) => [renderEntity, { kind: m[1], name: m[2] }]],
  [/^#\/catalog(?:\/([^/]+))?$/, (m) => [renderCatalog, { kind: m[1] }]],
];

let current = null;

function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function match(hash) {
  for (const [re, target] of routes) {
    const m = re.exec(hash);
    if (m) {
      const found = target(m.map((part, i) => (i === 0 || part === undefined ? part : decodeURIComponent(part))));
      return Array.isArray(found) ? found : [found, {}];
    }
  }
  return null;
}

function route() {
  if (current) current.stop();
  const root = document.getElementById('app');
  current = new View(root);
  if (!getKey()) {
    showHeader(null);
    renderLogin(current, { onLogin: (me) => { clearFlash(); showHeader(me); route(); } });
    return;
  }
  const found = match(location.hash);
  if (!found) {
    go('#/clusters');
    return;
  }
  const [render, params] = found;
  render(current, { ...params, go });
}

function showHeader(me) {
  document.getElementById('nav').hidden = !me;
  document.getElementById('logout').hidden = !me;
  document.getElementById('whoami').textContent = me ? `${me.user} · ${me.role} · tenant ${me.tenant}` : '';
}

// A key that stops working (deleted, or the tab outlived it) sends the user
// back to the login page with the API's message.
window.addEventListener(UNAUTHORIZED, (ev) => logout(ev.detail));

function logout(message) {
  clearKey();
  if (message) flash(message);
  route();
}

async function start() {
  document.getElementById('logout').addEventListener('click', () => { clearFlash(); logout(); });
  window.addEventListener('hashchange', route);
  if (getKey()) {
    try {
      showHeader(await get('me'));
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        clearKey();
        flash(err.message);
      }
    }
  }
  route();
}

start();
