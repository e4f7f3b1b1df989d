// Direct-mode mediated fetch, run from the host page after `decide` allowed it
// (DESIGN §9): no credentials, no redirects followed, a timeout, a response
// size cap, and Chromium's public address space restriction (a request to a
// loopback or private address is refused by the browser before it is sent).
// It cannot stop DNS rebinding (the page never sees resolved addresses): strict
// mode (the server's /v1/fetch egress proxy, B8) is the boundary for that and
// is not built yet.

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
  const timeoutMs = opts.timeoutMs ?? FETCH_DEFAULTS.timeoutMs;
  const maxBytes = opts.maxResponseBytes ?? FETCH_DEFAULTS.maxResponseBytes;
  const signals = [AbortSignal.timeout(timeoutMs)];
  if (opts.signal) signals.push(opts.signal);
  const signal = AbortSignal.any(signals);
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
    signal,
    targetAddressSpace: 'public',  // Chromium: a loopback/private target is refused before sending
  };
  if (opts.omitAddressSpace) delete init.targetAddressSpace;
  let response;
  try {
    response = await fetch(req.url, init);
  } catch (e) {
    if (signal.aborted) throw timeoutOrAbort(signals[0]);
    throw new FetchRefused('network_error', 'the request failed: ' + (e && e.message));
  }
  if (response.type === 'opaqueredirect') {
    throw new FetchRefused('redirect_not_followed', 'the server answered with a redirect; redirects are never followed');
  }
  const reader = response.body ? response.body.getReader() : null;
  const chunks = [];
  let total = 0;
  try {
    while (reader) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        reader.cancel();
        throw new FetchRefused('response_too_large', 'the response exceeds ' + maxBytes + ' bytes');
      }
      chunks.push(value);
    }
  } catch (e) {
    if (e instanceof FetchRefused) throw e;
    if (signal.aborted) throw timeoutOrAbort(signals[0]);
    throw new FetchRefused('network_error', 'reading the response failed: ' + (e && e.message));
  }
  const body = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) { body.set(c, at); at += c.byteLength; }
  const headers = [];
  response.headers.forEach((v, k) => headers.push([k, v]));
  return { status: response.status, statusText: response.statusText, headers, body: body.buffer };
}

function timeoutOrAbort(timeoutSignal) {
  return timeoutSignal.aborted
    ? new FetchRefused('timeout', 'the request timed out')
    : new FetchRefused('cancelled', 'the call ended or was aborted');
}
