// The API client: every request carries the key from session storage as a
// bearer token, and every failure becomes an ApiError built from the error
// envelope ({"error": {status, code, message, details, referrers}}).

const KEY = 'heddle.key';

// UNAUTHORIZED is dispatched on window when the stored key is refused.
export const UNAUTHORIZED = 'heddle-unauthorized';

export function getKey() {
  return sessionStorage.getItem(KEY) || '';
}

export function setKey(key) {
  sessionStorage.setItem(KEY, key);
}

export function clearKey() {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem('heddle.signin'); // signin.js's tokens
}

// renew, when set (signin.js), returns the key to send in place of the
// stored one: a signed-in ID token renewed before it expires.
let renew = null;
export function setRenew(fn) {
  renew = fn;
}

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `the API answered ${status}`);
    this.status = status;
    this.code = e.code || '';
    this.details = Array.isArray(e.details) ? e.details : [];
    this.referrers = Array.isArray(e.referrers) ? e.referrers : [];
    this.requestId = e.requestId || '';
    // body is the whole answer: a few errors carry more than the envelope
    // (POST /v1/tenants answers 503 with the tenant and its admin key).
    this.body = body || {};
  }
}

// request sends one call. path is relative to the API root ("clusters",
// "clusters/ID/expand"); the URL is relative to the page, so the dashboard
// works behind a path prefix too.
// A string body is sent as it is, with contentType.
export async function request(method, path, body, key = getKey(), contentType = 'application/json') {
  if (renew && key && key === getKey()) key = await renew(key);
  const init = { method, headers: { Accept: 'application/json' }, cache: 'no-store' };
  if (key) init.headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) {
    init.headers['Content-Type'] = contentType;
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(`v1/${path}`, init);
  } catch (err) {
    throw new ApiError(0, { error: { message: `cannot reach the API: ${err.message}` } });
  }
  const text = await resp.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!resp.ok) {
    const err = new ApiError(resp.status, data);
    if (resp.status === 401 && key && key === getKey()) {
      window.dispatchEvent(new CustomEvent(UNAUTHORIZED, { detail: err.message }));
    }
    throw err;
  }
  return data;
}

export const get = (path) => request('GET', path);
export const post = (path, body = {}) => request('POST', path, body);
export const put = (path, body) => request('PUT', path, body);
// putText PUTs text as it is (a script's content).
export const putText = (path, text) => request('PUT', path, text, getKey(), 'text/plain; charset=utf-8');
export const del = (path) => request('DELETE', path);

// enc escapes one path segment.
export const enc = encodeURIComponent;
