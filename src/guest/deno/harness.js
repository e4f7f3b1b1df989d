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
// The entry module's own code is only `boot`: it reads the first host frame
// (the load frame) and starts the harness. V8 gives code that `Function` or
// `eval` makes the import() callback of the script whose frame called them,
// and the entry module's is Deno's own loader; so for a revision that
// declares modules, whose import() must be the module loader's (core.js),
// boot compiles the harness anew with node:vm's compileFunction, whose
// importModuleDynamically is the harness's: no frame of the harness that
// calls a function tool code supplies (the tool, a toString, a getter, a
// then) hands Deno's loader to the code it makes. A revision without
// modules runs the harness as it is (its import() is Deno's anyway, N4).
// Deno's own JavaScript (node: polyfills, web APIs) is not ours to compile:
// code it makes from a function tool code supplies still gets Deno's loader
// (docs/modules.md, "ES modules").
//
// Order of work: snapshot the intrinsics the harness needs, replace console
// and Deno.stdin/stdout/stderr so that nothing the tool does writes protocol
// noise through them, then take the `load` frame, then serve `call` frames
// one at a time. Harness integrity is not a security property (the host
// validates every frame); the snapshots keep an honest tool that patches JSON
// or TextEncoder from breaking the protocol by accident.
(function boot(harness) {
  'use strict';
  const D = globalThis.Deno;
  const source = String(harness);  // Function.prototype.toString: no tool code has run yet
  const dynamicImport = (specifier) => import(specifier);  // Deno's loader: the harness's node: and data: imports
  const maxFrameBytes = Number(D.args[0]);
  const stdin = D.stdin;
  const fail = (code, message) => {
    try { D.stderr.writeSync(new TextEncoder().encode('taskyon harness: ' + message + '\n')); } catch { /* host gone */ }
    D.exit(code);
  };
  // The first line (the load frame), and the bytes after it.
  async function firstLine() {
    const held = [];
    let heldBytes = 0;
    for (;;) {
      const chunk = new Uint8Array(64 * 1024);
      let n;
      try { n = await stdin.read(chunk); } catch { D.exit(0); }
      if (n === null) D.exit(0);  // the host closed our input
      const newline = chunk.subarray(0, n).indexOf(10);
      if (newline === -1) {
        heldBytes += n;
        if (heldBytes >= maxFrameBytes) fail(66, 'host frame too large');
        held.push(chunk.subarray(0, n));
        continue;
      }
      held.push(chunk.subarray(0, newline));
      const line = new Uint8Array(heldBytes + newline);
      let at = 0;
      for (const part of held) { line.set(part, at); at += part.length; }
      return { line: new TextDecoder().decode(line), rest: chunk.subarray(newline + 1, n) };
    }
  }
  firstLine().then(async ({ line, rest }) => {
    let frame;
    try { frame = JSON.parse(line); } catch { frame = undefined; }  // the harness refuses it
    const start = { dynamicImport, line, frame, rest, vm: null, setImportHook: () => {} };
    if (frame === null || typeof frame !== 'object' || frame.modules === undefined) return harness(start);
    start.vm = await dynamicImport('node:vm');
    let importHook = null;  // the harness's, set before any tool code runs
    start.setImportHook = (hook) => { if (importHook === null) importHook = hook; };
    start.vm.compileFunction('return (' + source + '\n);', [], {
      filename: 'harness.js',
      importModuleDynamically: (specifier) => importHook(specifier),
    })()(start);
  }).catch((e) => fail(70, 'cannot start: ' + String(e && e.message)));
})(function harness(entry) {
  'use strict';
  const D = globalThis.Deno;

  // @include common/core.js

  // --- Snapshots of what only this harness uses, taken before any tool code runs
  const ReflectApply = Reflect.apply;
  const uncurry = (fn) => (self, ...args) => ReflectApply(fn, self, args);
  const stringify = JSON.stringify;
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
  const stringIndexOf = uncurry(String.prototype.indexOf);
  const stringReplaceAll = uncurry(String.prototype.replaceAll);
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
  const arrayPush = uncurry(Array.prototype.push);
  const arrayJoin = uncurry(Array.prototype.join);
  const encodeURIComponentFn = encodeURIComponent;
  const dynamicImport = entry.dynamicImport;  // boot's: Deno's loader, for node: builtins and the data: tool
  const FunctionCtor = Function;  // snapshot: compileModule below

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

  // --- Frames out (fd 1, blocking writes; nothing else writes there) -------
  function writeBytes(text) {
    const bytes = encode(encoder, text);
    let offset = 0;
    while (offset < bytes.length) {
      try {
        offset += stdoutWriteSync(stdout, bytesSubarray(bytes, offset));
      } catch {
        fatal(74, 'cannot write to the host');
      }
    }
  }

  // node:vm, imported the first time a revision with modules loads: its
  // SourceTextModule and SyntheticModule (core.js's ES graphs) and
  // compileFunction (CommonJS modules whose import() is the loader's).
  let nodeVm = null;
  async function vmModule() {
    if (nodeVm === null) nodeVm = entry.vm !== null ? entry.vm : await dynamicImport('node:vm');
    return nodeVm;
  }

  // The tool's code becomes a module `export default (<code>\n);`. Without
  // modules it is a data: module whose specifier is computed here at run time
  // (never a literal of this module). With modules it is a
  // vm.SourceTextModule of the same text whose every import — static, should
  // the code close the parenthesis, or import(), eval and Function code
  // included — is the module loader's (core.js), not Deno's.
  async function loadTool(code, importDynamic) {
    if (importDynamic !== null) {
      const vm = await vmModule();
      const tool = new vm.SourceTextModule('export default (' + code + '\n);\n', {
        identifier: 'tool.js', importModuleDynamically: importDynamic,
      });
      await tool.link(importDynamic);
      await tool.evaluate();
      return tool.namespace.default;
    }
    const specifier = 'data:text/javascript,' + encodeURIComponentFn('export default (' + code + '\n);\n');
    try {
      return (await dynamicImport(specifier)).default;
    } catch (e) {
      if (e !== null && typeof e === 'object' && typeof e.message === 'string') {
        try { e.message = stringReplaceAll(e.message, specifier, 'tool.js'); } catch { /* frozen */ }
      }
      throw e;
    }
  }

  // Deno[Deno.internal] (Deno's internals, kept for its test and Jupyter
  // tools) holds core.evalContext, which compiles code whose import() is
  // Deno's own loader, whatever script calls it: gone before tool code runs.
  ReflectApply(Reflect.deleteProperty, Reflect, [D, D.internal]);

  // --- Runtime flags are fixed before tool code runs (issue 11 item 5) ------
  // Nothing to remove here: V8's flags are set on Deno's command line and
  // node:v8 setFlagsFromString does not change them (the escape tests check
  // that --allow-natives-syntax stays off); node:module register installs no
  // hook; node:inspector and Deno's inspector need permissions a sandbox never
  // has (N4: no --allow-sys, no --inspect). Deno has no SIGUSR1 inspector.

  const core = guestCore({
    writeBytes,
    utf8Length: (text) => encode(encoder, text).length,
    bytesOfText: (text) => encode(encoder, text),
    toBase64: (bytes) => toBase64(bytes),
    fromBase64: (text) => ReflectApply(fromBase64, Uint8ArrayCtor, [text]),
    fatal,
    loadTool,
    // CommonJS is synchronous, so a module's source is compiled as a
    // function body of its own (sloppy mode, as Node's loader), not a data:
    // import: by node:vm's compileFunction, whose import() is the loader's
    // (node:vm is loaded by then: esm() comes first).
    compileModule: (source, name, importDynamic) => importDynamic === null || nodeVm === null
      ? ReflectApply(FunctionCtor, undefined, [
        'exports', 'require', 'module', '__filename', '__dirname', source + '\n//# sourceURL=module:' + name])
      : nodeVm.compileFunction(source, ['exports', 'require', 'module', '__filename', '__dirname'],
        { filename: 'module:' + name, importModuleDynamically: importDynamic }),
    builtin: null,  // Deno's node: modules load only by import, asynchronously: none to require()
    importBuiltin: async (name) => {
      const namespace = await dynamicImport('node:' + name);
      return namespace.default !== undefined ? namespace.default : namespace;
    },
    esm: async () => {
      const vm = await vmModule();
      return typeof vm.SourceTextModule === 'function' ? { SourceTextModule: vm.SourceTextModule, SyntheticModule: vm.SyntheticModule } : null;
    },
    esmConditions: ['deno', 'node', 'import'],
    setRequire: (fn, gate) => {
      defineProperty(globalThis, 'require', { value: fn, writable: true, configurable: true, enumerable: false });
      // Deno 2's global `process`; its import('node:…') stays (docs/modules.md).
      if (typeof process === 'object' && typeof process.getBuiltinModule === 'function') {
        defineProperty(process, 'getBuiltinModule', { value: gate, writable: false, configurable: false, enumerable: true });
      }
    },
    limits: { maxFrameBytes, maxLogBytes, maxDepth },
  });
  const emitLog = core.emitLog;
  entry.setImportHook(core.importFromHarness);  // import() of code this harness's frames make (see boot)

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

  // Newline-delimited frames with our own bounded buffer.
  function concat(parts, total) {
    const whole = new Uint8ArrayCtor(total);
    let at = 0;
    for (let i = 0; i < parts.length; i++) { bytesSet(whole, parts[i], at); at += parts[i].length; }
    return whole;
  }

  let held = [];      // pieces of a line without its '\n' yet (copies)
  let heldBytes = 0;
  function take(bytes) {
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
      core.onLine(line);
    }
    if (start < bytes.length) {
      heldBytes += bytes.length - start;
      if (heldBytes >= maxFrameBytes) fatal(66, 'host frame too large');
      arrayPush(held, bytesSubarray(bytes, start));
    }
  }

  async function readFrames() {
    take(entry.rest);  // what boot read after the load frame
    for (;;) {
      const chunk = new Uint8ArrayCtor(64 * 1024);
      let n;
      try { n = await stdinRead(stdin, chunk); } catch { exit(0); }
      if (n === null) exit(0);  // the host closed our input
      take(bytesSubarray(chunk, 0, n));
    }
  }

  // The load frame, as boot read (and parsed) it.
  if (entry.frame !== undefined) core.onFrame(entry.frame);
  else core.onLine(entry.line);
  readFrames();
});
