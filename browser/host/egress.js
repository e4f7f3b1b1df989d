// Strict-mode mediated fetch (DESIGN §8 and §9, B8): every request a sandbox
// makes is forwarded to the egress proxy `POST /v1/fetch` of `tycli serve`
// (docs/serve.md), which decides it from its own store — URL policy, method
// class, the grant for (revision, origin, access), resolution, the address
// rules again at connect time (so DNS rebinding fails), no redirects, the
// grant's limits — and audits it under the revision. The page's own `decide`
// is never consulted in strict mode: the server is the boundary, and a page
// cannot widen what it allows. The page itself never contacts the target.
//
// The request to the proxy carries the server's bearer token and nothing
// ambient (no cookies, no referrer), follows no redirect, has a timeout and a
// cap on the answer's size. Refusals keep the proxy's codes (`denied`,
// `policy_blocked`, `invalid_request`, `too_large`, `timeout`, `network`,
// `not_found`, `unauthorized`, …): the tool sees a CapabilityError with it.

import { FetchRefused, readCapped, requestLimit } from './fetch.js';

/** Proxy-call limits: the server's own timeout and caps apply upstream. */
export const EGRESS_DEFAULTS = Object.freeze({
  timeoutMs: 30000,
  maxAnswerBytes: 8 << 20,  // base64 of the upstream body plus the JSON around it
});

/**
 * @typedef {{endpoint: string, token: string, timeoutMs?: number, maxAnswerBytes?: number}} EgressOptions
 *   endpoint: the proxy's URL (same origin as the page when `tycli serve` serves it); token: the server's
 *   bearer token, given to the page by whoever serves it
 */

/** Checks the strict-mode options once, when a host is made (bad options are refused, nothing runs). */
export function egressOptions(o) {
  if (!o || typeof o.endpoint !== 'string' || typeof o.token !== 'string' || !/^[0-9a-f]{64}$/.test(o.token)) {
    throw new TypeError('strict mode needs {endpoint, token}: the URL of tycli serve\'s /v1/fetch and its 64-hex-digit token');
  }
  const u = new URL(o.endpoint, location.href);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new TypeError('the egress endpoint must be http(s)');
  return Object.freeze({ ...o, endpoint: u.href });
}

function toBase64(text) {
  const bytes = new TextEncoder().encode(text);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function fromBase64(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out.buffer;
}

/**
 * Forwards one mediated request to the proxy.
 * @param {{url: string, method: string, headers: [string, string][], body: string|null}} req
 * @param {{revision: string, task?: string}} who the full revision id the sandbox runs
 * @param {EgressOptions} egress
 * @param {AbortSignal} [signal] the call's signal (its end or abort cancels the request)
 * @returns {Promise<{status: number, statusText: string, headers: [string, string][], body: ArrayBuffer}>}
 */
export async function egressFetch(req, who, egress, signal) {
  const limit = requestLimit(egress.timeoutMs ?? EGRESS_DEFAULTS.timeoutMs, signal, 'the egress proxy did not answer in time');
  const payload = { revision: who.revision, url: req.url, method: req.method, headers: req.headers,
    body: req.body === null ? null : toBase64(req.body) };
  if (who.task) payload.task = who.task;
  let response;
  try {
    response = await fetch(egress.endpoint, {
      method: 'POST',
      headers: { 'Authorization': 'Bearer ' + egress.token, 'Content-Type': 'application/json' },
      body: JSON.stringify(payload),
      credentials: 'omit', redirect: 'error', cache: 'no-store', referrerPolicy: 'no-referrer', signal: limit.signal,
    });
  } catch (e) {
    throw limit.stopped() || new FetchRefused('egress_unavailable', 'the egress proxy cannot be reached: ' + (e && e.message));
  }
  // The answer's size is capped while it streams (fetch.js readCapped), never after reading it all.
  const bytes = await readCapped(response, egress.maxAnswerBytes ?? EGRESS_DEFAULTS.maxAnswerBytes, limit,
    { what: 'the proxy\'s answer', failCode: 'egress_unavailable' });
  const text = new TextDecoder().decode(bytes);
  let answer;
  try { answer = JSON.parse(text); } catch { answer = null; }
  if (response.status !== 200) {
    const err = answer && answer.error;
    throw new FetchRefused(typeof err?.code === 'string' ? err.code : 'egress_error',
      typeof err?.message === 'string' ? err.message : `the egress proxy answered HTTP ${response.status}`);
  }
  if (!answer || !Number.isInteger(answer.status) || typeof answer.body !== 'string' || !Array.isArray(answer.headers)) {
    throw new FetchRefused('egress_error', 'the egress proxy\'s answer has not the documented shape');
  }
  const headers = answer.headers.filter((h) => Array.isArray(h) && h.length === 2).map(([k, v]) => [String(k), String(v)]);
  return { status: answer.status, statusText: String(answer.statusText ?? ''), headers, body: fromBase64(answer.body) };
}
