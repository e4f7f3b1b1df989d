// Validation of every message a sandbox sends (B3, M1): exact shape, known
// type, bounded sizes, and identity from the channel (the call id must be the
// call the host is running on that sandbox). Anything else is a protocol
// violation, and the caller destroys the sandbox.

/** Limits, in UTF-16 code units of strings (JS string length). */
export const LIMITS = Object.freeze({
  resultJson: 1 << 20,      // a call's JSON result text
  logText: 4096,            // one log line (the harness cuts longer ones)
  logsPerCall: 1000,        // log messages per call
  url: 8192,                // a fetch URL
  method: 16,
  headers: 64,              // header pairs per request
  headerText: 8192,         // one header name or value
  body: 1 << 20,            // a request body
  requestsPerCall: 64,      // fetch requests per call
  errorText: 4096,
});

const LEVELS = new Set(['log', 'info', 'warn', 'error', 'debug']);

function isPlain(d) {
  return d !== null && typeof d === 'object' && !Array.isArray(d) && Object.getPrototypeOf(d) === Object.prototype;
}

function exactKeys(d, keys) {
  const got = Object.keys(d);
  if (got.length !== keys.length) return false;
  for (const k of keys) if (!Object.prototype.hasOwnProperty.call(d, k)) return false;
  return true;
}

const str = (v, max) => typeof v === 'string' && v.length <= max;
const uint = (v) => Number.isSafeInteger(v) && v >= 0;

/**
 * Checks one message from a sandbox.
 * @param {any} d            event.data
 * @param {number} portCount event.ports.length (must be 0)
 * @param {{state: string, callId: number|null}} expect what the host waits for
 * @returns {{ok: true, msg: any} | {ok: false, reason: string}}
 */
export function validateMessage(d, portCount, expect) {
  const bad = (reason) => /** @type {{ok: false, reason: string}} */ ({ ok: false, reason });
  if (portCount !== 0) return bad('a message carried a MessagePort (one port per sandbox)');
  if (!isPlain(d) || typeof d.t !== 'string') return bad('not a plain object with a type');
  switch (d.t) {
    case 'ready':
      if (!exactKeys(d, ['t'])) return bad('ready: unexpected fields');
      if (expect.state !== 'starting') return bad('ready: not starting');
      return { ok: true, msg: d };
    case 'supervisor':
      // The supervisor reports a boundary event (second bind, worker error): always fatal.
      return bad('supervisor: ' + String(d.reason).slice(0, 64) + (d.detail ? ' (' + String(d.detail).slice(0, 256) + ')' : ''));
    case 'result': {
      if (expect.state !== 'busy' || d.id !== expect.callId) return bad('result: not for the running call');
      if (d.ok === true) {
        if (!exactKeys(d, ['t', 'id', 'ok', 'json']) || !str(d.json, LIMITS.resultJson)) return bad('result: bad shape or too large');
        try { JSON.parse(d.json); } catch { return bad('result: json is not JSON'); }
        return { ok: true, msg: d };
      }
      if (d.ok !== false || !exactKeys(d, ['t', 'id', 'ok', 'error']) || !isPlain(d.error) ||
          !exactKeys(d.error, ['name', 'message', 'code']) || !str(d.error.name, 256) ||
          !str(d.error.message, LIMITS.errorText) || !str(d.error.code, 256)) return bad('result: bad error shape');
      return { ok: true, msg: d };
    }
    case 'log':
      if (expect.state !== 'busy' || d.id !== expect.callId) return bad('log: not for the running call');
      if (!exactKeys(d, ['t', 'id', 'level', 'text']) || !LEVELS.has(d.level) || !str(d.text, LIMITS.logText)) return bad('log: bad shape');
      return { ok: true, msg: d };
    case 'fetch': {
      if (expect.state !== 'busy' || d.id !== expect.callId) return bad('fetch: not for the running call');
      if (!exactKeys(d, ['t', 'id', 'req', 'url', 'method', 'headers', 'body']) || !uint(d.req) ||
          !str(d.url, LIMITS.url) || !str(d.method, LIMITS.method) || !/^[A-Z]+$/.test(d.method) ||
          !(d.body === null || str(d.body, LIMITS.body)) || !Array.isArray(d.headers) || d.headers.length > LIMITS.headers) {
        return bad('fetch: bad shape');
      }
      for (const h of d.headers) {
        if (!Array.isArray(h) || h.length !== 2 || !str(h[0], LIMITS.headerText) || !str(h[1], LIMITS.headerText)) return bad('fetch: bad header');
      }
      return { ok: true, msg: d };
    }
    default:
      return bad('unknown message type');
  }
}
