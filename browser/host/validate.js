// Validation of every message a sandbox sends (B3, M1): exact shape, known
// type, bounded sizes, and identity from the channel (the call id must be the
// call the host is running on that sandbox). Anything else is a protocol
// violation, and the caller destroys the sandbox.

/** Limits, in UTF-16 code units of strings (JS string length). */
export const LIMITS = Object.freeze({
  resultJson: 1 << 20,      // a call's JSON result text
  resultDepth: 512,         // nesting of a result value (the CLI's protocol::kMaxDepth)
  logText: 4096,            // one log line (the harness cuts longer ones)
  logsPerCall: 1000,        // log messages per call
  url: 8192,                // a fetch URL
  method: 16,
  headers: 64,              // header pairs per request
  headerText: 8192,         // one header name or value
  body: 1 << 20,            // a request body
  requestsPerCall: 64,      // fetch and storage requests per call
  storageKey: 1024,         // a storage key or list prefix (the store caps keys at 256 UTF-8 bytes)
  storageJson: 1 << 17,     // a storage.set value's JSON text (the store caps it at 64 KiB canonical)
  taskJson: 1 << 20,        // a createSubtasksResult or resolveInvocation request's JSON text
  errorText: 4096,
});

const LEVELS = new Set(['log', 'info', 'warn', 'error', 'debug']);
const STORAGE_OPS = new Set(['get', 'set', 'delete', 'list']);
const TASK_OPS = new Set(['createSubtasksResult', 'resolveInvocation']);

/** The reasons bootstrap.js reports (`{t: 'supervisor', reason, detail}`); worker_error is `crashed`. */
const SUPERVISOR_REASONS = new Set(['second_bind', 'bad_host_message', 'messageerror', 'worker_failed', 'worker_error', 'forged_supervisor', 'forged_message']);

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

/** The deepest nesting of [ and { in JSON text (outside strings), before it is parsed (as core.js depthOf). */
function jsonDepth(text) {
  let depth = 0, deepest = 0, inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++;            // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) { if (++depth > deepest) deepest = depth; }
    else if (c === 93 || c === 125) depth--;
  }
  return deepest;
}
const uint = (v) => Number.isSafeInteger(v) && v >= 0;

/**
 * Checks one message from a sandbox.
 * @param {any} d            event.data
 * @param {number} portCount event.ports.length (must be 0)
 * @param {{state: string, callId: number|null}} expect what the host waits for
 * @returns {{ok: true, msg: any} | {ok: false, reason: string, code: string}}
 *   code: the destruction reason, 'crashed' for the supervisor's worker_error, else 'protocol_error'
 */
export function validateMessage(d, portCount, expect) {
  const bad = (reason) => /** @type {{ok: false, reason: string, code: string}} */ ({ ok: false, reason, code: 'protocol_error' });
  if (portCount !== 0) return bad('a message carried a MessagePort (one port per sandbox)');
  if (!isPlain(d) || typeof d.t !== 'string') return bad('not a plain object with a type');
  switch (d.t) {
    case 'ready':
      if (!exactKeys(d, ['t'])) return bad('ready: unexpected fields');
      if (expect.state !== 'starting') return bad('ready: not starting');
      return { ok: true, msg: d };
    case 'supervisor': {
      // The supervisor reports a boundary event (second bind, worker error, a worker
      // message of its type): always fatal. Only the supervisor can put this type on
      // the port (bootstrap.js refuses it from the worker as forged_supervisor), so a
      // well-formed worker_error is a crash; anything else is a protocol violation.
      if (!exactKeys(d, ['t', 'reason', 'detail']) || !SUPERVISOR_REASONS.has(d.reason) || !str(d.detail, LIMITS.errorText)) {
        return bad('supervisor: malformed report');
      }
      const r = bad('supervisor: ' + d.reason + (d.detail ? ' (' + d.detail.slice(0, 256) + ')' : ''));
      if (d.reason === 'worker_error') r.code = 'crashed';
      return r;
    }
    case 'result': {
      if (expect.state !== 'busy' || d.id !== expect.callId) return bad('result: not for the running call');
      if (d.ok === true) {
        if (!exactKeys(d, ['t', 'id', 'ok', 'json']) || !str(d.json, LIMITS.resultJson)) return bad('result: bad shape or too large');
        if (jsonDepth(d.json) > LIMITS.resultDepth) return bad(`result: nested deeper than ${LIMITS.resultDepth}`);
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
    case 'storage': {
      if (expect.state !== 'busy' || d.id !== expect.callId) return bad('storage: not for the running call');
      if (!exactKeys(d, ['t', 'id', 'req', 'op', 'key', 'json']) || !uint(d.req) || !STORAGE_OPS.has(d.op) ||
          !str(d.key, LIMITS.storageKey)) return bad('storage: bad shape');
      if (d.op === 'set') {
        if (!str(d.json, LIMITS.storageJson)) return bad('storage: set needs its value as JSON text');
        try { JSON.parse(d.json); } catch { return bad('storage: the value is not JSON'); }
      } else if (d.json !== null) {
        return bad('storage: only set carries a value');
      }
      return { ok: true, msg: d };
    }
    case 'task': {
      if (expect.state !== 'busy' || d.id !== expect.callId) return bad('task: not for the running call');
      if (!exactKeys(d, ['t', 'id', 'req', 'op', 'json']) || !uint(d.req) || !TASK_OPS.has(d.op) ||
          !str(d.json, LIMITS.taskJson)) return bad('task: bad shape');
      try { JSON.parse(d.json); } catch { return bad('task: the request is not JSON'); }
      return { ok: true, msg: d };
    }
    default:
      return bad('unknown message type');
  }
}

// ---------------------------------------------------------------- request checks

/** Methods refused as in the CLI (fetch.h step 2, the Fetch standard's forbidden methods). */
const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);

/**
 * Request header names refused (compared lowercase; `prefix` ones by prefix): the CLI's
 * kRefusedHeaders (src/taskyon/capability/fetch.h) and the Fetch standard's forbidden
 * request-header names, so direct and strict mode refuse the same set before anything leaves.
 * @type {ReadonlyArray<{name: string, prefix?: boolean, why: string}>}
 */
export const REFUSED_HEADERS = Object.freeze([
  { name: 'cookie', why: 'cookies are ambient credentials (M9); a tool sends its own credentials via {{secret:NAME}}' },
  { name: 'cookie2', why: 'cookies are ambient credentials (M9)' },
  { name: 'set-cookie', why: 'cookies are ambient credentials (M9)' },
  { name: 'host', why: 'the host comes from the checked URL only' },
  { name: 'proxy-', prefix: true, why: 'proxy headers address a proxy, and there is none' },
  { name: 'sec-', prefix: true, why: 'Sec- headers are the user agent\'s (Fetch standard)' },
  { name: 'connection', why: 'a hop-by-hop header (RFC 9110 §7.6.1)' },
  { name: 'keep-alive', why: 'a hop-by-hop header (RFC 9110 §7.6.1)' },
  { name: 'transfer-encoding', why: 'message framing is the transport\'s (RFC 9112 §6.1)' },
  { name: 'content-length', why: 'message framing is the transport\'s (RFC 9112 §6.2)' },
  { name: 'te', why: 'a hop-by-hop header (RFC 9110 §10.1.4)' },
  { name: 'trailer', why: 'a hop-by-hop header (RFC 9110 §6.6.2)' },
  { name: 'upgrade', why: 'a protocol switch is not a fetch (RFC 9110 §7.8)' },
  { name: 'expect', why: 'Expect changes framing (RFC 9110 §10.1.1)' },
  { name: 'x-http-method', why: 'a method override would let a read grant write' },
  { name: 'x-http-method-override', why: 'a method override would let a read grant write' },
  { name: 'x-method-override', why: 'a method override would let a read grant write' },
  { name: 'origin', why: 'the origin is the user agent\'s or the proxy\'s, never the tool\'s (Fetch standard)' },
  { name: 'referer', why: 'no referrer is sent (Fetch standard)' },
  { name: 'accept-charset', why: 'a forbidden request header (Fetch standard)' },
  { name: 'accept-encoding', why: 'content coding is the transport\'s (Fetch standard)' },
  { name: 'access-control-request-headers', why: 'CORS preflight headers are the user agent\'s (Fetch standard)' },
  { name: 'access-control-request-method', why: 'CORS preflight headers are the user agent\'s (Fetch standard)' },
  { name: 'date', why: 'a forbidden request header (Fetch standard)' },
  { name: 'dnt', why: 'a forbidden request header (Fetch standard)' },
  { name: 'via', why: 'a forbidden request header (Fetch standard)' },
]);

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;  // RFC 9110 §5.6.2
const BAD_VALUE = /[\r\n\0]/;                     // RFC 9110 §5.5

/** A header name as shown in a message: at most 64 characters, odd ones escaped (as the CLI's). */
function shown(s) {
  const out = s.slice(0, 64).replace(/[^\x20-\x7e]|["\\]/g, (c) => '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0'));
  return s.length > 64 ? out + '...' : out;
}

/**
 * The request rules of every mediated request (direct and strict mode), after validateMessage
 * accepted its shape: the CLI's fetch.h steps 2 and 4 with its codes. A refusal is the tool's
 * CapabilityError, not a protocol violation (the sandbox is kept).
 * @param {{method: string, headers: [string, string][]}} req
 * @returns {null | {code: 'invalid_request'|'policy_blocked', message: string}}
 */
export function checkRequest(req) {
  if (FORBIDDEN_METHODS.has(req.method)) return { code: 'policy_blocked', message: `method ${req.method} is refused` };
  for (const [name, value] of req.headers) {
    if (!TOKEN.test(name)) return { code: 'invalid_request', message: `header name "${shown(name)}" is not an HTTP token (RFC 9110 §5.6.2)` };
    const lower = name.toLowerCase();
    const refused = REFUSED_HEADERS.find((h) => (h.prefix ? lower.startsWith(h.name) : lower === h.name));
    if (refused) return { code: 'policy_blocked', message: `header "${shown(name)}" is refused: ${refused.why}` };
    if (BAD_VALUE.test(value)) return { code: 'invalid_request', message: `the value of header "${shown(name)}" holds CR, LF or NUL (RFC 9110 §5.5)` };
  }
  return null;
}
