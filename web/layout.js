// A cluster's layout as a picture: one block per layout group (the nodes
// that share hardware, image and services, as the cluster view counts them
// whatever the cluster's size), each a grid of squares, one per node, or
// one per a few nodes past MAX_SQUARES (the block says how many a square
// stands for), so groups compare by area at a glance. The cluster's nodes
// by status sit under it.

import { h } from './dom.js';
import { s } from './svg.js';

export const MAX_SQUARES = 400;
const CELL = 9;
const GAP = 2;
const COLUMNS = 20;

// Colours for the groups, told apart by hue, not by status.
const HUES = ['#2857c5', '#1f7a3f', '#a86300', '#7b3fb8', '#0f7c8c', '#b3261e', '#5d6678', '#8a6d00'];

// layoutPicture draws groups (cluster.layout, or a dry run's layout) into a
// figure with the given id.
export function layoutPicture(groups, id) {
  if (!groups || groups.length === 0) return null;
  const total = groups.reduce((n, g) => n + (g.count || 0), 0);
  return h('div', { class: 'layout-picture', id, dataset: { groups: groups.length, nodes: total } },
    groups.map((g, i) => group(g, HUES[i % HUES.length])));
}

function group(g, color) {
  const per = Math.max(1, Math.ceil(g.count / MAX_SQUARES));
  const squares = Math.ceil(g.count / per);
  const cols = Math.min(COLUMNS, Math.max(squares, 1));
  const rows = Math.ceil(squares / cols);
  const width = cols * (CELL + GAP) - GAP;
  const height = Math.max(rows * (CELL + GAP) - GAP, CELL);
  const services = (g.services || []).join(', ') || 'no services';
  const cells = [];
  for (let k = 0; k < squares; k++) {
    cells.push(s('rect', { x: (k % cols) * (CELL + GAP), y: Math.floor(k / cols) * (CELL + GAP), width: CELL, height: CELL, rx: 1.5, fill: color, class: 'cell' }));
  }
  return h('figure', { class: 'layout-group', dataset: { count: g.count, services: (g.services || []).join(','), squares, per } },
    s('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `${g.count} nodes: ${services}` },
      s('title', {}, `${g.count} node${g.count === 1 ? '' : 's'} with ${services} on ${g.hardwareType} / ${g.imageType}`),
      cells),
    h('figcaption', {},
      h('strong', { class: 'layout-count' }, `${g.count} node${g.count === 1 ? '' : 's'}`), ' ',
      (g.services || []).map((svc) => h('span', { class: 'chip' }, svc)),
      h('div', { class: 'muted' }, `${g.hardwareType} / ${g.imageType}${per > 1 ? ` · a square is ${per} nodes` : ''}`)));
}
