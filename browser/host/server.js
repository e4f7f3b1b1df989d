// The page using `tycli serve`'s store instead of its own (issue 14; docs/browser.md
// "Using the server's store"; the server side is src/taskyon/http/runs.h). A call is a
// run of the server: the server compiles and pins it (T1) and answers the pinned
// revision's code; the page runs that code in its own sandbox (SandboxHost: the same
// iframe, worker, CSP and lifetime); the tool's storage and tree requests are decided by
// the server under the run's revision (M3, M14, M15, S7) and its fetches by the egress
// proxy (strict mode, B8); the page reports the outcome, which the server stores with
// the call and the subtasks — so `tycli task tree`, `tycli audit` and `tycli sandbox log`
// show what the browser did, and grants are the ones `tycli grant` gives.
//
// Nothing here decides anything: every decision is the server's. What the store holds
// of the outcome (value or error, logs) and the runtime ({"kind": "browser"}) is the
// page's word, recorded as such.
//
//   const server = new ServerRuns({ token });                      // same origin as tycli serve's /v1
//   const host = new SandboxHost({ egress: server.egress(), ...server.capabilities(), onRecord: server.sandboxLog });
//   const r = await server.call(host, { tool: 'add', args: { num1: 2, num2: 40 } });
//   // r: SandboxHost.call's answer plus `record`, the server's answer (POST /v1/call's shape)

/** Status names of the server's records (sandbox::status_name) for the page's answers. */
const STATUSES = new Set(['tool_error', 'timeout', 'crashed', 'protocol_error', 'cancelled']);

/** The server keeps 1000 log entries and 1 MiB of their text (runs.h): the page sends no more, and says so. */
const LOG_ENTRIES = 1000, LOG_BYTES = 1 << 20;
const LEVELS = new Set(['log', 'info', 'warn', 'error', 'debug']);

/** @param {{level: string, text: string}[]} logs */
function keptLogs(logs = []) {
  const out = [];
  let bytes = 0;
  for (const l of logs) {
    const text = String(l.text);
    const size = new TextEncoder().encode(text).length;
    if (out.length >= LOG_ENTRIES - 1 || bytes + size > LOG_BYTES) {
      out.push({ level: 'stderr', text: `[${logs.length - out.length} more log entries dropped by the page: the server keeps ${LOG_ENTRIES} entries, ${LOG_BYTES} bytes]` });
      break;
    }
    bytes += size;
    out.push({ level: LEVELS.has(l.level) ? l.level : 'log', text });
  }
  return out;
}

/** A refusal of the server, as a capability function answers it. */
const refusal = (code, message) => ({ ok: false, code: String(code), message: String(message) });

/** The browser and its version, as the run's runtime record keeps it ("HeadlessChrome 156.0.8078.73"). */
export function browserVersion() {
  const m = /(HeadlessChrome|Chromium|Chrome|Firefox|Version)\/([0-9][0-9.]{0,30})/.exec(navigator.userAgent);
  return m ? `${m[1] === 'Version' ? 'Safari' : m[1]} ${m[2]}` : 'unknown browser';
}

export class ServerRuns {
  /**
   * @param {{token: string, base?: string, timeoutMs?: number}} o token: the server's bearer token
   *   (64 hex); base: the URL the API's /v1 is under (default: this page's origin, as `tycli serve
   *   --page` serves it); timeoutMs: how long one API request may take (default 30000)
   */
  constructor(o) {
    if (!o || typeof o.token !== 'string' || !/^[0-9a-f]{64}$/.test(o.token)) throw new TypeError('ServerRuns needs {token}: tycli serve\'s 64-hex-digit token');
    this._token = o.token;
    this._base = new URL(o.base ?? '/', location.href).href.replace(/\/$/, '');
    this._timeoutMs = o.timeoutMs ?? 30000;
    /** @type {Set<string>} revisions this page ran as runs: their sandboxes' destructions go to the server's log */
    this._revisions = new Set();
    this.sandboxLog = this.sandboxLog.bind(this);
  }

  /** One API request: the answer's JSON, or {error: {code, message}} (the server's, or the transport's). */
  async _api(method, path, body) {
    let r;
    try {
      r = await fetch(this._base + path, {
        method, headers: { Authorization: 'Bearer ' + this._token, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: 'omit', redirect: 'error', cache: 'no-store', referrerPolicy: 'no-referrer', signal: AbortSignal.timeout(this._timeoutMs),
      });
    } catch (e) {
      return { status: 0, json: { error: { code: 'server_unavailable', message: 'tycli serve cannot be reached: ' + (e && e.message) } } };
    }
    let json;
    try { json = await r.json(); } catch { json = { error: { code: 'server_error', message: `tycli serve answered HTTP ${r.status} without JSON` } }; }
    return { status: r.status, json };
  }

  /** Strict mode's options for SandboxHost: every fetch goes to the server's egress proxy. */
  egress() { return { endpoint: this._base + '/v1/fetch', token: this._token }; }

  /**
   * SandboxHost's `storage` and `tasks`: each request sent to the run of the call (who.run),
   * decided by the server. A call that is not a run (no who.run) is refused.
   */
  capabilities() {
    const ask = async (who, op, args) => {
      if (typeof who.run !== 'string') return refusal('denied', `${op}: this call is not a run of the server (ServerRuns.call)`);
      if (!who.live()) return refusal('call_ended', `the call ended before its ${op} was sent`);
      const { status, json } = await this._api('POST', `/v1/runs/${encodeURIComponent(who.run)}/requests`, { op, args });
      if (status !== 200 || !json || !('value' in json)) return refusal(json?.error?.code || 'denied', json?.error?.message || `the server answered HTTP ${status}`);
      return { ok: true, value: json.value };
    };
    const parsed = (text) => { try { return { ok: true, value: JSON.parse(text) }; } catch { return { ok: false }; } };
    return {
      storage: async ({ op, key, json }, who) => {
        let args;
        if (op === 'list') args = { prefix: String(key) };
        else if (op === 'set') {
          const v = parsed(json);
          if (!v.ok) return refusal('invalid_request', 'storage.set: the value is not JSON');
          args = { key: String(key), value: v.value };
        } else args = { key: String(key) };
        const r = await ask(who, 'storage.' + op, args);
        return r.ok ? { ok: true, json: JSON.stringify(r.value ?? null) } : r;
      },
      tasks: async ({ op, json }, who) => {
        const v = parsed(json);
        if (!v.ok || v.value === null || typeof v.value !== 'object') return refusal('invalid_request', `${op}: the request is not a JSON object`);
        const r = await ask(who, op, v.value);
        return r.ok ? { ok: true, json: JSON.stringify(r.value), created: op === 'createSubtasksResult' && Array.isArray(r.value) ? r.value.length : 0 } : r;
      },
    };
  }

  /**
   * SandboxHost's `onRecord`: a destruction of a sandbox of a revision this page ran as a run
   * is appended to the server's sandbox log ("browser: REASON: DETAIL"). Fire and forget.
   * @param {{event: string, revision: string, tool: string, reason: string, detail: string, sandbox: number, session: string}} row
   */
  sandboxLog(row) {
    if (row.event !== 'destroyed' || !this._revisions.has(row.revision)) return;
    const detail = `sandbox ${row.sandbox}, session ${row.session}: ${row.detail}`.replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, 400);
    this._api('POST', '/v1/sandbox-log', { revision: row.revision, tool: row.tool, reason: row.reason, detail })
      .catch(() => { /* the page's own log still has it */ });
  }

  /**
   * Runs one call of a server tool in `host`: started on the server (compiled, pinned), run here,
   * reported to the server (stored). `parent`: a task id of the server's store (the call is
   * compiled in its scope). Answers SandboxHost.call's shape plus `task` (the server's call task),
   * `run` and `record` (the server's answer to the report), or {ok: false, error} when the server
   * refused to start it (nothing ran).
   * @param {import('./host.js').SandboxHost} host
   * @param {{tool: string, args?: unknown, parent?: string, session?: string, timeoutMs?: number, disposable?: boolean, signal?: AbortSignal}} c
   * @returns {Promise<{ok: boolean, value?: unknown, error?: {code: string, name?: string, message: string}, logs: {level: string, text: string}[],
   *                    sandbox?: number, sandboxKept?: boolean, task?: string, run?: string, record?: any}>}
   */
  async call(host, c) {
    const body = { tool: c.tool, args: c.args ?? {}, runtime: { kind: 'browser', version: browserVersion() } };
    if (c.parent !== undefined) body.parent = c.parent;
    if (c.timeoutMs !== undefined) body.timeoutMs = c.timeoutMs;
    const started = await this._api('POST', '/v1/runs', body);
    if (started.status !== 201) {
      return { ok: false, error: { code: started.json?.error?.code || 'server_error', message: started.json?.error?.message || `HTTP ${started.status}` }, logs: [] };
    }
    const s = started.json;
    this._revisions.add(s.tool.revision);
    const t0 = performance.now();
    const r = await host.call({ tool: s.tool.name, revision: s.tool.revision, code: s.code, args: c.args ?? {}, session: c.session,
      timeoutMs: s.timeoutMs, disposable: c.disposable, signal: c.signal, task: s.task, run: s.run });
    // The status is the host's, never the tool's: a tool that threw (the sandbox kept) is a
    // tool_error whatever `code` its error carries; a destroyed sandbox's reason maps to the
    // server's status when it has one, else crashed (the page's reason kept in the message).
    const status = r.ok ? 'ok' : r.sandboxKept ? 'tool_error' : STATUSES.has(r.error.code) ? r.error.code : 'crashed';
    const report = r.ok
      ? { status, value: r.value ?? null }
      : { status, error: `${r.error.name ? r.error.name + ': ' : ''}${r.error.message}${status === 'crashed' ? ` (browser: ${r.error.code})` : ''}` };
    const path = `/v1/runs/${encodeURIComponent(s.run)}/result`;
    const durationMs = Math.round(performance.now() - t0);
    let recorded = await this._api('POST', path, { ...report, logs: keptLogs(r.logs), durationMs });
    if (recorded.status !== 200 && recorded.status !== 404) {
      // The server refused the report itself (a value it cannot parse back, …): the call is
      // stored as that refusal, never left to expire as a timeout it was not.
      recorded = await this._api('POST', path, { status: 'tool_error', durationMs,
        error: `the page's report of this call was refused by the server (${recorded.json?.error?.code}: ${String(recorded.json?.error?.message).slice(0, 500)}); the page saw ${r.ok ? 'a result' : 'an error: ' + report.error.slice(0, 500)}` });
    }
    return { ...r, task: s.task, run: s.run, record: recorded.status === 200 ? recorded.json : { error: recorded.json?.error } };
  }
}
