// A cluster's health (its latest verification) and its event stream.

import { enc } from './api.js';
import { h, badge, when } from './dom.js';

// healthBadge is the cluster's health in one badge, or a dash before its
// first verification.
export function healthBadge(health) {
  return health ? badge(health.status) : h('span', { class: 'muted' }, '—');
}

const CHECKS = ['healthy', 'degraded', 'failing', 'unknown'];

// healthCard shows the latest verification: the status, how many checks
// ended how, and the checks that did not pass.
export function healthCard(c, verify) {
  const hl = c.health;
  const button = h('button', { type: 'button', id: 'verify', class: 'secondary', onclick: verify }, 'Verify now');
  if (!hl) {
    return h('section', { class: 'card', id: 'health', dataset: { status: '' } },
      h('h2', {}, 'Health'), h('p', { class: 'muted' }, 'Not verified yet. ', button));
  }
  const counts = CHECKS.filter((k) => hl.counts && hl.counts[k]).map((k) => `${hl.counts[k]} ${k}`).join(', ') || 'no checks';
  return h('section', { class: 'card', id: 'health', dataset: { status: hl.status } },
    h('h2', {}, 'Health ', badge(hl.status)),
    h('p', {}, counts, ', verified ', when(hl.at), ' by job ',
      h('a', { href: `#/clusters/${enc(c.id)}/jobs/${enc(hl.jobId)}` }, hl.jobId), ' ', button),
    (hl.problems || []).length === 0 ? null : h('table', { id: 'health-problems' },
      h('thead', {}, h('tr', {}, ['Node', 'Service', 'Result', 'Took', 'Output'].map((t) => h('th', {}, t)))),
      h('tbody', {}, hl.problems.map((p) => h('tr', { dataset: { service: p.service, status: p.status } },
        h('td', {}, p.node),
        h('td', {}, p.service),
        h('td', {}, badge(p.status)),
        h('td', {}, p.durationNs ? `${(p.durationNs / 1e9).toFixed(1)} s` : '—'),
        h('td', {}, h('code', {}, p.output || '—')))))));
}

// eventList shows the cluster's latest events, newest last.
export function eventList(items) {
  if (items.length === 0) return null;
  return h('section', { class: 'card', id: 'events' },
    h('h2', {}, 'Events'),
    h('table', {},
      h('thead', {}, h('tr', {}, ['When', 'Type', 'Job', 'Change', 'Message'].map((t) => h('th', {}, t)))),
      h('tbody', {}, items.map((e) => h('tr', { dataset: { type: e.type, status: e.status } },
        h('td', {}, when(e.at)),
        h('td', {}, e.type),
        h('td', {}, e.job ? `${e.job} ${e.operation || ''}` : '—'),
        h('td', {}, e.previous ? [badge(e.previous), ' → '] : null, badge(e.status)),
        h('td', {}, e.message || ''))))));
}
