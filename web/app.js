// The dashboard's entry point: a router over the URL fragment (#/clusters,
// #/clusters/ID (or NAME), #/clusters/ID/jobs/JOB, #/clusters/new, #/catalog/KIND/NAME,
// #/providers/NAME/hosts)
// that renders one view at a time into <main>, and the header.

import { get, getKey, clearKey, setRenew, ApiError, UNAUTHORIZED } from './api.js';
import { renderLogin } from './login.js';
import { completeSignIn, freshKey } from './signin.js';
import { renderClusters, renderCreate } from './clusters.js';
import { renderCluster } from './cluster.js';
import { renderJob } from './job.js';
import { renderCatalog, renderEntity } from './catalog.js';
import { renderScripts, renderScript } from './scripts.js';
import { renderUsers, renderKeys } from './users.js';
import { renderTenants, renderTenant } from './tenants.js';
import { renderHosts } from './hosts.js';
import { renderWebhooks, renderDeliveries } from './webhooks.js';
import { View, flash, clearFlash } from './ui.js';

const routes = [
  [/^#\/clusters\/new$/, () => renderCreate],
  [/^#\/clusters\/([^/]+)\/jobs\/([^/]+)$/, (m) => [renderJob, { id: m[1], job: m[2] }]],
  [/^#\/clusters\/([^/]+)$/, (m) => [renderCluster, { id: m[1] }]],
  [/^#\/clusters$/, () => renderClusters],
  [/^#\/catalog\/([^/]+)\/([^/]+)$/, (m) => [renderEntity, { kind: m[1], name: m[2] }]],
  [/^#\/catalog(?:\/([^/]+))?$/, (m) => [renderCatalog, { kind: m[1] }]],
  [/^#\/scripts\/([^/]+)$/, (m) => [renderScript, { name: m[1] }]],
  [/^#\/scripts$/, () => renderScripts],
  [/^#\/providers\/([^/]+)\/hosts$/, (m) => [renderHosts, { provider: m[1] }]],
  [/^#\/users\/([^/]+)\/keys$/, (m) => [renderKeys, { user: m[1] }]],
  [/^#\/users$/, () => renderUsers],
  [/^#\/webhooks\/([^/]+)$/, (m) => [renderDeliveries, { id: m[1] }]],
  [/^#\/webhooks$/, () => renderWebhooks],
  [/^#\/tenants\/([^/]+)$/, (m) => [renderTenant, { tenant: m[1] }]],
  [/^#\/tenants$/, () => renderTenants],
];

let current = null;
// me is who the stored key belongs to (GET /v1/me), null when logged out.
let me = null;

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
    renderLogin(current, { onLogin: (who) => { clearFlash(); showHeader(who); route(); } });
    return;
  }
  const found = match(location.hash);
  if (!found) {
    go('#/clusters');
    return;
  }
  const [render, params] = found;
  render(current, { ...params, go, me });
}

const ADMINS = new Set(['admin', 'superadmin']);

// showHeader shows the nav for a logged-in user; the admin pages only to
// the roles the API lets use them (it still checks every call).
function showHeader(who) {
  me = who;
  document.getElementById('nav').hidden = !me;
  document.getElementById('nav-users').hidden = !me || !ADMINS.has(me.role);
  document.getElementById('nav-webhooks').hidden = !me || !ADMINS.has(me.role);
  document.getElementById('nav-tenants').hidden = !me || me.role !== 'superadmin';
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
  // Logging out on purpose also leaves the page: whoever logs in next starts
  // at the clusters, not on a page of the previous user's.
  document.getElementById('logout').addEventListener('click', () => {
    clearFlash();
    history.replaceState(null, '', '#/clusters');
    logout();
  });
  window.addEventListener('hashchange', route);
  setRenew(freshKey);
  // Back from the identity provider: finish the sign-in first.
  try {
    const who = await completeSignIn();
    if (who && who.notes.length) flash(`Signed in as ${who.role}, but ${who.notes.join('; ')}`);
  } catch (err) {
    clearKey();
    flash(err.message);
  }
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
