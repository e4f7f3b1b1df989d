// Host-owned harness of a Node sandbox (DESIGN section 5). The host runs it as
// `node <flags> -e <this file> <max_frame_bytes> <max_log_bytes> <max_depth>`
// and speaks the protocol documented in src/taskyon/sandbox/pool.h over fd 0
// (host frames) and fd 1 (our frames); fd 2 is captured by the host as logs.
//
// The `-e` script is only a stub. Node gives an -e script its own default
// ES loader as the import() callback, and V8 gives code that `Function` or
// `eval` makes the callback of the script whose frame called them — so
// every frame of this harness that calls a function tool code supplies (the
// tool itself, a toString, a getter, a then) would hand the code it makes
// Node's own loader (node:vm, node:module, data: URLs). So the stub compiles
// the harness below with vm.compileFunction, whose importModuleDynamically
// is the harness's: the module loader of a revision that declares modules
// (core.js), a refusal otherwise. The stub's frames end before any tool code
// runs; its one callback only forwards to the harness.
//
// Order of work: snapshot the intrinsics the harness needs, replace
// process.stdout/stderr/stdin and console.* so that nothing the tool does can
// write protocol noise through them, then wait for one `load` frame, then serve
// `call` frames one at a time. Harness integrity is not a security property
// (the host validates every frame); the snapshots keep an honest tool that
// patches JSON or fs from breaking the protocol by accident.
'use strict';
(function stub(harnessSource) {
  let importHook = null;  // the harness's (setImportHook below), set before any tool code runs
  const harness = require('vm').compileFunction('return (' + harnessSource + '\n);', [], {
    filename: 'harness.js',
    importModuleDynamically: (specifier) => importHook(specifier),
  })();
  harness(require, (hook) => { if (importHook === null) importHook = hook; });
})(String(function bootstrap(require, setImportHook) {
  'use strict';
  const fs = require('fs');
  const vm = require('vm');
  const util = require('util');
  const { Writable, Readable } = require('stream');
  const { StringDecoder } = require('string_decoder');  // loaded by stream already

  // @include common/core.js

  // --- Snapshots of what only this harness uses, taken before any tool code runs
  const ReflectApply = Reflect.apply;
  const uncurry = (fn) => (self, ...args) => ReflectApply(fn, self, args);
  const writeSync = fs.writeSync;
  const format = util.format;
  const exit = process.exit.bind(process);
  const bufferFrom = Buffer.from;
  const decoderWrite = uncurry(StringDecoder.prototype.write);
  const decoderEnd = uncurry(StringDecoder.prototype.end);
  const byteLength = Buffer.byteLength;
  const bufferToString = uncurry(Buffer.prototype.toString);
  const bytesIndexOf = uncurry(Uint8Array.prototype.indexOf);
  const bytesSubarray = uncurry(Uint8Array.prototype.subarray);
  const isBuffer = Buffer.isBuffer;
  const isUint8Array = util.types.isUint8Array;
  const defineProperty = Object.defineProperty;
  const runInThisContext = vm.runInThisContext;
  const compileFunction = vm.compileFunction;
  const SourceTextModule = vm.SourceTextModule;  // undefined without --experimental-vm-modules
  const SyntheticModule = vm.SyntheticModule;
  const NumberCtor = Number;
  const StringCtor = String;
  const nodeRequire = require;  // this -e script's own: the safe builtins only (core.js kSafeBuiltins)

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

  // --- Runtime flags are fixed before tool code runs (issue 11 item 5) ------
  // Node's permission model (--experimental-permission, node_argv) already
  // refuses process.binding, inspector.open, inspector.Session#connect,
  // module.register and native addons. What it leaves open is closed here,
  // each replaced by a function that throws (or a frozen object), made
  // non-writable and non-configurable so tool code cannot put it back:
  //   v8.setFlagsFromString          V8 flags (--allow-natives-syntax: V8's test intrinsics)
  //   module.register; Module, Module.prototype and Module._extensions
  //   (= require.extensions) frozen               loader hooks
  //   inspector.open/Session, process._debugProcess/_debugEnd   the inspector
  //   process.kill/_kill with SIGUSR1 to this process            the inspector's signal
  //   trace_events.createTracing     tracing at run time (its file writer, refused by the
  //                                  read-only root, used to stall the call until its timeout)
  const v8 = require('v8');
  const Module = require('module');
  const inspector = require('inspector');
  const osConstants = require('os').constants;
  function refused(what) {
    return function refusedInSandbox() {
      const e = new Error(what + ' is not available in a Taskyon sandbox: runtime flags, loader hooks and the inspector are fixed before tool code runs');
      e.code = 'ERR_ACCESS_DENIED';
      throw e;
    };
  }
  function pin(object, name, value) {
    defineProperty(object, name, { value, writable: false, configurable: false, enumerable: true });
  }
  pin(v8, 'setFlagsFromString', refused('v8.setFlagsFromString'));
  // Loader hooks: module.register refuses; the CommonJS loader's own functions
  // (_load, _resolveFilename, prototype.require/_compile, the _extensions
  // table that require.extensions is) stay as they are, frozen.
  if ('register' in Module) pin(Module, 'register', refused('module.register'));
  Object.freeze(Module._extensions);
  Object.freeze(Module.prototype);
  Object.freeze(Module);
  for (const name of ['open', 'Session', 'waitForDebugger']) {
    if (name in inspector) pin(inspector, name, refused('inspector.' + name));
  }
  for (const name of ['_debugProcess', '_debugEnd', '_startProfilerIdleNotifier', '_stopProfilerIdleNotifier']) {
    if (name in process) pin(process, name, refused('process.' + name));
  }
  const traceEvents = require('trace_events');
  if ('createTracing' in traceEvents) pin(traceEvents, 'createTracing', refused('trace_events.createTracing'));
  Object.freeze(traceEvents);
  const SIGUSR1 = osConstants.signals.SIGUSR1;
  for (const name of ['kill', '_kill']) {
    const original = process[name];
    if (typeof original !== 'function') continue;
    pin(process, name, function kill(pid, signal) {
      if (signal === 'SIGUSR1' || signal === SIGUSR1) refused('SIGUSR1 (it starts the inspector)')();
      return ReflectApply(original, process, [pid, signal]);
    });
  }
  // --- Frames out (fd 1, blocking: nothing here ever creates process.stdout) --
  // The text goes to writeSync as it is (one native call, no Buffer made:
  // issue 19); only a write cut short (a signal, or someone made fd 1
  // non-blocking) goes on from the bytes.
  function writeBytes(text) {
    let offset = 0;
    try {
      offset = writeSync(1, text);
    } catch (e) {
      if (!(e && e.code === 'EAGAIN')) fatal(74, 'cannot write to the host');
    }
    if (offset === byteLength(text, 'utf8')) return;
    const bytes = ReflectApply(bufferFrom, Buffer, [text, 'utf8']);
    while (offset < bytes.length) {
      try {
        offset += writeSync(1, bytes, offset, bytes.length - offset);
      } catch (e) {
        if (e && e.code === 'EAGAIN') continue;  // someone made fd 1 non-blocking
        fatal(74, 'cannot write to the host');
      }
    }
  }

  const core = guestCore({
    writeBytes,
    utf8Length: (text) => byteLength(text, 'utf8'),
    bytesOfText: (text) => ReflectApply(bufferFrom, Buffer, [text, 'utf8']),
    toBase64: (bytes) => bufferToString(ReflectApply(bufferFrom, Buffer, [bytes]), 'base64'),
    fromBase64: (text) => ReflectApply(bufferFrom, Buffer, [text, 'base64']),
    fatal,
    // With modules declared, every import() of the code — eval and Function
    // code inherit it — is the module loader's (core.js); without, import()
    // has no callback and is refused by Node, as before.
    loadTool: (code, importDynamic) => ReflectApply(runInThisContext, vm, ['(' + code + '\n)',
      importDynamic === null ? { filename: 'tool.js' } : { filename: 'tool.js', importModuleDynamically: importDynamic }]),
    // As Node's CommonJS loader: the source is a function body of its own
    // (it cannot close the wrapper early), sloppy mode.
    compileModule: (source, name, importDynamic) => ReflectApply(compileFunction, vm, [
      source, ['exports', 'require', 'module', '__filename', '__dirname'],
      importDynamic === null ? { filename: 'module:' + name }
        : { filename: 'module:' + name, importModuleDynamically: importDynamic }]),
    builtin: (name) => nodeRequire(name),
    importBuiltin: async (name) => nodeRequire(name),
    // vm.SourceTextModule and SyntheticModule exist under
    // --experimental-vm-modules (node_argv), which also lets an
    // importModuleDynamically callback answer import() at all.
    esm: async () => (SourceTextModule === undefined ? null : { SourceTextModule, SyntheticModule }),
    esmConditions: ['node', 'import'],
    // A revision that declares modules gets the module loader as its
    // `require`; one that declares none keeps Node's (the permission model
    // and the kernel layers stand behind it, as before issue 17).
    // `node -e` also leaves its own `module` (a Module: createRequire,
    // _load) and `exports` on the global object: gone, or the loader would be
    // one property away from every builtin.
    setRequire: (fn, gate) => {
      defineProperty(globalThis, 'require', { value: fn, writable: true, configurable: true, enumerable: false });
      for (const name of ['module', 'exports', '__filename', '__dirname']) pin(globalThis, name, undefined);
      if (typeof process.getBuiltinModule === 'function') pin(process, 'getBuiltinModule', gate);
    },
    limits: { maxFrameBytes, maxLogBytes, maxDepth },
  });
  const emitLog = core.emitLog;
  // import() of code this harness's frames make (the stub's callback).
  setImportHook(core.importFromHarness);

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
  // so fd 1 stays a blocking pipe that only writeBytes uses.
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

  // --- Host frames in: newline-delimited, with our own bounded buffer --------
  // A line in one chunk (the usual case) is decoded in place. A longer one is
  // decoded piece by piece as its chunks come (a StringDecoder keeps a UTF-8
  // sequence cut between two chunks), never gathered into one Buffer first
  // (issue 19: Buffer.concat's fresh 100 KiB took page faults on every large
  // call: a sixth of the harness's time for a 100 KiB argument).
  let decoder = null;   // a line's decoder once it spans chunks, else null
  let pendingText = '';
  let pendingBytes = 0;
  function onData(chunk) {
    let start = 0;
    for (;;) {
      const newline = bytesIndexOf(chunk, 10, start);
      if (newline === -1) break;
      let line;
      if (decoder === null) {
        line = bufferToString(chunk, 'utf8', start, newline);  // the common case: no copy of the bytes
      } else {
        line = pendingText + decoderEnd(decoder, bytesSubarray(chunk, start, newline));
        decoder = null;
        pendingText = '';
      }
      pendingBytes = 0;
      start = newline + 1;
      core.onLine(line);
    }
    if (start < chunk.length) {
      pendingBytes += chunk.length - start;
      if (pendingBytes >= maxFrameBytes) fatal(66, 'host frame too large');
      if (decoder === null) decoder = new StringDecoder('utf8');
      pendingText += decoderWrite(decoder, bytesSubarray(chunk, start));
    }
  }
  input.on('data', onData);

  // A pre-started sandbox waits for its load frame: its first call's paths
  // (this reader, the core's call path, the vm compiler, fd 1's string
  // writer) run once now, so the runtime compiles and initializes them
  // before that call (issue 19). A fresh sandbox's frames are already in the
  // pipe when the loop first looks, so its load has begun and nothing runs.
  setImmediate(function warmUp() {
    if (decoder !== null || !core.warmUp()) return;
    onData(ReflectApply(bufferFrom, Buffer, ['{"type":"cap_result","req":0,"value":null}\n', 'utf8']));
    ReflectApply(runInThisContext, vm, ['(() => 0\n)', { filename: 'warm-up.js' }]);
    writeBytes('');  // no bytes reach the host
  });
  input.on('end', () => exit(0));
  input.on('error', () => exit(0));
}));
