// A cluster's drift: what its latest drift check found against the real
// machines, services and configs.

import { enc } from './api.js';
import { h, badge, when } from './dom.js';

// driftBadge is the drift check's result in one badge: DRIFTED, CLEAN, or a
// dash before the first check.
export function driftBadge(drift) {
  if (!drift) return h('span', { class: 'muted' }, '—');
  return badge(drift.drifted > 0 ? 'DRIFTED' : 'CLEAN');
}

// driftCard shows the latest drift check: how many nodes drifted, and each
// finding with the time it was first seen; "Check drift now" starts one,
// and "Repair" (once something drifted) asks for a repair of it, within
// the template's maxUnhealthy, as heddle clusters repair does.
export function driftCard(c, check, repair) {
  const d = c.drift;
  const button = h('button', { type: 'button', id: 'drift-check', class: 'secondary', onclick: check }, 'Check drift now');
  const repairButton = d && d.drifted > 0 && repair
    ? h('button', { type: 'button', id: 'drift-repair', class: 'secondary', onclick: repair }, 'Repair') : null;
  if (!d) {
    return h('section', { class: 'card', id: 'drift', dataset: { drifted: '' } },
      h('h2', {}, 'Drift'), h('p', { class: 'muted' }, 'Not checked yet. ', button));
  }
  return h('section', { class: 'card', id: 'drift', dataset: { drifted: String(d.drifted) } },
    h('h2', {}, 'Drift ', driftBadge(d)),
    h('p', {}, `${d.drifted} of ${d.nodes} nodes drifted, checked `, when(d.at), ' by job ',
      h('a', { href: `#/clusters/${enc(c.id)}/jobs/${enc(d.jobId)}` }, d.jobId), ' ', button, ' ', repairButton),
    (d.findings || []).length === 0 ? null : h('table', { id: 'drift-findings' },
      h('thead', {}, h('tr', {}, ['Node', 'Service', 'Kind', 'Since', 'Detail'].map((t) => h('th', {}, t)))),
      h('tbody', {}, d.findings.map((f) => h('tr', { dataset: { node: f.node, kind: f.kind } },
        h('td', {}, f.node),
        h('td', {}, f.service || '—'),
        h('td', {}, badge(f.kind)),
        h('td', {}, when(f.since)),
        h('td', {}, h('code', {}, f.detail || '—')))))));
}
