// The worker harness: the first part of every sandbox worker's Blob source.
// browser/host/sandbox.js appends `__taskyonStart((<tool code>));`, so the
// tool's code (a function expression `(args, context) => ...`, as in the CLI)
// becomes part of the worker script and is loaded without eval (the CSP forbids
// eval anyway). Nothing here is a security boundary: tool code shares this
// realm and may replace any of it. The boundaries are the iframe's opaque origin
// and CSP, and the host page, which validates every message this sends.
//
// The channel: the worker's first message carries a MessagePort of the
// harness's own (bootstrap.js). The harness takes it in a capturing listener
// registered before tool code runs, stops that event there, and keeps the port
// in this closure, using only built-ins it captured at load (tool code may
// replace them later), so tool code never holds the port and never sees a
// message on it: a timer an earlier call left behind cannot read a later
// call's id or arguments, nor speak for it (S2). Tool code's own
// self.postMessage reaches the supervisor, which destroys the sandbox. Messages
// this posts before the port arrives ('ready') wait for it.
//
// Protocol (structured-clone objects over that port; the supervisor relays
// them to the host's bound MessagePort):
//   worker -> host  {t:'ready'}
//                   {t:'result', id, ok:true, json}   json: JSON text of the value
//                   {t:'result', id, ok:false, error:{name, message, code}}
//                   {t:'log', id, level, text}
//                   {t:'fetch', id, req, url, method, headers:[[k,v]...], body:string|null}
//                   {t:'storage', id, req, op:'get'|'set'|'delete'|'list', key, json}
//                       key: the key, or the prefix for list; json: the value's JSON text for set, else null
//                   {t:'task', id, req, op:'createSubtasksResult'|'resolveInvocation', json}   json: {drafts} or {name}
//   host -> worker  {t:'call', id, args}
//                   {t:'fetch_result', id, req, ok:true, status, statusText, headers, body:ArrayBuffer}
//                   {t:'fetch_result', id, req, ok:false, code, message}
//                   {t:'storage_result', id, req, ok:true, json} | {t:'storage_result', id, req, ok:false, code, message}
//                   {t:'task_result', id, req, ok:true, json} | {t:'task_result', id, req, ok:false, code, message}
//                   {t:'boot', files}   (Python sandboxes, python_harness.js: the host-verified files)
'use strict';
const __taskyonStart = (() => {
  // Built-ins the channel needs, captured before tool code can replace them.
  const apply = Reflect.apply, freeze = Object.freeze, describe = Object.getOwnPropertyDescriptor;
  const portPost = MessagePort.prototype.postMessage;
  const setPortHandler = describe(MessagePort.prototype, 'onmessage').set;
  const eventData = describe(MessageEvent.prototype, 'data').get;
  const eventPorts = describe(MessageEvent.prototype, 'ports').get;
  const stopEvent = Event.prototype.stopImmediatePropagation;
  const addListener = EventTarget.prototype.addEventListener, removeListener = EventTarget.prototype.removeEventListener;
  let port = null;
  let early = [];  // posted before the port arrived
  const post = (msg) => {
    if (port === null) early[early.length] = msg;
    else apply(portPost, port, [msg]);
  };
  let onBoot = null;  // python_harness.js's handler of {t: 'boot'}
  const ResponseCtor = self.Response, HeadersCtor = self.Headers, RequestCtor = self.Request;
  const stringify = JSON.stringify, StringCtor = String;
  const LOG_TEXT_MAX = 4096;
  let tool = null;
  let current = null;  // {id, ended, waiting: Map(req -> {resolve, reject}), nextReq}

  function capabilityError(code, message) {
    const e = new Error(message);
    e.name = 'CapabilityError';
    e.code = code;
    return e;
  }

  function textOf(args) {
    let s = '';
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      let part;
      try { part = typeof a === 'string' ? a : stringify(a); } catch { part = StringCtor(a); }
      if (part === undefined) part = StringCtor(a);
      s += (i ? ' ' : '') + part;
      if (s.length > LOG_TEXT_MAX) return s.slice(0, LOG_TEXT_MAX);
    }
    return s;
  }

  // At most LOGS_PER_CALL messages a call (the host's limit, validate.js: past it a sandbox is
  // destroyed): the last one says how much more was dropped, as the CLI's log cap says.
  const LOGS_PER_CALL = 1000;
  function logLine(level, text) {
    const call = current;
    if (call === null || call.ended) return;  // a leftover timer logs nowhere
    call.logs++;
    if (call.logs < LOGS_PER_CALL) post({ t: 'log', id: call.id, level, text });
    else if (call.logs === LOGS_PER_CALL) post({ t: 'log', id: call.id, level: 'warn', text: '[taskyon: later log lines of this call are dropped]' });
  }

  function makeConsole() {
    const out = {};
    for (const level of ['log', 'info', 'warn', 'error', 'debug']) out[level] = (...args) => logLine(level, textOf(args));
    return out;
  }

  // The deepest nesting of a JSON text (outside strings), as the host measures it.
  function jsonDepth(text) {
    let depth = 0, deepest = 0, inString = false;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (inString) { if (c === 92) i++; else if (c === 34) inString = false; }
      else if (c === 34) inString = true;
      else if (c === 91 || c === 123) { if (++depth > deepest) deepest = depth; }
      else if (c === 93 || c === 125) depth--;
    }
    return deepest;
  }
  const RESULT_DEPTH = 512;

  // context.fetch of one call: carries the request to the host, which decides.
  function fetchFor(call) {
    return async function fetch(input, init) {
      if (call.ended || current !== call) throw capabilityError('call_ended', 'this call has ended; its capabilities are gone');
      init = init || {};
      const isRequest = RequestCtor && input instanceof RequestCtor;
      const url = isRequest ? input.url : StringCtor(input);
      const method = StringCtor(init.method || (isRequest ? input.method : 'GET')).toUpperCase();
      const headers = [];
      new HeadersCtor(init.headers || (isRequest ? input.headers : undefined)).forEach((v, k) => headers.push([k, v]));
      let body = null;
      if (init.body !== undefined && init.body !== null) {
        if (typeof init.body !== 'string') throw new TypeError('fetch: only string bodies are carried in this version');
        body = init.body;
      }
      const req = call.nextReq++;
      return new Promise((resolve, reject) => {
        call.waiting.set(req, { resolve, reject });
        post({ t: 'fetch', id: call.id, req, url, method, headers, body });
      });
    };
  }

  // context.storage of one call (S7): each operation goes to the host page, which decides
  // with the store's storage grant of this revision (store.js) and answers JSON text.
  function storageFor(call) {
    const ask = (op, key, value) => {
      if (call.ended || current !== call) return Promise.reject(capabilityError('call_ended', 'this call has ended; its capabilities are gone'));
      let json = null;
      if (op === 'set') {
        try { json = stringify(value === undefined ? null : value); } catch (e) { return Promise.reject(new TypeError('storage.set: the value is not JSON: ' + StringCtor(e && e.message))); }
        if (json === undefined) json = 'null';
        // Past the message limits (validate.js) a request would end the sandbox: refused here instead.
        if (json.length > 1 << 17) return Promise.reject(capabilityError('too_large', 'a stored value is at most 64 KiB'));
      }
      key = StringCtor(key);
      if (key.length > 1024) return Promise.reject(capabilityError('invalid_request', 'a storage key is at most 256 bytes'));
      const req = call.nextReq++;
      return new Promise((resolve, reject) => {
        call.waiting.set(req, { resolve, reject, json: true });
        post({ t: 'storage', id: call.id, req, op, key, json });
      });
    };
    return freeze({
      get: (key) => ask('get', key),
      set: (key, value) => ask('set', key, value),
      delete: (key) => ask('delete', key),
      list: (prefix) => ask('list', prefix === undefined ? '' : prefix),
    });
  }

  // context.createSubtasksResult(drafts) and context.resolveInvocation(name) of one call (M14,
  // M15): the host page compiles and resolves with the wasm core's task compiler (tasks.js).
  function treeRequest(call, op, request) {
    if (call.ended || current !== call) return Promise.reject(capabilityError('call_ended', 'this call has ended; its capabilities are gone'));
    let json;
    try { json = stringify(request); } catch (e) { return Promise.reject(new TypeError(op + ': the request is not JSON: ' + StringCtor(e && e.message))); }
    if (json === undefined) json = 'null';
    if (json.length > 1 << 20) return Promise.reject(capabilityError('too_large', op + ': the request is larger than 1 MiB'));
    const req = call.nextReq++;
    return new Promise((resolve, reject) => {
      call.waiting.set(req, { resolve, reject, json: true });
      post({ t: 'task', id: call.id, req, op, json });
    });
  }

  function onJsonResult(d) {
    if (current === null || d.id !== current.id) return;
    const w = current.waiting.get(d.req);
    if (w === undefined || !w.json) return;
    current.waiting.delete(d.req);
    if (!d.ok) { w.reject(capabilityError(d.code, d.message)); return; }
    try { w.resolve(JSON.parse(d.json)); } catch { w.reject(capabilityError('bad_response', 'the host answered no JSON')); }
  }

  function onFetchResult(d) {
    if (current === null || d.id !== current.id) return;
    const w = current.waiting.get(d.req);
    if (w === undefined || w.json) return;
    current.waiting.delete(d.req);
    if (!d.ok) { w.reject(capabilityError(d.code, d.message)); return; }
    // 204, 205 and 304 are null-body statuses: Response refuses a body for them (even an
    // empty one); a status Response cannot represent is refused as a capability error.
    const nullBody = d.status === 204 || d.status === 205 || d.status === 304;
    try {
      w.resolve(new ResponseCtor(nullBody ? null : d.body, { status: d.status, statusText: d.statusText, headers: d.headers }));
    } catch (e) {
      w.reject(capabilityError('bad_response', 'the response cannot be given to the tool: ' + StringCtor(e && e.message)));
    }
  }

  function errorOf(e) {
    if (e !== null && typeof e === 'object') {
      return { name: StringCtor(e.name || 'Error'), message: StringCtor(e.message || ''), code: typeof e.code === 'string' ? e.code : '' };
    }
    return { name: 'Error', message: StringCtor(e), code: '' };
  }

  async function onCall(d) {
    const call = { id: d.id, ended: false, waiting: new Map(), nextReq: 1, logs: 0 };
    current = call;
    const context = freeze({
      fetch: fetchFor(call), storage: storageFor(call), callId: d.id,
      createSubtasksResult: (drafts) => treeRequest(call, 'createSubtasksResult', { drafts }),
      resolveInvocation: (name) => treeRequest(call, 'resolveInvocation', { name: StringCtor(name) }),
    });
    self.fetch = context.fetch;  // M2: global fetch is this call's context.fetch
    let msg;
    try {
      const value = await tool(d.args, context);
      let json = value === undefined ? 'null' : stringify(value);
      if (json === undefined) json = 'null';
      if (jsonDepth(json) > RESULT_DEPTH) throw new RangeError(`the result is nested deeper than ${RESULT_DEPTH} levels`);
      msg = { t: 'result', id: call.id, ok: true, json };
    } catch (e) {
      msg = { t: 'result', id: call.id, ok: false, error: errorOf(e) };
    }
    call.ended = true;
    for (const w of call.waiting.values()) w.reject(capabilityError('call_ended', 'the call ended'));
    current = null;
    post(msg);
  }

  function onHostMessage(event) {
    const d = apply(eventData, event, []);
    if (d === null || typeof d !== 'object') return;
    if (d.t === 'call') onCall(d);
    else if (d.t === 'fetch_result') onFetchResult(d);
    else if (d.t === 'storage_result' || d.t === 'task_result') onJsonResult(d);
    else if (d.t === 'boot' && onBoot !== null) { const boot = onBoot; onBoot = null; boot(d); }
  }

  // The first message: the harness's port. Captured before any listener tool code adds (this
  // one is registered first, capturing, and stops the event), so tool code never sees it.
  function onChannel(event) {
    const d = apply(eventData, event, []);
    const ports = apply(eventPorts, event, []);
    if (port !== null || d === null || typeof d !== 'object' || d.t !== 'channel' || ports.length !== 1) return;
    apply(stopEvent, event, []);
    apply(removeListener, self, ['message', onChannel, true]);
    port = ports[0];
    apply(setPortHandler, port, [onHostMessage]);
    if (d.expose === true) self.__taskyonHarnessPort = port;  // a host test mode only (SandboxHost testing.exposeHarnessPort)
    const waiting = early;
    early = null;
    for (let i = 0; i < waiting.length; i++) apply(portPost, port, [waiting[i]]);
  }
  apply(addListener, self, ['message', onChannel, true]);

  const start = (fn) => {
    if (typeof fn !== 'function') throw new TypeError('the tool code must be a function expression');
    tool = fn;
    self.console = makeConsole();
    post({ t: 'ready' });
  };
  start.log = logLine;  // the Python harness's output, under the same cap
  start.onBoot = (fn) => { onBoot = fn; };  // the Python harness's boot, on the harness's port
  return start;
})();
