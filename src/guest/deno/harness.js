// Host-owned harness of a Deno sandbox (DESIGN section 5, contract N4). The
// host runs it as the entry module, passed as a data: URL, never a file:
//   deno run --no-prompt … data:text/javascript;base64,<this file>
//        <max_frame_bytes> <max_log_bytes> <max_depth>
// and speaks the protocol documented in src/taskyon/sandbox/pool.h over fd 0
// (host frames) and fd 1 (our frames); fd 2 is captured by the host as logs.
// The frames and limits are exactly those of the Node harness
// (src/guest/node/bootstrap.js).
//
// Tool code is never the entry module: Deno reads the literal imports of its
// entry module's graph before any permission check, so the tool's code is
// imported at run time, as a data: module built from the load frame (a
// computed specifier: every file/remote import inside it is permission-checked
// and, with no permissions, refused).
//
// Order of work: snapshot the intrinsics the harness needs, replace console
// and Deno.stdin/stdout/stderr so that nothing the tool does writes protocol
// noise through them, then wait for one `load` frame, then serve `call` frames
// one at a time. Harness integrity is not a security property (the host
// validates every frame); the snapshots keep an honest tool that patches JSON
// or TextEncoder from breaking the protocol by accident.
(function harness() {
  'use strict';
  const D = globalThis.Deno;

  // --- Snapshots, taken before any tool code runs -------------------------
  const ReflectApply = Reflect.apply;
  const uncurry = (fn) => (self, ...args) => ReflectApply(fn, self, args);
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const stdin = D.stdin;
  const stdout = D.stdout;
  const stderr = D.stderr;
  const stdinRead = uncurry(Object.getPrototypeOf(stdin).read);
  const stdoutWriteSync = uncurry(Object.getPrototypeOf(stdout).writeSync);
  const stderrWriteSync = uncurry(Object.getPrototypeOf(stderr).writeSync);
  const exit = D.exit;
  const inspect = D.inspect;
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const encode = uncurry(TextEncoder.prototype.encode);
  const decode = uncurry(TextDecoder.prototype.decode);
  const isWellFormed = uncurry(String.prototype.isWellFormed);
  const toWellFormed = uncurry(String.prototype.toWellFormed);
  const stringSlice = uncurry(String.prototype.slice);
  const stringIndexOf = uncurry(String.prototype.indexOf);
  const stringReplaceAll = uncurry(String.prototype.replaceAll);
  const charCodeAt = uncurry(String.prototype.charCodeAt);
  const bytesIndexOf = uncurry(Uint8Array.prototype.indexOf);
  const bytesSubarray = uncurry(Uint8Array.prototype.subarray);
  const bytesSet = uncurry(Uint8Array.prototype.set);
  const toBase64 = uncurry(Uint8Array.prototype.toBase64);
  const fromBase64 = Uint8Array.fromBase64;
  const Uint8ArrayCtor = Uint8Array;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
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
  const arrayPush = uncurry(Array.prototype.push);
  const arrayJoin = uncurry(Array.prototype.join);
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const BlobCtor = Blob;
  const blobArrayBuffer = uncurry(Blob.prototype.arrayBuffer);
  const URLSearchParamsCtor = URLSearchParams;
  const URLCtor = URL;
  const RequestCtor = Request;
  const encodeURIComponentFn = encodeURIComponent;
  const dynamicImport = (specifier) => import(specifier);

  // --- Limits, passed by the host on the command line ----------------------
  const maxFrameBytes = NumberCtor(D.args[0]);  // one frame, newline included, bytes
  const maxLogBytes = NumberCtor(D.args[1]);    // log text per call, UTF-8 bytes
  const maxDepth = NumberCtor(D.args[2]);       // nesting of a result value
  if (!(maxFrameBytes > 64) || !(maxLogBytes >= 0) || !(maxDepth > 0)) {
    fatal(64, 'bad harness arguments');
  }

  // Harness failures: a message on fd 2 (captured as logs) and a distinctive code.
  function fatal(code, message) {
    try { stderrWriteSync(stderr, encode(encoder, 'taskyon harness: ' + message + '\n')); } catch { /* host gone */ }
    exit(code);
  }

  const utf8Length = (text) => encode(encoder, text).length;

  // --- Frames out (fd 1, blocking writes; nothing else writes there) -------
  function writeFrame(text) {
    const bytes = encode(encoder, text + '\n');
    let offset = 0;
    while (offset < bytes.length) {
      try {
        offset += stdoutWriteSync(stdout, bytesSubarray(bytes, offset));
      } catch {
        fatal(74, 'cannot write to the host');
      }
    }
  }

  // Bytes of `frame` on the wire (UTF-8, with the newline).
  const frameBytes = (frame) => utf8Length(frame) + 1;

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
  let loading = false;    // a load frame arrived; its import is in progress or done
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
    logBytes += utf8Length(text);
    writeFrame(frame);
  }

  function show(value) {
    if (typeof value === 'string') return value;
    try { return inspect(value); } catch { return '[uninspectable value]'; }
  }

  // console.log's formatting (WHATWG Console "Formatter": %s %d %i %f %o %O %j %c %%).
  function formatArgs(args) {
    try {
      const parts = [];
      let i = 0;
      if (typeof args[0] === 'string' && stringIndexOf(args[0], '%') !== -1) {
        const spec = args[0];
        let text = '';
        i = 1;
        for (let k = 0; k < spec.length; k++) {
          const c = spec[k];
          const next = spec[k + 1];
          if (c !== '%' || next === undefined) { text += c; continue; }
          if (next === '%') { text += '%'; k++; continue; }
          if ('sdifoOjc'.includes(next)) {
            k++;
            if (next === 'c') { i++; continue; }
            if (i >= args.length) { text += '%' + next; continue; }
            const arg = args[i++];
            if (next === 's') text += show(arg);
            else if (next === 'd' || next === 'i') text += typeof arg === 'bigint' ? StringCtor(arg) : StringCtor(next === 'i' ? Math.trunc(NumberCtor(arg)) : NumberCtor(arg));
            else if (next === 'f') text += StringCtor(NumberCtor(arg));
            else if (next === 'j') { try { text += stringify(arg); } catch { text += '[Circular]'; } }
            else text += inspect(arg);
            continue;
          }
          text += c;
        }
        arrayPush(parts, text);
      }
      for (; i < args.length; i++) arrayPush(parts, show(args[i]));
      return arrayJoin(parts, ' ');
    } catch {
      return '[unformattable log arguments]';
    }
  }

  // console: every method becomes log frames of the current call (Deno's own
  // console writes to fd 1, the protocol channel).
  const counts = new MapCtor();
  const timers = new MapCtor();
  const sinkConsole = {
    log: (...args) => emitLog('log', formatArgs(args)),
    info: (...args) => emitLog('info', formatArgs(args)),
    debug: (...args) => emitLog('debug', formatArgs(args)),
    warn: (...args) => emitLog('warn', formatArgs(args)),
    error: (...args) => emitLog('error', formatArgs(args)),
    trace: (...args) => emitLog('error', 'Trace' + (args.length ? ': ' + formatArgs(args) : '')),
    dir: (value) => emitLog('log', show(value)),
    dirxml: (...args) => emitLog('log', formatArgs(args)),
    table: (...args) => emitLog('log', formatArgs(args)),
    assert: (condition, ...args) => {
      if (!condition) emitLog('error', 'Assertion failed' + (args.length ? ': ' + formatArgs(args) : ''));
    },
    count: (label = 'default') => {
      const n = (mapGet(counts, StringCtor(label)) || 0) + 1;
      mapSet(counts, StringCtor(label), n);
      emitLog('info', StringCtor(label) + ': ' + n);
    },
    countReset: (label = 'default') => { mapDelete(counts, StringCtor(label)); },
    group: (...args) => { if (args.length) emitLog('log', formatArgs(args)); },
    groupCollapsed: (...args) => { if (args.length) emitLog('log', formatArgs(args)); },
    groupEnd: () => {},
    time: (label = 'default') => { mapSet(timers, StringCtor(label), performance.now()); },
    timeLog: (label = 'default', ...args) => {
      const start = mapGet(timers, StringCtor(label));
      if (start === undefined) return;
      emitLog('info', StringCtor(label) + ': ' + (performance.now() - start) + 'ms' + (args.length ? ' ' + formatArgs(args) : ''));
    },
    timeEnd: (label = 'default') => {
      const start = mapGet(timers, StringCtor(label));
      if (start === undefined) return;
      mapDelete(timers, StringCtor(label));
      emitLog('info', StringCtor(label) + ': ' + (performance.now() - start) + 'ms');
    },
    clear: () => {},
    profile: () => {},
    profileEnd: () => {},
    timeStamp: () => {},
  };
  defineProperty(globalThis, 'console', { value: sinkConsole, configurable: true, enumerable: false, writable: true });

  // Deno.stdout/stderr become log sinks; Deno.stdin is empty and ended. The
  // harness keeps the real ones (snapshotted above).
  function logSink(level, fd) {
    const textOf = (bytes) => decode(decoder, bytes);
    return freeze({
      rid: fd,
      writeSync(bytes) { emitLog(level, textOf(bytes)); return bytes.length; },
      write(bytes) { emitLog(level, textOf(bytes)); return PromiseCtor.resolve(bytes.length); },
      writable: new WritableStream({ write(chunk) { emitLog(level, textOf(chunk)); } }),
      isTerminal() { return false; },
      close() {},
    });
  }
  const emptyStdin = freeze({
    rid: 0,
    read() { return PromiseCtor.resolve(null); },
    readSync() { return null; },
    readable: new ReadableStream({ start(controller) { controller.close(); } }),
    isTerminal() { return false; },
    setRaw() {},
    close() {},
  });
  defineProperty(D, 'stdin', { value: emptyStdin, configurable: true, enumerable: true, writable: true });
  defineProperty(D, 'stdout', { value: logSink('log', 1), configurable: true, enumerable: true, writable: true });
  defineProperty(D, 'stderr', { value: logSink('error', 2), configurable: true, enumerable: true, writable: true });

  // --- Serializing values ---------------------------------------------------
  // A replacer that refuses lone surrogates: JSON.stringify would escape them,
  // and the host (strict UTF-8) must not receive a value it cannot represent.
  function strictReplacer(key, value) {
    if (!isWellFormed(key)) throw new TypeErrorCtor('a member name holds a lone surrogate');
    if (typeof value === 'string' && !isWellFormed(value)) throw new TypeErrorCtor('a string holds a lone surrogate');
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
  // a string `code` when there is one); anything else is stringified.
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
  const pending = new MapCtor();  // req -> {resolve, reject}
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
      mapSet(pending, req, { resolve, reject });
      writeFrame(frame);
    });
  }

  function onReply(frame) {
    const waiter = mapGet(pending, frame.req);
    if (waiter === undefined) fatal(65, 'a capability reply for no pending request');
    mapDelete(pending, frame.req);
    if (frame.type === 'cap_result') waiter.resolve(frame.value);
    else waiter.reject(capabilityError(StringCtor(frame.code), StringCtor(frame.message)));
  }

  const utf8 = (text) => encode(encoder, text);

  // The request body as bytes (or null), with the content type it implies.
  async function bodyBytes(body) {
    if (body === undefined || body === null) return { bytes: null, type: null };
    if (typeof body === 'string') return { bytes: utf8(body), type: 'text/plain;charset=UTF-8' };
    if (body instanceof URLSearchParamsCtor) {
      return { bytes: utf8(StringCtor(body)), type: 'application/x-www-form-urlencoded;charset=UTF-8' };
    }
    if (body instanceof ArrayBufferCtor) return { bytes: new Uint8ArrayCtor(body), type: null };
    if (isArrayBufferView(body)) return { bytes: new Uint8ArrayCtor(body.buffer, body.byteOffset, body.byteLength), type: null };
    if (body instanceof BlobCtor) return { bytes: new Uint8ArrayCtor(await blobArrayBuffer(body)), type: body.type || null };
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
    if (body === undefined && isRequest && input.body !== null) body = new Uint8ArrayCtor(await input.arrayBuffer());
    const signal = init.signal !== undefined ? init.signal : isRequest ? input.signal : undefined;
    if (signal && signal.aborted) throw signal.reason;
    const { bytes, type } = await bodyBytes(body);
    if (type !== null && !headersHas(headers, 'content-type')) headersSet(headers, 'content-type', type);
    const list = [];
    headersForEach(headers, (value, name) => { arrayPush(list, [name, value]); });
    const reply = await request('fetch', { url, method, headers: list, body: bytes === null ? null : toBase64(bytes) });
    const nullBody = reply.status === 204 || reply.status === 205 || reply.status === 304 || method === 'HEAD';
    const response = new ResponseCtor(nullBody ? null : ReflectApply(fromBase64, Uint8ArrayCtor, [reply.body]), {
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
  // The tool's code becomes a data: module `export default (<code>\n);`, whose
  // specifier is computed here at run time (never a literal of this module).
  async function load(code) {
    const specifier = 'data:text/javascript,' + encodeURIComponentFn('export default (' + code + '\n);\n');
    let fn;
    try {
      fn = (await dynamicImport(specifier)).default;
    } catch (e) {
      const { name, message } = describe(e);
      return sendLoadError(name + ': ' + stringReplaceAll(StringCtor(message), specifier, 'tool.js'));
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
    mapClear(pending);  // requests a previous call left unanswered never will be
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
    if (frame.type === 'load' && typeof frame.code === 'string' && !loading) {
      loading = true;
      load(frame.code);
      return;
    }
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
  function concat(parts, total) {
    const whole = new Uint8ArrayCtor(total);
    let at = 0;
    for (let i = 0; i < parts.length; i++) { bytesSet(whole, parts[i], at); at += parts[i].length; }
    return whole;
  }

  async function readFrames() {
    let held = [];      // pieces of a line without its '\n' yet (copies)
    let heldBytes = 0;
    for (;;) {
      const chunk = new Uint8ArrayCtor(64 * 1024);
      let n;
      try { n = await stdinRead(stdin, chunk); } catch { exit(0); }
      if (n === null) exit(0);  // the host closed our input
      const bytes = bytesSubarray(chunk, 0, n);
      let start = 0;
      for (;;) {
        const newline = bytesIndexOf(bytes, 10, start);
        if (newline === -1) break;
        const part = bytesSubarray(bytes, start, newline);
        let line;
        if (heldBytes > 0) {
          arrayPush(held, part);
          line = decode(decoder, concat(held, heldBytes + part.length));
          held = [];
          heldBytes = 0;
        } else {
          line = decode(decoder, part);
        }
        start = newline + 1;
        onLine(line);
      }
      if (start < bytes.length) {
        heldBytes += bytes.length - start;
        if (heldBytes >= maxFrameBytes) fatal(66, 'host frame too large');
        arrayPush(held, bytesSubarray(bytes, start));
      }
    }
  }

  readFrames();
})();
