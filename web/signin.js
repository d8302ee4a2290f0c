// Sign-in with an identity provider: the authorization code flow with PKCE.
// The browser goes to the provider's authorization endpoint (a navigation,
// which the Content-Security-Policy allows) and comes back to this page
// with a code; heddle redeems the code with the PKCE verifier at the
// provider (POST /v1/signin/token), so the page itself only ever talks to
// its own origin. The ID token becomes the page's bearer; it and the
// refresh token live in session storage only, gone when the tab closes.

import { request, getKey, setKey } from './api.js';

const PENDING = 'heddle.signin.pending';
export const SESSION = 'heddle.signin';
// What a sign-in asks for when the server names no scopes (an older
// heddle); GET /v1/signin adds the issuer's own (groups, for Dex).
const SCOPES = ['openid', 'email', 'profile', 'offline_access'];
// An ID token this close to its expiry is renewed before it is sent.
const RENEW_BEFORE_MS = 60 * 1000;

function b64url(bytes) {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function random() {
  const b = new Uint8Array(32);
  crypto.getRandomValues(b);
  return b64url(b);
}

async function challengeOf(verifier) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return b64url(new Uint8Array(digest));
}

// The page itself, without query or fragment: what the provider sends the
// browser back to (register it with the provider as a redirect URI).
function redirectUri() {
  return location.origin + location.pathname;
}

// signInOptions lists the providers heddle offers (GET /v1/signin).
export async function signInOptions() {
  const got = await request('GET', 'signin', undefined, '');
  return (got && got.items) || [];
}

// startSignIn sends the browser to the provider.
export async function startSignIn(option) {
  const verifier = random();
  const pending = {
    issuer: option.issuer, clientId: option.clientId, verifier, state: random(), nonce: random(),
    redirectUri: redirectUri(), hash: location.hash,
  };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const u = new URL(option.authorizationEndpoint);
  const q = u.searchParams;
  q.set('response_type', 'code');
  q.set('client_id', option.clientId);
  q.set('redirect_uri', pending.redirectUri);
  q.set('scope', ((option.scopes && option.scopes.length) ? option.scopes : SCOPES).join(' '));
  q.set('state', pending.state);
  q.set('nonce', pending.nonce);
  q.set('code_challenge', await challengeOf(verifier));
  q.set('code_challenge_method', 'S256');
  location.assign(u.toString());
}

function keep(got, option) {
  setKey(got.idToken);
  sessionStorage.setItem(SESSION, JSON.stringify({
    issuer: option.issuer, clientId: option.clientId, refreshToken: got.refreshToken || '', expiry: got.expiry,
  }));
}

// completeSignIn finishes a sign-in the provider sent the browser back
// from: it returns who signed in (with the sign-in's notes: rules reading
// claims the token lacks), or null when the page was not opened by the
// provider. It throws (with a message for the person) when the answer is
// refused.
export async function completeSignIn() {
  const params = new URLSearchParams(location.search);
  if (!params.has('state') || !(params.has('code') || params.has('error'))) return null;
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || 'null');
  sessionStorage.removeItem(PENDING);
  // The code leaves the address bar (and the history) at once.
  history.replaceState(null, '', location.pathname + ((pending && pending.hash) || '#/clusters'));
  if (!pending || pending.state !== params.get('state')) {
    throw new Error('this sign-in answer does not belong to a sign-in started in this tab; sign in again');
  }
  if (params.has('error')) {
    throw new Error(`the identity provider refused the sign-in: ${params.get('error')} ${params.get('error_description') || ''}`.trim());
  }
  const got = await request('POST', 'signin/token', {
    issuer: pending.issuer, clientId: pending.clientId, grantType: 'authorization_code', code: params.get('code'),
    codeVerifier: pending.verifier, redirectUri: pending.redirectUri, nonce: pending.nonce,
  }, '');
  keep(got, pending);
  return { ...got.principal, notes: got.notes || [] };
}

let renewing = null;

// freshKey is api.js's hook: it returns the key to send, renewing a signed-in
// ID token with its refresh token when it is about to expire.
export async function freshKey(key) {
  const s = JSON.parse(sessionStorage.getItem(SESSION) || 'null');
  if (!s || !key || key !== getKey() || !s.refreshToken) return key;
  if (Date.parse(s.expiry) - Date.now() > RENEW_BEFORE_MS) return key;
  if (!renewing) {
    renewing = request('POST', 'signin/token', {
      issuer: s.issuer, clientId: s.clientId, grantType: 'refresh_token', refreshToken: s.refreshToken,
    }, '').then((got) => { keep(got, s); return got.idToken; }).finally(() => { renewing = null; });
  }
  try {
    return await renewing;
  } catch {
    return key; // the API's 401 then sends the person back to the login page
  }
}
