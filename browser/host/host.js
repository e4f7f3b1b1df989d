// The browser sandbox host: retention, serialization and destruction as in
// DESIGN §5, with browser sandboxes (sandbox.js).
//
// * Retained per (revision, session): consecutive calls with the same key reuse
//   one sandbox (loaded code, in-memory state); other keys never share it.
// * Calls with one key are serialized (a queue per key); each call gets a
//   fresh `context` in the worker, refused once that call has ended.
// * Destroyed on: activate() of another revision of the tool ("superseded"),
//   timeout ("timeout"), a protocol violation or worker crash
//   ("protocol_error", "crashed"), the caller's abort signal
//   ("cancelled"), terminate() ("terminated"), closeSession() ("session_closed"),
//   after a disposable call ("disposable"), close() ("host_closed"), a failed
//   start ("start_failed"); the names are the CLI pool's where it has one;
//   and every other live sandbox when one is stopped while its code runs
//   ("renderer_recycled", see _recycleRenderer: B4 in a shared renderer).
// * Every creation and destruction is appended to `host.log` with its reason
//   (the in-page sandbox log; the checks read it).

import { Sandbox, loadAssets, fetchAsset } from './sandbox.js';
import { refuseAll } from './policy.js';
import { egressOptions } from './egress.js';
import { loadPyodideFiles, pythonAssets } from './python.js';

export { refuseAll } from './policy.js';
export { sandboxCsp } from './sandbox.js';
export { forgetPyodideFiles, loadPyodideFiles, PYODIDE_CACHE } from './python.js';
export { PYODIDE_MANIFEST } from './pyodide-manifest.js';

/** Every open SandboxHost of this page: recycling the renderer needs them all. */
const openHosts = new Set();
let recycling = false;

/** Default milliseconds per call. */
export const DEFAULT_TIMEOUT_MS = 5000;

export class SandboxHost {
  /**
   * @param {object} [o]
   * @param {(request: object) => Promise<object>} [o.decide] the fetch policy (policy.js); default refuses all
   * @param {URL|string} [o.assetsBase] folder of bootstrap.js and harness.js
   * @param {object} [o.fetchOptions] direct-mode fetch limits (fetch.js)
   * @param {{endpoint: string, token: string}} [o.egress] strict mode (B8, egress.js): every mediated
   *        request goes to tycli serve's /v1/fetch, `decide` is never consulted
   * @param {{stripCsp?: boolean, cspLayers?: string, keepIframeOnDestroy?: boolean, omitAddressSpace?: boolean, noRecycle?: boolean,
   *          pythonNoWasmEval?: boolean, pythonStartTimeoutMs?: number, exposeHarnessPort?: boolean}} [o.testing]
   *        negative controls for the checks (sandbox.js); never in a product page
   * @param {Element} [o.container] where sandbox iframes go (document.body)
   * @param {URL|string} [o.pyodideBase] folder of Pyodide's core files (python.js checks each by its id)
   * @param {URL|string} [o.wheelBase] folder of the shipped wheels (default browser/wheels/; checked by id the same way)
   * @param {(request: {op: string, key: string, json: string|null}, who: {revision: string, tool: string, task: string|null, run: string|null, live: () => boolean}) => Promise<any>} [o.storage]
   *        context.storage for tool code (store.js storageCapability(store)); default: every operation denied
   * @param {(request: {op: string, json: string}, who: {revision: string, tool: string, task: string|null, run: string|null, already: number, live: () => boolean}) => Promise<any>} [o.tasks]
   *        context.createSubtasksResult and context.resolveInvocation (tasks.js taskCapability(store, core)); default: denied
   * @param {(row: {seq: number, at: number, event: string, sandbox: number, tool: string, revision: string, session: string, reason: string, detail: string}) => void} [o.onRecord]
   *        told of every sandbox log row as it is written (server.js ServerRuns.sandboxLog sends destructions to the server's log)
   */
  constructor(o = {}) {
    this._decide = o.decide || refuseAll;
    this._storage = o.storage || null;
    this._tasks = o.tasks || null;
    this._onRecord = o.onRecord || null;
    this._assetsBase = new URL(o.assetsBase || '../sandbox/', import.meta.url);
    this._fetchOptions = o.fetchOptions || {};
    this._egress = o.egress ? egressOptions(o.egress) : null;
    /** 'strict' (the server decides every request) or 'direct' (decide + the page's fetch) */
    this.mode = this._egress ? 'strict' : 'direct';
    /** @type {{stripCsp?: boolean, cspLayers?: string, keepIframeOnDestroy?: boolean, omitAddressSpace?: boolean, noRecycle?: boolean,
     *          pythonNoWasmEval?: boolean, pythonStartTimeoutMs?: number, exposeHarnessPort?: boolean}} */
    this._testing = Object.freeze({ ...(o.testing || {}) });
    this._container = o.container || document.body;
    this._assets = null;
    this._pythonAssets = null;
    this._pyodideBase = new URL(o.pyodideBase || '../../node_modules/pyodide/', import.meta.url);
    this._wheelBase = new URL(o.wheelBase || '../wheels/', import.meta.url);
    this._retained = new Map();  // key -> Sandbox
    this._queues = new Map();    // key -> tail promise
    this._live = new Set();      // every live sandbox, retained or disposable
    this.log = [];               // {seq, at, event, sandbox, tool, revision, session, reason, detail}
    this._onWindowMessage = (e) => {
      for (const sb of this._live) {
        if (sb.iframe && e.source === sb.iframe.contentWindow) { sb.onWindowMessage(); return; }
      }
    };
    window.addEventListener('message', this._onWindowMessage);
    openHosts.add(this);
  }

  _record(event, sb, reason = '', detail = '') {
    const row = { seq: this.log.length + 1, at: performance.now(), event, sandbox: sb.id, tool: sb.tool,
      revision: sb.revision, session: sb.session, reason, detail };
    this.log.push(row);
    if (this._onRecord) {
      try { this._onRecord({ ...row }); } catch { /* a listener's failure is its own */ }
    }
  }

  async assets() {
    if (this._assets === null) this._assets = await loadAssets(this._assetsBase);
    return this._assets;
  }

  // The Python sandbox's assets (python.js): the core files verified by id first (B6).
  async pythonAssets() {
    if (!this._pythonAssets) {
      this._pythonAssets = (async () => {
        const js = await this.assets();
        const harness = await (await fetchAsset(this._assetsBase, 'python_harness.js')).text();
        return pythonAssets(js, harness, await loadPyodideFiles(this._pyodideBase, { wheelBase: this._wheelBase }), this._testing);
      })();
      this._pythonAssets.catch(() => { this._pythonAssets = null; });  // a refused file is retried next time, never half-used
    }
    return this._pythonAssets;
  }

  async _create(tool, revision, session, code, runtime = 'js') {
    const sb = new Sandbox({
      assets: runtime === 'python' ? await this.pythonAssets() : await this.assets(), code, tool, revision, session, decide: this._decide,
      fetchOptions: this._fetchOptions, egress: this._egress, storage: this._storage, tasks: this._tasks, container: this._container, testing: this._testing,
      onDestroy: (s, reason, detail, wasRunning) => {
        this._live.delete(s);
        const key = keyOf(s.revision, s.session);
        if (this._retained.get(key) === s) this._retained.delete(key);
        this._record('destroyed', s, reason, detail);
        if (wasRunning) this._recycleRenderer(s, reason);
      },
    });
    this._live.add(sb);
    this._record('created', sb);
    await sb.start();
    return sb;
  }

  /**
   * Runs one call of a tool revision.
   * @param {{tool: string, revision: string, session?: string, code: string, args?: unknown,
   *          timeoutMs?: number, disposable?: boolean, signal?: AbortSignal, runtime?: 'js'|'python', task?: string, run?: string}} c
   *   task: the call's task id in the store (store.compileCall, or the server's: server.js), for createSubtasksResult and resolveInvocation
   *   run: the server's run of the call (server.js ServerRuns), handed to the storage and tasks functions
   *   runtime 'python': code is Python source run by Pyodide (python.js, docs/browser.md "Browser Python")
   * @returns {Promise<{ok: boolean, value?: unknown, error?: {code: string, name?: string, message: string}, logs: {level: string, text: string}[],
   *                     sandbox?: number, sandboxKept?: boolean}>}
   *   error.code is the destruction reason when the sandbox was destroyed, the thrown
   *   error's code (or "tool_error") when the tool threw and the sandbox was kept.
   */
  async call(c) {
    const session = c.session ?? 'default';
    const timeoutMs = c.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (typeof c.tool !== 'string' || typeof c.revision !== 'string' || typeof c.code !== 'string') {
      return { ok: false, error: { code: 'bad_request', message: 'tool, revision and code must be strings' }, logs: [] };
    }
    // The arguments are JSON (as in the CLI): anything else is refused before a sandbox is touched.
    let args;
    try {
      const text = JSON.stringify(c.args ?? {});
      if (text === undefined || text.length > 1 << 20) throw new Error('not JSON or over 1 MiB');
      args = JSON.parse(text);
    } catch (e) {
      return { ok: false, error: { code: 'bad_request', message: 'the arguments must be JSON of at most 1 MiB: ' + (e && e.message) }, logs: [] };
    }
    if (c.runtime !== undefined && c.runtime !== 'js' && c.runtime !== 'python') {
      return { ok: false, error: { code: 'bad_request', message: 'runtime must be "js" or "python"' }, logs: [] };
    }
    c = { ...c, args };
    if (c.disposable) {
      let sb;
      try { sb = await this._create(c.tool, c.revision, session, c.code, c.runtime); } catch (e) { return startFailure(e); }
      const r = await runOn(sb, c, timeoutMs);
      sb.destroy('disposable', 'a disposable call ended');
      return r;
    }
    const key = keyOf(c.revision, session);
    const prev = this._queues.get(key) || Promise.resolve();
    const turn = prev.then(async () => {
      if (c.signal && c.signal.aborted) return { ok: false, error: { code: 'cancelled', message: 'aborted before it ran' }, logs: [] };
      let sb = this._retained.get(key);
      if (!sb || sb.state === 'destroyed') {
        try { sb = await this._create(c.tool, c.revision, session, c.code, c.runtime); } catch (e) { return startFailure(e); }
        this._retained.set(key, sb);
      }
      return runOn(sb, c, timeoutMs);
    });
    const tail = turn.catch(() => {});
    this._queues.set(key, tail);
    tail.then(() => { if (this._queues.get(key) === tail) this._queues.delete(key); });
    return turn;
  }

  // B4: a sandbox stopped while its code may be running. Chromium puts all of a
  // page's sandbox iframes in one renderer process; removing one iframe from a
  // renderer that stays alive leaves a CPU-bound worker running for ~2 s (the
  // same forcible-termination delay as worker.terminate()). Only the renderer's
  // exit stops it at once, and the page cannot see which sandboxes share it, so
  // every other live sandbox goes too ("renderer_recycled"). Retained state is a
  // performance feature (§5), never storage: losing it is the price of B4.
  _recycleRenderer(stopped, reason) {
    if (this._testing.keepIframeOnDestroy || this._testing.noRecycle || recycling) return;
    recycling = true;
    try {
      for (const host of openHosts) {  // other hosts' sandboxes share the renderer too
        for (const sb of [...host._live]) {
          sb.destroy('renderer_recycled', `sandbox ${stopped.id} was stopped while running (${reason}); its renderer is shut down`);
        }
      }
    } finally {
      recycling = false;
    }
  }

  /** Activates `revision` under `tool`: every sandbox of another revision of it is destroyed (S3). */
  activate(tool, revision) {
    for (const sb of [...this._live]) {
      if (sb.tool === tool && sb.revision !== revision) sb.destroy('superseded', `${tool} is now ${revision}`);
    }
  }

  /** Destroys the retained sandbox of (revision, session), if any (S5). */
  terminate(revision, session = 'default') {
    const sb = this._retained.get(keyOf(revision, session));
    if (sb) sb.destroy('terminated', 'terminated by the host');
    return Boolean(sb);
  }

  /** Destroys every retained sandbox of `session` (H3: a session's state ends with it). */
  closeSession(session) {
    let n = 0;
    for (const sb of [...this._live]) {
      if (sb.session === session) { sb.destroy('session_closed', `session ${session} closed`); n++; }
    }
    return n;
  }

  /** The live sandboxes: {id, tool, revision, session, state}. */
  sandboxes() {
    return [...this._live].map((s) => ({ id: s.id, tool: s.tool, revision: s.revision, session: s.session, state: s.state }));
  }

  close() {
    for (const sb of [...this._live]) sb.destroy('host_closed', 'the host closed');
    window.removeEventListener('message', this._onWindowMessage);
    openHosts.delete(this);
  }
}

function keyOf(revision, session) { return JSON.stringify([revision, session]); }

async function runOn(sb, c, timeoutMs) {
  const r = await sb.run(c.args ?? {}, { timeoutMs, signal: c.signal, task: typeof c.task === 'string' ? c.task : null,
    run: typeof c.run === 'string' ? c.run : null });
  return { ...r, sandbox: sb.id };
}

function startFailure(e) {
  return { ok: false, error: { code: e && e.code ? e.code : 'start_failed', message: String(e && e.message) }, logs: [] };
}
