// The Python harness: appended to harness.js in a Python sandbox's worker (a
// module worker from a data: URL, BROWSER.md: Pyodide 314 refuses classic
// workers, Chromium refuses module Blob workers in an opaque origin). The host
// (browser/host/python.js) appends `__taskyonPython(<JSON string of the code>);`.
//
// Boot: the supervisor hands over the host-verified core files (ArrayBuffers,
// checked by SHA-256 in the host page; this worker, which a tool controls,
// checks nothing) in `{t: 'boot', files}`. The two modules are imported from
// blob: URLs made here; the loader's own fetches (wasm, stdlib) are answered
// from the bytes, and the lock is passed as `lockFileContents`. Nothing is
// fetched from the network (the CSP's connect-src 'none' would refuse it).
// Once booted, the tool is an ordinary harness tool: each call runs the Python
// code in a fresh globals dict with `args` (the call's JSON arguments as Python
// values) and `context` (`await context.storage.get(key)` / set / delete / list,
// `await context.create_subtasks_result(drafts)`, `await
// context.resolve_invocation(name)`: the call's own capabilities, decided by
// the host page as for JavaScript tools); the value of its last expression is
// the result (JSON). The runtime
// (sys, builtins, sys.modules, the in-memory files) is the sandbox's and
// carries over between the calls of one (revision, session); so the global
// fetch is one stable function that dispatches to the running call's
// context.fetch (what a module imported in an earlier call holds still works).
//
// Nothing here is a boundary: Python reaches all of this realm through `js`.
// The boundaries are the opaque origin and the CSP (no connect-src, no eval).
const __taskyonPython = (code, wheels) => {
  const INDEX = 'https://pyodide.invalid/';  // never fetched: every URL under it is answered from the bytes
  const createUrl = URL.createObjectURL, BlobCtor = Blob, ResponseCtor = Response, StringCtor = String;
  const fail = (message) => { setTimeout(() => { throw new Error('python boot: ' + message); }); };

  // Python's output, a line at a time from Pyodide, goes out in messages of up to 4000
  // characters (flushed when full and when a call ends), under the harness's log cap: a
  // long print is a few log messages, never a protocol violation.
  const OUTPUT_CHUNK = 4000;
  const buffered = { log: '', error: '' };
  const flush = (level) => {
    if (buffered[level] !== '') { __taskyonStart.log(level, buffered[level]); buffered[level] = ''; }
  };
  const output = (level, line) => {
    let text = StringCtor(line);
    while (text.length > 0) {
      if (buffered[level].length + text.length + 1 > OUTPUT_CHUNK) flush(level);
      const part = text.slice(0, OUTPUT_CHUNK - 1);
      text = text.slice(part.length);
      buffered[level] += (buffered[level] === '' ? '' : '\n') + part;
    }
    if (line === '') buffered[level] += '\n';
  };

  // The files come on the harness's own port (harness.js), never on the worker's global channel.
  __taskyonStart.onBoot(async (d) => {
    try {
      const files = d.files;
      const text = (name) => new TextDecoder().decode(files[name]);
      const moduleUrl = (name) => createUrl(new BlobCtor([files[name]], { type: 'text/javascript' }));
      const served = {
        'pyodide.asm.wasm': { bytes: files['pyodide.asm.wasm'], type: 'application/wasm' },
        'python_stdlib.zip': { bytes: files['python_stdlib.zip'], type: 'application/zip' },
      };
      // The loader's fetches during boot; anything else is refused here too.
      const bootFetch = async (input) => {
        const url = StringCtor(input && input.url ? input.url : input);  // the loader passes URL objects
        const name = url.startsWith(INDEX) ? url.slice(INDEX.length) : '';
        const f = served[name];
        if (!f) throw new TypeError('python boot: no verified file for ' + url);
        return new ResponseCtor(f.bytes, { status: 200, headers: { 'content-type': f.type } });
      };
      const before = self.fetch;
      self.fetch = bootFetch;
      let pyodide;
      try {
        const { loadPyodide } = await import(moduleUrl('pyodide.mjs'));
        const core = await import(moduleUrl('pyodide.asm.mjs'));
        pyodide = await loadPyodide({
          indexURL: INDEX,
          createPyodideModule: core.default,
          lockFileContents: text('pyodide-lock.json'),
          stdout: (s) => output('log', s),
          stderr: (s) => output('error', s),
          checkAPIVersion: true,
        });
      } finally {
        self.fetch = before;
      }
      // Packages: only the wheels the host verified (`wheels`, their bytes in `files`), installed
      // from those bytes; nothing is ever fetched for a package. pyodide.loadPackage and
      // loadPackagesFromImports (and micropip.install, below) are checked ones that take a shipped wheel's name
      // (PEP 503: case, '-', '_', '.' alike) and refuse anything else (another name, a URL);
      // the internal package manager behind pyodide._api (loadPackage, loadBinaryFile: what the
      // originals call, and they would fetch) refuses. All pinned on the instances and their
      // prototypes. Bytes a tool fetches itself through a granted context.fetch are data the
      // tool may still unpack and run, like any code it fetches: the boundary is the grant.
      const shipped = new Map(Object.entries(wheels || {}));
      const names = () => [...shipped.keys()].join(', ') || 'none';
      const normalize = (n) => StringCtor(n).toLowerCase().replace(/[-_.]+/g, '-');
      const unpackArchive = pyodide.unpackArchive;
      const sitePackages = pyodide.runPython('import sysconfig\nsysconfig.get_paths()["purelib"]');
      const invalidateCaches = pyodide.runPython('import importlib\nimportlib.invalidate_caches');
      const findImports = pyodide.runPython('from pyodide.code import find_imports\nfind_imports');
      const installed = new Map();  // normalized name -> what loadPackage answers for it
      const check = (name) => {
        const key = typeof name === 'string' && !/[/:]/.test(name) ? normalize(name) : '';
        if (!shipped.has(key)) {
          throw new Error(`package ${JSON.stringify(StringCtor(name))} is not a verified wheel of this host: the browser Python sandbox installs only ${names()} (bytes checked by SHA-256 in the host page); nothing is fetched`);
        }
        return key;
      };
      const install = (key) => {
        const w = shipped.get(key);
        if (!installed.has(key)) {
          unpackArchive.call(pyodide, new Uint8Array(files[w.file].slice(0)), 'wheel', { extractDir: sitePackages });
          installed.set(key, Object.freeze({ name: key, version: w.version, fileName: w.file, packageType: 'package' }));
        }
        return installed.get(key);
      };
      const asList = (v) => (v && typeof v.toJs === 'function' ? v.toJs() : v);
      const loadPackage = async function loadPackage(request) {
        const list = asList(request);
        const all = typeof list === 'string' ? [list] : Array.isArray(list) ? list : null;
        if (all === null) throw new TypeError('loadPackage: a wheel name or a list of names');
        const keys = all.map(check);  // every name checked first: a refused name installs nothing
        const out = keys.map(install);
        invalidateCaches();
        return out;
      };
      const loadPackagesFromImports = async function loadPackagesFromImports(code) {
        const wanted = new Set(asList(findImports(StringCtor(code))));
        const hits = [...shipped].filter(([, w]) => w.imports.some((m) => wanted.has(m))).map(([n]) => n);
        return hits.length ? loadPackage(hits) : [];
      };
      // `import micropip` is this: install(REQUIREMENTS) takes `NAME` or `NAME==VERSION` of a
      // shipped wheel (its one version) and installs through the checked loadPackage; a URL, a
      // file name, another specifier or version is refused before anything is installed.
      // list() answers the installed wheels. Nothing here reaches PyPI or any index.
      const requirement = (r) => {
        const m = /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==\s*([A-Za-z0-9.!+_-]+))?\s*$/.exec(StringCtor(r));
        const key = m ? check(m[1]) : check(StringCtor(r));
        if (m && m[2] !== undefined && m[2] !== shipped.get(key).version) {
          throw new Error(`micropip: ${m[1]}==${m[2]} is not shipped: this host verifies ${key} ${shipped.get(key).version} only`);
        }
        return key;
      };
      const micropip = {
        install: async (requirements) => {
          const list = asList(requirements);
          const all = typeof list === 'string' ? [list] : Array.isArray(list) ? list : null;
          if (all === null) throw new TypeError('micropip.install: a requirement or a list of requirements');
          await loadPackage(all.map(requirement));
        },
        list: () => Object.fromEntries([...installed].map(([k, v]) => [k, { name: k, version: v.version, source: 'verified wheel ' + v.fileName }])),
      };
      pyodide.registerJsModule('micropip', micropip);
      const refuse = () => { throw new Error(`the internal package loader is not available in this sandbox: pyodide.loadPackage installs the verified wheels (${names()})`); };
      const pin = (object, methods) => {
        for (let o = object; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
          for (const [name, value] of Object.entries(methods)) {
            if (!Object.prototype.hasOwnProperty.call(o, name)) continue;
            try { Object.defineProperty(o, name, { value, writable: false, configurable: false }); } catch { /* already pinned */ }
          }
        }
      };
      const refused = (list) => Object.fromEntries(list.map((n) => [n, refuse]));
      pin(pyodide, { loadPackage, loadPackagesFromImports });
      const api = pyodide._api;
      if (api) {
        pin(api, refused(['loadBinaryFile', 'loadPackage', 'install', 'installPackage']));
        if (api.packageManager) pin(api.packageManager, refused(['loadPackage', 'loadPackagesFromImports', 'loadBinaryFile', 'downloadPackage', 'installPackage', 'install']));
      }
      // The result as JSON text made by Python's json (None -> null, no lossy proxies); not JSON -> a tool error.
      const scope = pyodide.toPy({});
      // JSON both ways with the host page, whose numbers are doubles: an int beyond 2**53 or a
      // non-finite float is refused (ValueError), never silently changed, in a result as in a
      // request of `context` (_taskyon_exact).
      const exact = `
def _taskyon_exact(v):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return
    if isinstance(v, int):
        if abs(v) > 2**53:
            raise ValueError('an integer beyond 2**53 is not exactly representable in JSON here')
    elif isinstance(v, float):
        if v != v or v in (float('inf'), float('-inf')):
            raise ValueError('NaN and infinities are not JSON numbers')
    elif isinstance(v, dict):
        for x in v.values():
            _taskyon_exact(x)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _taskyon_exact(x)
`;
      const toJson = pyodide.runPython(exact + 'import json\ndef _taskyon_json(v):\n    _taskyon_exact(v)\n    return json.dumps(v, allow_nan=False)\n_taskyon_json', { globals: scope });
      const parse = JSON.parse;
      // `context` in the tool's globals: storage (S7) and the tree capabilities (M14, M15) of the
      // running call, Python values in and out (JSON both ways); a refusal raises the JS
      // CapabilityError ("code: message"). Held after its call, it refuses (call_ended).
      const makeContext = pyodide.runPython(`
import json
class _TaskyonStorage:
    def __init__(self, ask): self._ask = ask
    async def get(self, key): return await self._ask('storage.get', [key])
    async def set(self, key, value): return await self._ask('storage.set', [key, value])
    async def delete(self, key): return await self._ask('storage.delete', [key])
    async def list(self, prefix=''): return await self._ask('storage.list', [prefix])
class _TaskyonContext:
    def __init__(self, ask, call_id):
        self.storage = _TaskyonStorage(ask)
        self.call_id = call_id
        self._ask = ask
    async def create_subtasks_result(self, drafts): return await self._ask('createSubtasksResult', [drafts])
    async def resolve_invocation(self, name): return await self._ask('resolveInvocation', [name])
def _taskyon_context(js_ask, call_id):
    async def ask(op, arguments):
        _taskyon_exact(arguments)
        return json.loads(await js_ask(op, json.dumps(arguments, allow_nan=False)))
    return _TaskyonContext(ask, call_id)
_taskyon_context`, { globals: scope });
      scope.destroy();
      const askFor = (context) => async (op, argumentsJson) => {
        const a = parse(argumentsJson);
        const methods = {
          'storage.get': () => context.storage.get(a[0]), 'storage.set': () => context.storage.set(a[0], a[1]),
          'storage.delete': () => context.storage.delete(a[0]), 'storage.list': () => context.storage.list(a[0]),
          createSubtasksResult: () => context.createSubtasksResult(a[0]), resolveInvocation: () => context.resolveInvocation(a[0]),
        };
        if (!Object.prototype.hasOwnProperty.call(methods, op)) throw new TypeError('context: no operation ' + StringCtor(op));
        try {
          const v = await methods[op]();
          return JSON.stringify(v === undefined ? null : v);
        } catch (e) {
          const err = new Error((e && e.code ? e.code + ': ' : '') + StringCtor(e && e.message));
          err.name = StringCtor(e && e.name || 'Error');
          throw err;
        }
      };
      // One stable global fetch for the sandbox's life, dispatching to the running call's
      // context.fetch: Python modules keep what they imported (pyodide.http._pyfetch does
      // `from js import fetch as _jsfetch` once, and sys.modules outlives a call), so a
      // per-call global would leave them the first call's fetch (refused: call_ended).
      // Between calls it dispatches to the last call's, which refuses (call_ended).
      let callFetch = null;
      const stableFetch = function fetch(input, init) {
        if (callFetch === null) return Promise.reject(new TypeError('fetch: no call is running'));
        return callFetch(input, init);
      };
      self.fetch = stableFetch;
      // The tool's own imports of a shipped wheel are installed before its first call, as
      // Pyodide's console does: `import taskyon_tabular` needs no loadPackage first.
      let imported = null;
      __taskyonStart(async (args, context) => {
        callFetch = context.fetch;
        self.fetch = stableFetch;  // harness.js set this call's context.fetch; the stable one dispatches to it
        const globals = pyodide.toPy({ args });
        const pyContext = makeContext(askFor(context), context.callId);
        globals.set('context', pyContext);
        pyContext.destroy();
        try {
          await (imported ??= loadPackagesFromImports(code));
          const value = await pyodide.runPythonAsync(code, { globals, filename: '<tool>' });
          const out = parse(toJson(value));
          if (value && typeof value.destroy === 'function') value.destroy();
          return out;
        } catch (e) {
          const err = new Error(StringCtor(e && e.message).slice(-4000));
          err.name = e && e.type ? StringCtor(e.type) : 'PythonError';
          throw err;
        } finally {
          globals.destroy();
          flush('log');
          flush('error');
        }
      });
    } catch (e) {
      fail(e && e.message ? e.message : StringCtor(e));
    }
  });
};
