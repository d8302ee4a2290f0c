// What the pictures share: the colour of each task status (one source for
// the canvas, the SVG and their legends) and a builder for SVG elements,
// which, like dom.js's h, puts text in as text nodes only.

// STATUS_COLORS are exact RGB values: the browser test reads them back
// from the timeline's canvas.
export const STATUS_COLORS = {
  SUCCEEDED: '#2e9d57',
  FAILED: '#d0392b',
  RUNNING: '#e8a317',
  READY: '#5b8def',
  BLOCKED: '#c9ced8',
  CANCELED: '#8a93a3',
};

// STATUS_ORDER is the order legends and stacked bars use.
export const STATUS_ORDER = ['SUCCEEDED', 'RUNNING', 'READY', 'FAILED', 'CANCELED', 'BLOCKED'];

export function statusColor(status) {
  return STATUS_COLORS[status] || '#c9ced8';
}

const NS = 'http://www.w3.org/2000/svg';

// s builds an SVG element: s('rect', {x: 1, class: 'box'}, child, 'text').
// Attribute values are set as they are (presentation attributes such as
// fill are attributes, not inline styles, so the strict CSP allows them).
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name === 'dataset') Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// legend is a row of status swatches (an SVG square each) with counts;
// counts maps status -> n, and only statuses with a count are shown.
export function legend(counts, id) {
  const el = document.createElement('p');
  el.className = 'legend';
  if (id) el.id = id;
  for (const st of STATUS_ORDER.filter((k) => counts[k])) {
    const item = document.createElement('span');
    item.className = 'legend-item';
    item.dataset.status = st;
    item.dataset.count = String(counts[st]);
    item.append(s('svg', { width: 12, height: 12, viewBox: '0 0 12 12', 'aria-hidden': 'true' },
      s('rect', { width: 12, height: 12, rx: 2, fill: statusColor(st) })),
    document.createTextNode(` ${st.toLowerCase()} ${counts[st]}`));
    el.append(item);
  }
  return el;
}

// parseDuration reads a Go duration as the API writes it ("1m30.5s",
// "250ms", "2d") into milliseconds; NaN for anything else.
export function parseDuration(text) {
  if (typeof text !== 'string' || text === '') return NaN;
  if (text === '0s' || text === '0') return 0;
  const units = { d: 86400000, h: 3600000, m: 60000, s: 1000, ms: 1, us: 0.001, 'µs': 0.001, ns: 0.000001 };
  const re = /(\d+(?:\.\d+)?)(ms|us|µs|ns|d|h|m|s)/gy;
  let ms = 0;
  let m;
  let at = 0;
  while ((m = re.exec(text)) !== null) {
    ms += Number(m[1]) * units[m[2]];
    at = re.lastIndex;
  }
  return at === text.length ? ms : NaN;
}

// shortDuration writes milliseconds for a person: 850 ms, 12.5 s, 3 min 4 s.
export function shortDuration(ms) {
  if (!(ms >= 0)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3600000) return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
  return `${Math.floor(ms / 3600000)} h ${Math.round((ms % 3600000) / 60000)} min`;
}
