// Host-owned harness of a Node sandbox (DESIGN section 5). The host runs it as
// `node <flags> -e <this file> <max_frame_bytes> <max_log_bytes> <max_depth>`
// and speaks the protocol documented in src/taskyon/sandbox/pool.h over fd 0
// (host frames) and fd 1 (our frames); fd 2 is captured by the host as logs.
//
// Order of work: snapshot the intrinsics the harness needs, replace
// process.stdout/stderr/stdin and console.* so that nothing the tool does can
// write protocol noise through them, then wait for one `load` frame, then serve
// `call` frames one at a time. Harness integrity is not a security property
// (the host validates every frame); the snapshots keep an honest tool that
// patches JSON or fs from breaking the protocol by accident.
'use strict';
(function bootstrap() {
  const fs = require('fs');
  const vm = require('vm');
  const util = require('util');
  const { Writable, Readable } = require('stream');

  // --- Snapshots, taken before any tool code runs -------------------------
  const ReflectApply = Reflect.apply;
  const uncurry = (fn) => (self, ...args) => ReflectApply(fn, self, args);
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const writeSync = fs.writeSync;
  const format = util.format;
  const exit = process.exit.bind(process);
  const isWellFormed = uncurry(String.prototype.isWellFormed);
  const toWellFormed = uncurry(String.prototype.toWellFormed);
  const stringSlice = uncurry(String.prototype.slice);
  const charCodeAt = uncurry(String.prototype.charCodeAt);
  const bufferFrom = Buffer.from;
  const bufferConcat = Buffer.concat;
  const byteLength = Buffer.byteLength;
  const bufferToString = uncurry(Buffer.prototype.toString);
  const bytesIndexOf = uncurry(Uint8Array.prototype.indexOf);
  const bytesSubarray = uncurry(Uint8Array.prototype.subarray);
  const isBuffer = Buffer.isBuffer;
  const isUint8Array = util.types.isUint8Array;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
  const runInThisContext = vm.runInThisContext;
  const NumberCtor = Number;
  const StringCtor = String;
  const PromiseCtor = Promise;
  const MapCtor = Map;
  const mapGet = uncurry(Map.prototype.get);
  const mapSet = uncurry(Map.prototype.set);
  const mapDelete = uncurry(Map.prototype.delete);
  const mapClear = uncurry(Map.prototype.clear);
  const ResponseCtor = Response;
  const HeadersCtor = Headers;
  const headersForEach = uncurry(Headers.prototype.forEach);
  const headersHas = uncurry(Headers.prototype.has);
  const headersSet = uncurry(Headers.prototype.set);
  const ArrayBufferCtor = ArrayBuffer;
  const isArrayBufferView = ArrayBuffer.isView;
  const isArray = Array.isArray;
  const arrayPush = uncurry(Array.prototype.push);
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const BlobCtor = Blob;
  const blobArrayBuffer = uncurry(Blob.prototype.arrayBuffer);
  const URLSearchParamsCtor = URLSearchParams;
  const URLCtor = URL;
  const RequestCtor = Request;

  // --- Limits, passed by the host on the command line ----------------------
  const maxFrameBytes = NumberCtor(process.argv[1]);  // one frame, newline included, bytes
  const maxLogBytes = NumberCtor(process.argv[2]);    // log text per call, UTF-8 bytes
  const maxDepth = NumberCtor(process.argv[3]);       // nesting of a result value
  if (!(maxFrameBytes > 64) || !(maxLogBytes >= 0) || !(maxDepth > 0)) {
    fatal(64, 'bad harness arguments');
  }

  // Harness failures: a message on fd 2 (captured as logs) and a distinctive code.
  function fatal(code, message) {
    try { writeSync(2, 'taskyon harness: ' + message + '\n'); } catch { /* host gone */ }
    exit(code);
  }

  // --- Frames out (fd 1, blocking: nothing here ever creates process.stdout) --
  function writeFrame(text) {
    const bytes = ReflectApply(bufferFrom, Buffer, [text + '\n', 'utf8']);
    let offset = 0;
    while (offset < bytes.length) {
      try {
        offset += writeSync(1, bytes, offset, bytes.length - offset);
      } catch (e) {
        if (e && e.code === 'EAGAIN') continue;  // someone made fd 1 non-blocking
        fatal(74, 'cannot write to the host');
      }
    }
  }

  // Bytes of `frame` on the wire (UTF-8, with the newline).
  const frameBytes = (frame) => byteLength(frame, 'utf8') + 1;

  // Cuts `text` until `build(text)` fits in one frame; never splits a surrogate pair.
  function fitted(text, build) {
    let frame = build(text);
    while (frameBytes(frame) > maxFrameBytes && text.length > 0) {
      text = toWellFormed(stringSlice(text, 0, text.length >> 1));
      frame = build(text);
    }
    return frame;
  }

  // --- The current call ----------------------------------------------------
  let tool = null;        // the loaded function
  let currentId = null;   // id of the call in progress, or null between calls
  let logBytes = 0;       // log text sent for the current call, bytes

  // Sends one log frame for the current call. Logs outside a call are dropped.
  // Once more than maxLogBytes were sent, the rest of the call's logs are
  // dropped; the host truncates at exactly maxLogBytes and flags it.
  function emitLog(level, text) {
    if (currentId === null || logBytes > maxLogBytes) return;
    text = toWellFormed(StringCtor(text));
    const room = maxLogBytes - logBytes + 1;
    if (text.length > room) text = toWellFormed(stringSlice(text, 0, room));
    const id = currentId;
    const frame = fitted(text, (t) =>
      '{"type":"log","id":' + id + ',"level":"' + level + '","text":' + stringify(t) + '}');
    logBytes += byteLength(text, 'utf8');
    writeFrame(frame);
  }

  function formatArgs(args) {
    try { return ReflectApply(format, undefined, args); } catch { return '[unformattable log arguments]'; }
  }

  // A writable stream whose bytes become log frames of `level`.
  function logSink(level, fd) {
    const sink = new Writable({
      decodeStrings: false,
      write(chunk, encoding, callback) {
        let text;
        if (typeof chunk === 'string') text = chunk;
        else if (isBuffer(chunk) || isUint8Array(chunk)) text = bufferToString(ReflectApply(bufferFrom, Buffer, [chunk]), 'utf8');
        else text = StringCtor(chunk);
        emitLog(level, text);
        callback();
      },
    });
    sink.fd = fd;
    sink.isTTY = false;
    return sink;
  }

  // process.stdout/stderr are replaced before anything creates the real ones,
  // so fd 1 stays a blocking pipe that only writeFrame uses.
  const stdoutSink = logSink('log', 1);
  const stderrSink = logSink('error', 2);
  defineProperty(process, 'stdout', { value: stdoutSink, configurable: true, enumerable: true, writable: true });
  defineProperty(process, 'stderr', { value: stderrSink, configurable: true, enumerable: true, writable: true });
  for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
    console[level] = function log(...args) { emitLog(level, formatArgs(args)); };
  }

  // The harness owns stdin; the tool sees an empty, ended one.
  const input = process.stdin;
  defineProperty(process, 'stdin', {
    value: new Readable({ read() { this.push(null); } }),
    configurable: true, enumerable: true, writable: true,
  });

  // --- Serializing values ---------------------------------------------------
  // A replacer that refuses lone surrogates: JSON.stringify would escape them,
  // and the host (strict UTF-8) must not receive a value it cannot represent.
  function strictReplacer(key, value) {
    if (!isWellFormed(key)) throw new TypeError('a member name holds a lone surrogate');
    if (typeof value === 'string' && !isWellFormed(value)) throw new TypeError('a string holds a lone surrogate');
    return value;
  }

  // Deepest nesting of arrays/objects in JSON text.
  function depthOf(text) {
    let depth = 0, deepest = 0, inString = false;
    for (let i = 0; i < text.length; i++) {
      const c = charCodeAt(text, i);
      if (inString) {
        if (c === 0x5c) i++;               // backslash: skip the escaped char
        else if (c === 0x22) inString = false;
      } else if (c === 0x22) inString = true;
      else if (c === 0x5b || c === 0x7b) { if (++depth > deepest) deepest = depth; }
      else if (c === 0x5d || c === 0x7d) depth--;
    }
    return deepest;
  }

  // The whole frame for a call's outcome; a value that cannot be sent becomes an error frame.
  function resultFrame(id, value) {
    let text;
    try {
      text = stringify(value, strictReplacer);
    } catch (e) {
      return errorFrame(id, { name: 'TypeError', message: 'the result is not JSON-serializable: ' + describe(e).message });
    }
    if (text === undefined) text = 'null';  // undefined, functions, symbols
    if (depthOf(text) > maxDepth) {
      return errorFrame(id, { name: 'RangeError', message: 'the result nests deeper than ' + maxDepth + ' levels' });
    }
    const frame = '{"type":"result","id":' + id + ',"value":' + text + '}';
    if (frameBytes(frame) > maxFrameBytes) {
      return errorFrame(id, { name: 'RangeError', message: 'the result exceeds ' + maxFrameBytes + ' bytes' });
    }
    return frame;
  }

  function errorFrame(id, { name, message }) {
    name = toWellFormed(StringCtor(name));
    if (name.length > 200) name = toWellFormed(stringSlice(name, 0, 200));
    return fitted(toWellFormed(StringCtor(message)), (m) =>
      '{"type":"error","id":' + id + ',"name":' + stringify(name) + ',"message":' + stringify(m) + '}');
  }

  // {name, message} of a thrown value. Error-like objects keep their name (with
  // Node's `code` when there is one); anything else is stringified.
  function describe(thrown) {
    try {
      if (thrown !== null && (typeof thrown === 'object' || typeof thrown === 'function') && 'message' in thrown) {
        let name = typeof thrown.name === 'string' ? thrown.name : 'Error';
        if (typeof thrown.code === 'string') name += ' [' + thrown.code + ']';
        return { name, message: StringCtor(thrown.message) };
      }
      if (typeof thrown === 'string') return { name: 'Error', message: thrown };
      let text;
      try { text = stringify(thrown); } catch { /* BigInt, cycles */ }
      return { name: 'Error', message: text === undefined ? StringCtor(thrown) : text };
    } catch {
      return { name: 'Error', message: 'a value was thrown that cannot be described' };
    }
  }

  // --- Capabilities: the only doors out (DESIGN section 6) ---------------
  // Each request is one "cap" frame; the host answers with "cap_result" or
  // "cap_error" before it reads our next frame. Outside a call (a timer that
  // fires after the tool returned) a request fails here, without a frame.
  const waiting = new MapCtor();  // req -> {resolve, reject}
  let nextReq = 1;

  function capabilityError(code, message) {
    const e = new ErrorCtor(message);
    defineProperty(e, 'name', { value: 'CapabilityError', configurable: true, writable: true });
    defineProperty(e, 'code', { value: code, configurable: true, writable: true, enumerable: true });
    return e;
  }

  function request(op, args) {
    if (currentId === null) {
      return PromiseCtor.reject(capabilityError('invalid_request', op + ' can be used only while the tool is being called'));
    }
    let text;
    try {
      text = stringify(args, strictReplacer);
    } catch (e) {
      return PromiseCtor.reject(capabilityError('invalid_request', 'the ' + op + ' request is not JSON-serializable: ' + describe(e).message));
    }
    const req = nextReq++;
    const frame = '{"type":"cap","id":' + currentId + ',"req":' + req + ',"op":' + stringify(op) + ',"args":' + text + '}';
    if (frameBytes(frame) > maxFrameBytes) {
      return PromiseCtor.reject(capabilityError('too_large', 'the ' + op + ' request exceeds ' + maxFrameBytes + ' bytes'));
    }
    return new PromiseCtor((resolve, reject) => {
      mapSet(waiting, req, { resolve, reject });
      writeFrame(frame);
    });
  }

  function onReply(frame) {
    const waiter = mapGet(waiting, frame.req);
    if (waiter === undefined) fatal(65, 'a capability reply for no pending request');
    mapDelete(waiting, frame.req);
    if (frame.type === 'cap_result') waiter.resolve(frame.value);
    else waiter.reject(capabilityError(StringCtor(frame.code), StringCtor(frame.message)));
  }

  const toBase64 = (bytes) => bufferToString(ReflectApply(bufferFrom, Buffer, [bytes]), 'base64');

  // The request body as bytes (or null), with the content type it implies.
  async function bodyBytes(body) {
    if (body === undefined || body === null) return { bytes: null, type: null };
    if (typeof body === 'string') return { bytes: ReflectApply(bufferFrom, Buffer, [body, 'utf8']), type: 'text/plain;charset=UTF-8' };
    if (body instanceof URLSearchParamsCtor) {
      return { bytes: ReflectApply(bufferFrom, Buffer, [StringCtor(body), 'utf8']), type: 'application/x-www-form-urlencoded;charset=UTF-8' };
    }
    if (body instanceof ArrayBufferCtor) return { bytes: new Uint8Array(body), type: null };
    if (isArrayBufferView(body)) return { bytes: new Uint8Array(body.buffer, body.byteOffset, body.byteLength), type: null };
    if (body instanceof BlobCtor) return { bytes: new Uint8Array(await blobArrayBuffer(body)), type: body.type || null };
    throw new TypeErrorCtor('fetch: this body type is not supported here (use a string, bytes, Blob or URLSearchParams)');
  }

  // The global fetch and context.fetch: one function object (M2). The host
  // decides everything (policy, grant, limits); this only carries the request.
  async function fetch(input, init) {
    init = init === undefined || init === null ? {} : init;
    const isRequest = input instanceof RequestCtor;
    const url = isRequest ? input.url : input instanceof URLCtor ? input.href : StringCtor(input);
    const method = init.method !== undefined ? StringCtor(init.method) : isRequest ? input.method : 'GET';
    const headers = new HeadersCtor(init.headers !== undefined ? init.headers : isRequest ? input.headers : undefined);
    let body = init.body;
    if (body === undefined && isRequest && input.body !== null) body = new Uint8Array(await input.arrayBuffer());
    const signal = init.signal !== undefined ? init.signal : isRequest ? input.signal : undefined;
    if (signal && signal.aborted) throw signal.reason;
    const { bytes, type } = await bodyBytes(body);
    if (type !== null && !headersHas(headers, 'content-type')) headersSet(headers, 'content-type', type);
    const list = [];
    headersForEach(headers, (value, name) => { arrayPush(list, [name, value]); });
    const reply = await request('fetch', { url, method, headers: list, body: bytes === null ? null : toBase64(bytes) });
    const nullBody = reply.status === 204 || reply.status === 205 || reply.status === 304 || method === 'HEAD';
    const response = new ResponseCtor(nullBody ? null : ReflectApply(bufferFrom, Buffer, [reply.body, 'base64']), {
      status: reply.status, statusText: reply.statusText, headers: reply.headers,
    });
    defineProperty(response, 'url', { value: reply.url, configurable: true });
    return response;
  }

  const context = freeze({
    fetch,
    createSubtasksResult: (drafts) => request('createSubtasksResult', { drafts }),
    resolveInvocation: (name) => request('resolveInvocation', { name: StringCtor(name) }),
    storage: freeze({
      get: (key) => request('storage.get', { key: StringCtor(key) }),
      set: (key, value) => request('storage.set', { key: StringCtor(key), value: value === undefined ? null : value }),
      delete: (key) => request('storage.delete', { key: StringCtor(key) }),
      list: (prefix) => request('storage.list', { prefix: prefix === undefined ? '' : StringCtor(prefix) }),
    }),
  });
  defineProperty(globalThis, 'fetch', { value: fetch, configurable: true, enumerable: true, writable: true });

  // --- Host frames in ------------------------------------------------------
  function load(code) {
    let fn;
    try {
      fn = ReflectApply(runInThisContext, vm, ['(' + code + '\n)', { filename: 'tool.js' }]);
    } catch (e) {
      const { name, message } = describe(e);
      return sendLoadError(name + ': ' + message);
    }
    if (typeof fn !== 'function') {
      return sendLoadError('the tool code must be a function expression, not ' + (fn === null ? 'null' : typeof fn));
    }
    tool = fn;
    writeFrame('{"type":"ready"}');
  }

  function sendLoadError(message) {
    writeFrame(fitted(toWellFormed(message), (m) => '{"type":"load_error","message":' + stringify(m) + '}'));
  }

  async function call(id, args) {
    currentId = id;
    logBytes = 0;
    nextReq = 1;
    mapClear(waiting);  // requests a previous call left unanswered never will be
    let frame;
    try {
      const value = await ReflectApply(tool, undefined, [args, context]);
      frame = resultFrame(id, value);  // toJSON and getters still log into this call
    } catch (e) {
      frame = errorFrame(id, describe(e));
    }
    currentId = null;
    writeFrame(frame);
  }

  function onLine(line) {
    let frame;
    try { frame = parse(line); } catch { fatal(65, 'malformed host frame'); }
    if (frame === null || typeof frame !== 'object') fatal(65, 'malformed host frame');
    if (frame.type === 'load' && typeof frame.code === 'string' && tool === null) return load(frame.code);
    if ((frame.type === 'cap_result' || frame.type === 'cap_error') && currentId !== null &&
        typeof frame.req === 'number') {
      return onReply(frame);
    }
    if (frame.type === 'call' && tool !== null && currentId === null &&
        typeof frame.id === 'number' && frame.id > 0 && frame.id % 1 === 0 && 'args' in frame) {
      call(frame.id, frame.args);
      return;
    }
    fatal(65, 'unexpected host frame');
  }

  // Newline-delimited frames with our own bounded buffer.
  let pending = [];
  let pendingBytes = 0;
  input.on('data', (chunk) => {
    let start = 0;
    for (;;) {
      const newline = bytesIndexOf(chunk, 10, start);
      if (newline === -1) break;
      pending.push(bytesSubarray(chunk, start, newline));
      const line = bufferToString(bufferConcat(pending), 'utf8');
      pending = [];
      pendingBytes = 0;
      start = newline + 1;
      onLine(line);
    }
    if (start < chunk.length) {
      pendingBytes += chunk.length - start;
      if (pendingBytes >= maxFrameBytes) fatal(66, 'host frame too large');
      pending.push(bytesSubarray(chunk, start));
    }
  });
  input.on('end', () => exit(0));
  input.on('error', () => exit(0));
})();
