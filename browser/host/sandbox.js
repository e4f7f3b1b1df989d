// One browser sandbox: an opaque-origin <iframe sandbox="allow-scripts" srcdoc>
// whose only script is the hash-pinned supervisor (browser/sandbox/bootstrap.js),
// and inside it a classic Blob worker running the harness with the tool's code
// (DESIGN §9, B1-B4). The host talks to it over ONE MessagePort bound at the
// handshake; every message is validated (validate.js) and anything else
// destroys the sandbox. Destruction always removes the iframe: a CPU-bound
// worker survives worker.terminate() for ~2 s in Chromium, the iframe's removal
// stops it at once (BROWSER.md), and the page cannot tell whether a worker
// stopped, so it never relies on terminate() alone.

import { validateMessage, checkRequest, LIMITS } from './validate.js';
import { directFetch, FetchRefused } from './fetch.js';
import { egressFetch } from './egress.js';

/** The sandbox CSP (meta first in the srcdoc and the iframe's csp attribute). */
export function sandboxCsp(bootstrapHash) {
  return `default-src 'none'; script-src '${bootstrapHash}' blob:; worker-src blob:; connect-src 'none'; base-uri 'none'; form-action 'none'`;
}

/** Milliseconds the sandbox has to become ready (iframe, supervisor, worker, tool code). */
export const START_TIMEOUT_MS = 10000;

/**
 * Loads the supervisor and harness sources and pins the supervisor by SHA-256,
 * computed here from the exact bytes served (never written by hand).
 * @param {URL} base the folder of bootstrap.js and harness.js
 */
export async function loadAssets(base) {
  const get = async (name) => (await fetchAsset(base, name)).text();
  const [bootstrap, harness] = await Promise.all([get('bootstrap.js'), get('harness.js')]);
  if (/<\/script|<!--/i.test(bootstrap)) throw new Error('bootstrap.js must not contain "</script" or "<!--" (it is inlined)');
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(bootstrap));
  const hash = 'sha256-' + btoa(String.fromCharCode(...new Uint8Array(digest)));
  return Object.freeze({ bootstrap, harness, hash, csp: sandboxCsp(hash) });
}

/**
 * One asset of the host page (a sandbox script, a Pyodide core file): no credentials, no
 * cache, and an HTTP error is an error (never a page of error text taken as the asset).
 * @param {URL} base @param {string} name
 * @returns {Promise<Response>} the response, status 2xx
 */
export async function fetchAsset(base, name) {
  const r = await fetch(new URL(name, base), { credentials: 'omit', cache: 'no-store' });
  if (!r.ok) throw new Error(`asset ${name}: HTTP ${r.status}`);
  return r;
}

/** An error whose `code` is the destruction reason or a start failure. */
export class SandboxError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

let nextSandboxId = 1;

export class Sandbox {
  /**
   * @param {object} o
   * @param {{bootstrap: string, harness: string, hash: string, csp: string, kind?: string, startTimeoutMs?: number,
   *          files?: () => Record<string, ArrayBuffer>, wrap?: (code: string) => string}} o.assets  kind 'module': python.js
   * @param {string} o.code       the tool's function expression
   * @param {string} o.tool @param {string} o.revision @param {string} o.session
   * @param {(request: object) => Promise<object>} o.decide  the fetch policy seam (policy.js)
   * @param {object} [o.fetchOptions] directFetch options (timeoutMs, maxResponseBytes)
   * @param {import('./egress.js').EgressOptions|null} [o.egress] strict mode: every fetch goes to this
   *        egress proxy (egress.js), `decide` is not consulted
   * @param {(request: {op: string, key: string, json: string|null}, who: {revision: string, tool: string, task: string|null, run: string|null, live: () => boolean}) =>
   *         Promise<{ok: true, json: string} | {ok: false, code: string, message: string}>} [o.storage]
   *        context.storage's decisions (store.js storageCapability); absent: every operation is denied
   * @param {(request: {op: string, json: string}, who: {revision: string, tool: string, task: string|null, run: string|null, already: number, live: () => boolean}) =>
   *         Promise<{ok: true, json: string, created: number} | {ok: false, code: string, message: string}>} [o.tasks]
   *        createSubtasksResult and resolveInvocation (tasks.js taskCapability); absent: both denied
   * @param {(sb: Sandbox, reason: string, detail: string, wasRunning: boolean) => void} o.onDestroy
   * @param {Element} o.container where the iframe goes
   * @param {{stripCsp?: boolean, cspLayers?: string, keepIframeOnDestroy?: boolean, omitAddressSpace?: boolean, exposeHarnessPort?: boolean}} [o.testing]
   *        negative controls for the checks only: they exist to show that B2, B4 and M6 fail
   *        without the CSP / the iframe's removal / the public address space; cspLayers
   *        'meta' or 'attribute' keeps one CSP layer only.
   */
  constructor(o) {
    this.id = nextSandboxId++;
    this.tool = o.tool;
    this.revision = o.revision;
    this.session = o.session;
    this.state = 'starting';  // starting | ready | busy | destroyed
    this.destroyReason = null;
    this._o = o;
    this._testing = o.testing || {};
    this._call = null;        // {id, resolve, logs, timer, controller, requests}
    this._nextCallId = 1;
    this._codeLine = 0;
    this._startWaiter = null;
    this.iframe = null;
    this.port = null;
    this.startedAt = performance.now();
    this.readyAt = null;
  }

  /** Creates the iframe and worker; resolves when the tool code is loaded.
   * @returns {Promise<void>} */
  start() {
    return new Promise((/** @type {(v?: void) => void} */ resolve, reject) => {
      const { assets } = this._o;
      const startMs = assets.startTimeoutMs || START_TIMEOUT_MS;  // a Python sandbox boots Pyodide (python.js)
      this._startWaiter = { resolve, reject, timer: setTimeout(() => this.destroy('start_failed', 'not ready within ' + startMs + ' ms'), startMs) };
      const iframe = document.createElement('iframe');
      iframe.setAttribute('sandbox', 'allow-scripts');  // opaque origin: never allow-same-origin or allow-popups*
      iframe.setAttribute('referrerpolicy', 'no-referrer');
      iframe.setAttribute('title', 'tool sandbox');
      iframe.style.display = 'none';
      // Two layers: the meta CSP first in the srcdoc, and the csp attribute (Chromium's
      // embedded enforcement). The test modes drop one or both to show each layer holds alone.
      const layers = this._testing.stripCsp ? '' : (this._testing.cspLayers || 'meta+attribute');
      if (layers.includes('attribute')) iframe.setAttribute('csp', assets.csp);
      const meta = layers.includes('meta') ? `<meta http-equiv="Content-Security-Policy" content="${assets.csp}">` : '';
      iframe.srcdoc = `${meta}<script>${assets.bootstrap}</script>`;
      iframe.dataset.sandboxId = String(this.id);
      iframe.addEventListener('load', () => this._bind(), { once: true });
      this.iframe = iframe;
      this._o.container.appendChild(iframe);
    });
  }

  _bind() {
    if (this.state === 'destroyed') return;
    const channel = new MessageChannel();
    this.port = channel.port1;
    this.port.onmessage = (e) => this._onMessage(e);
    this.port.onmessageerror = () => this.destroy('protocol_error', 'a message could not be deserialized');
    const { assets } = this._o;
    // An opaque origin cannot be named as a target: '*' it is, and the port is what binds.
    // testing.exposeHarnessPort: the harness leaves its own port on self for tool code (the checks
    // that post misshaped protocol messages on it, so the host's validation is what they meet).
    const expose = this._testing.exposeHarnessPort ? { expose: true } : {};
    if (assets.kind === 'module') {  // Python (python.js): the code is a string literal, the core files go along
      const files = assets.files();
      this.iframe.contentWindow.postMessage({ t: 'bind', kind: 'module', source: assets.harness + '\n' + assets.wrap(this._o.code), files, ...expose },
        '*', [channel.port2, ...Object.values(files)]);
      return;
    }
    const prefix = assets.harness + '\n__taskyonStart((\n';
    this._codeLine = prefix.split('\n').length - 1;  // lines before the tool code's first
    const source = prefix + this._o.code + '\n));\n';
    this.iframe.contentWindow.postMessage({ t: 'bind', kind: 'classic', source, ...expose }, '*', [channel.port2]);
  }

  /** A message from the sandbox's iframe window (not the port): always a violation (B3). */
  onWindowMessage() {
    this.destroy('protocol_error', 'a window message from the sandbox (only the bound port may speak)');
  }

  _onMessage(e) {
    if (this.state === 'destroyed') return;
    const expect = { state: this.state, callId: this._call ? this._call.id : null };
    const v = validateMessage(e.data, e.ports ? e.ports.length : 0, expect);
    if (v.ok === false) {
      for (const p of e.ports || []) p.close();
      const crashed = v.code === 'crashed';  // the supervisor's worker_error (a forged one is protocol_error)
      // Line numbers of a worker error count from the harness; name the tool code's line.
      const detail = crashed ? v.reason.replace(/ at line (\d+)\)$/, (_, n) => {
        const line = Number(n) - this._codeLine;
        return line >= 1 ? ` at line ${line} of the tool code)` : ` in the harness, line ${n})`;
      }) : v.reason;
      this.destroy(v.code, detail);
      return;
    }
    const m = v.msg;
    if (m.t === 'ready') {
      this.state = 'ready';
      this.readyAt = performance.now();
      clearTimeout(this._startWaiter.timer);
      const w = this._startWaiter;
      this._startWaiter = null;
      w.resolve();
    } else if (m.t === 'log') {
      if (this._call.logs.length >= LIMITS.logsPerCall) {
        this.destroy('protocol_error', `more than ${LIMITS.logsPerCall} log messages in one call`);
        return;
      }
      this._call.logs.push({ level: m.level, text: m.text });
    } else if (m.t === 'result') {
      const call = this._call;
      const finish = () => {
        if (this._call !== call || this.state !== 'busy') return;  // destroyed meanwhile: destroy() answered
        this._endCall();
        this.state = 'ready';
        if (m.ok) call.resolve({ ok: true, value: JSON.parse(m.json), logs: call.logs });
        else call.resolve({ ok: false, error: { code: m.error.code || 'tool_error', name: m.error.name, message: m.error.message }, logs: call.logs, sandboxKept: true });
      };
      // Storage and tree requests the tool sent before its result are answered first, as the
      // CLI's pool handles a call's requests before its result: nothing lands after the call.
      if (call.inflight.size === 0) finish();
      else Promise.allSettled([...call.inflight]).then(finish);
    } else if (m.t === 'fetch') {
      this._onFetch(m);
    } else if (m.t === 'storage') {
      this._onStorage(m);
    } else if (m.t === 'task') {
      this._onTask(m);
    }
  }

  // The running call, with request m.req counted in it; null (the sandbox destroyed) for a repeated
  // request id or one past LIMITS.requestsPerCall, fetch and storage together.
  _admitRequest(m) {
    const call = this._call;
    if (call.requests.has(m.req) || call.requests.size >= LIMITS.requestsPerCall) {
      this.destroy('protocol_error', `a repeated request id or more than ${LIMITS.requestsPerCall} requests in one call`);
      return null;
    }
    call.requests.add(m.req);
    return call;
  }

  // A request of the running call, held in call.inflight until it is answered (the result waits for it).
  _track(call, work) {
    const p = work();
    call.inflight.add(p);
    p.finally(() => call.inflight.delete(p)).catch(() => {});
  }

  _live(call) { return () => this._call === call && this.state === 'busy'; }

  // context.storage (S7): decided in the host page by o.storage (store.js storageCapability) with
  // this sandbox's revision and tool (M3: the channel's, never the message's); refused without one.
  _onStorage(m) {
    const call = this._admitRequest(m);
    if (call) this._track(call, () => this._storage(m, call));
  }

  async _storage(m, call) {
    let r;
    try {
      r = this._o.storage
        ? await this._o.storage({ op: m.op, key: m.key, json: m.json }, { revision: this.revision, tool: this.tool, task: call.task, run: call.run, live: this._live(call) })
        : { ok: false, code: 'denied', message: 'this page offers no storage to tool code' };
    } catch (e) {
      r = { ok: false, code: 'denied', message: 'the page\'s storage failed: ' + String(e && e.message) };
    }
    if (this._call !== call || this.state !== 'busy') return;
    this.port.postMessage(r.ok ? { t: 'storage_result', id: call.id, req: m.req, ok: true, json: String(r.json) }
      : { t: 'storage_result', id: call.id, req: m.req, ok: false, code: String(r.code), message: String(r.message) });
  }

  // createSubtasksResult and resolveInvocation (M14, M15): decided in the host page by o.tasks
  // (tasks.js taskCapability) for this sandbox's revision and tool (M3) and the call's task.
  // One call's tree requests are decided one after another, so each sees the subtasks the ones
  // before it made (64 per call, as the CLI, which handles a call's requests in order).
  _onTask(m) {
    const call = this._admitRequest(m);
    if (!call) return;
    const turn = (call.taskTurn || Promise.resolve()).then(() => this._task(m, call));
    call.taskTurn = turn;
    this._track(call, () => turn);
  }

  async _task(m, call) {
    let r;
    try {
      r = this._o.tasks
        ? await this._o.tasks({ op: m.op, json: m.json }, { revision: this.revision, tool: this.tool, task: call.task, run: call.run, already: call.subtasks, live: this._live(call) })
        : { ok: false, code: 'denied', message: `this page offers no ${m.op} to tool code` };
    } catch (e) {
      r = { ok: false, code: 'denied', message: `the page's ${m.op} failed: ` + String(e && e.message) };
    }
    if (r.ok) call.subtasks += Number(r.created) || 0;
    if (this._call !== call || this.state !== 'busy') return;
    this.port.postMessage(r.ok ? { t: 'task_result', id: call.id, req: m.req, ok: true, json: String(r.json) }
      : { t: 'task_result', id: call.id, req: m.req, ok: false, code: String(r.code), message: String(r.message) });
  }

  async _onFetch(m) {
    const call = this._admitRequest(m);
    if (!call) return;
    const reply = (r) => {
      if (this._call === call && this.state === 'busy') this.port.postMessage({ t: 'fetch_result', id: call.id, req: m.req, ...r }, r.body ? [r.body] : []);
    };
    const req = { url: m.url, method: m.method, headers: m.headers, body: m.body };
    // The request rules hold in both modes, before the policy or the proxy sees the request.
    const refused = checkRequest(req);
    if (refused) { reply({ ok: false, ...refused }); return; }
    try {
      const r = this._o.egress ? await this._strictFetch(req, call) : await this._directFetch(req, call);
      reply({ ok: true, status: r.status, statusText: r.statusText, headers: r.headers, body: r.body });
    } catch (e) {
      reply({ ok: false, code: e instanceof FetchRefused ? e.code : 'network_error', message: String(e && e.message) });
    }
  }

  // Direct mode: the page's `decide`, then the page's own fetch (fetch.js).
  async _directFetch(req, call) {
    const request = { revision: this.revision, session: this.session, tool: this.tool, url: req.url, method: req.method, headers: req.headers };
    let verdict;
    try {
      verdict = await this._o.decide(request);
    } catch (e) {
      verdict = { allow: false, code: 'policy_error', message: String(e && e.message) };
    }
    if (!verdict || verdict.allow !== true) {
      throw new FetchRefused(String(verdict?.code || 'denied'), String(verdict?.message || 'refused by the policy'));
    }
    // A decider may hand back the headers with host-side secrets filled in (store.js grantedDecider);
    // the tool's own request never held them.
    const sent = Array.isArray(verdict.headers) ? { ...req, headers: verdict.headers } : req;
    return directFetch(sent, { ...this._o.fetchOptions, omitAddressSpace: Boolean(this._testing.omitAddressSpace), signal: call.controller.signal });
  }

  // B8: strict mode. The server decides from its own store; the page's decide is bypassed.
  _strictFetch(req, call) {
    return egressFetch(req, call.task ? { revision: this.revision, task: call.task } : { revision: this.revision }, this._o.egress, call.controller.signal);
  }

  _endCall() {
    const call = this._call;
    if (!call) return;
    clearTimeout(call.timer);
    if (call.signal && call.onAbort) call.signal.removeEventListener('abort', call.onAbort);
    call.controller.abort();
    this._call = null;
  }

  /**
   * Runs one call (the host serializes calls; a second concurrent call is refused).
   * @param {unknown} args @param {{timeoutMs: number, signal?: AbortSignal, task?: string|null, run?: string|null}} opts
   *   task: the call's task id in the store (M14, M15; strict mode sends it with each fetch); run: the server's run of the call (server.js)
   * @returns {Promise<{ok: boolean, value?: unknown, error?: {code: string, name?: string, message: string}, logs: object[],
   *                    sandboxKept?: boolean, deadline?: number}>}  deadline: performance.now() of the timeout
   */
  run(args, { timeoutMs, signal, task = null, run = null }) {
    if (this.state !== 'ready') return Promise.resolve({ ok: false, error: { code: 'not_ready', message: 'sandbox is ' + this.state }, logs: [] });
    return new Promise((resolve) => {
      const call = { id: this._nextCallId++, resolve, logs: [], requests: new Set(), controller: new AbortController(), signal,
        task, run, subtasks: 0, inflight: new Set(), taskTurn: null };
      this._call = call;
      this.state = 'busy';
      call.timer = setTimeout(() => this.destroy('timeout', `the call ran longer than ${timeoutMs} ms`), timeoutMs);
      call.deadline = performance.now() + timeoutMs;
      if (signal && signal.aborted) { this.destroy('cancelled', 'the caller aborted the call'); return; }
      if (signal) {
        call.onAbort = () => this.destroy('cancelled', 'the caller aborted the call');
        signal.addEventListener('abort', call.onAbort, { once: true });
      }
      try {
        this.port.postMessage({ t: 'call', id: call.id, args });
      } catch (e) {
        this.destroy('protocol_error', 'the arguments cannot be sent: ' + (e && e.message));
      }
    });
  }

  /** Destroys the sandbox (idempotent): the iframe goes, with it the worker. */
  destroy(reason, detail = '') {
    if (this.state === 'destroyed') return;
    const wasRunning = this.state !== 'ready';  // tool code may be running (a call, or loading)
    this.state = 'destroyed';
    this.destroyReason = reason;
    this.destroyedAt = performance.now();
    const call = this._call;
    this._endCall();
    if (this.port) {
      try { this.port.postMessage({ t: 'terminate' }); } catch { /* the port may be gone */ }
      if (!this._testing.keepIframeOnDestroy) this.port.close();
    }
    if (this.iframe && !this._testing.keepIframeOnDestroy) this.iframe.remove();
    if (this._startWaiter) {
      clearTimeout(this._startWaiter.timer);
      this._startWaiter.reject(new SandboxError(reason, detail));
      this._startWaiter = null;
    }
    if (call) call.resolve({ ok: false, error: { code: reason, message: detail }, logs: call.logs, deadline: call.deadline });
    this._o.onDestroy(this, reason, detail, wasRunning);
  }
}
