// Direct-mode mediated fetch, run from the host page after `decide` allowed it
// (DESIGN §9): no credentials, no redirects followed, a timeout, a response
// size cap, and Chromium's public address space restriction (a request to a
// loopback or private address is refused by the browser before it is sent).
// It cannot stop DNS rebinding (the page never sees resolved addresses): strict
// mode (egress.js: tycli serve's /v1/fetch egress proxy, B8) is the boundary
// for that. The request rules (method, headers) are checked before either mode
// (validate.js checkRequest); the capped reader and the timeout-vs-abort
// classification here are shared with egress.js.

export const FETCH_DEFAULTS = Object.freeze({
  timeoutMs: 10000,
  maxResponseBytes: 4 << 20,
});

/** A refusal the tool sees as a CapabilityError with this code. */
export class FetchRefused extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

/**
 * @param {{url: string, method: string, headers: [string, string][], body: string|null}} req
 * @param {{timeoutMs?: number, maxResponseBytes?: number, signal?: AbortSignal, omitAddressSpace?: boolean}} opts
 *        omitAddressSpace: a negative control of the checks only (M6 can fail), never in a product page
 * @returns {Promise<{status: number, statusText: string, headers: [string, string][], body: ArrayBuffer}>}
 */
export async function directFetch(req, opts = {}) {
  const maxBytes = opts.maxResponseBytes ?? FETCH_DEFAULTS.maxResponseBytes;
  const limit = requestLimit(opts.timeoutMs ?? FETCH_DEFAULTS.timeoutMs, opts.signal, 'the request timed out');
  /** @type {RequestInit & {targetAddressSpace?: string}} */
  const init = {
    method: req.method,
    headers: req.headers,
    body: req.body,
    credentials: 'omit',
    redirect: 'manual',
    cache: 'no-store',
    referrerPolicy: 'no-referrer',
    mode: 'cors',
    signal: limit.signal,
    targetAddressSpace: 'public',  // Chromium: a loopback/private target is refused before sending
  };
  if (opts.omitAddressSpace) delete init.targetAddressSpace;
  let response;
  try {
    response = await fetch(req.url, init);
  } catch (e) {
    throw limit.stopped() || new FetchRefused('network_error', 'the request failed: ' + (e && e.message));
  }
  if (response.type === 'opaqueredirect') {
    throw new FetchRefused('redirect_not_followed', 'the server answered with a redirect; redirects are never followed');
  }
  const body = await readCapped(response, maxBytes, limit, { what: 'the response', failCode: 'network_error' });
  const headers = [];
  response.headers.forEach((v, k) => headers.push([k, v]));
  return { status: response.status, statusText: response.statusText, headers, body: /** @type {ArrayBuffer} */ (body.buffer) };
}

/**
 * The signal of one request (its timeout and the caller's signal) and the refusal when it fired:
 * `timeout` when the timeout did, `cancelled` when the caller's signal did (the call ended or was aborted).
 * @param {number} timeoutMs @param {AbortSignal|undefined} callerSignal @param {string} timeoutMessage
 * @returns {{signal: AbortSignal, stopped: () => FetchRefused|null}}
 */
export function requestLimit(timeoutMs, callerSignal, timeoutMessage) {
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = callerSignal ? AbortSignal.any([timeout, callerSignal]) : timeout;
  return {
    signal,
    stopped: () => {
      if (!signal.aborted) return null;
      return timeout.aborted && !(callerSignal && callerSignal.aborted)
        ? new FetchRefused('timeout', timeoutMessage)
        : new FetchRefused('cancelled', 'the call ended or was aborted');
    },
  };
}

/**
 * Reads a response body with a byte cap enforced while streaming (a declared Content-Length
 * over the cap is refused before reading): never more than maxBytes + one chunk in memory.
 * @param {Response} response @param {number} maxBytes
 * @param {{signal: AbortSignal, stopped: () => FetchRefused|null}} limit requestLimit()
 * @param {{what: string, failCode: string}} o what is read (for messages); the code of a failed read
 * @returns {Promise<Uint8Array>}
 */
export async function readCapped(response, maxBytes, limit, o) {
  const tooLarge = () => new FetchRefused('response_too_large', `${o.what} exceeds ${maxBytes} bytes`);
  const declared = Number(response.headers.get('content-length'));
  const reader = response.body ? response.body.getReader() : null;
  const chunks = [];
  let total = 0;
  try {
    if (declared > maxBytes) throw tooLarge();
    while (reader) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) throw tooLarge();
      chunks.push(value);
    }
  } catch (e) {
    if (reader) reader.cancel().catch(() => {});
    if (e instanceof FetchRefused) throw e;
    throw limit.stopped() || new FetchRefused(o.failCode, `reading ${o.what} failed: ` + (e && e.message));
  }
  const body = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) { body.set(c, at); at += c.byteLength; }
  return body;
}
