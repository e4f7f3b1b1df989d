// The browser Python checks (issue 15: B6, B7), run by run.mjs in the same
// Chromium with the same canary. The checks that need a booted Pyodide share
// one page (run.mjs keeps the page of the 'python' group open), so a retained
// runtime boots once per (revision, session) for all of them; each check still
// works alone (--filter), booting what it needs.

// A host with a recording policy: every mediated request is seen here and refused
// with a code only this policy gives, so the tool's error proves the route.
async function pythonHost(page) {
  await page.evaluate(() => {
    if (window.ph) return;
    window.seen = [];
    window.ph = new window.taskyon.SandboxHost({
      decide: async (r) => { window.seen.push(r.url); return { allow: false, code: 'refused_by_check', message: 'the check policy refuses' }; },
    });
  });
}

const py = (page, c) => page.evaluate((c) => window.ph.call({ tool: 'py', revision: 'r-py', runtime: 'python', timeoutMs: 20000, ...c }), c);

// One tool for the probes, so they share a booted runtime: it runs args.src
// (top-level await allowed) in a fresh dict with `args` = args.args, and returns its `out`.
const RUNNER = `import ast
g = {'args': args.get('args', {})}
r = eval(compile(args['src'], '<probe>', 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), g)
if r is not None:
    await r
g.get('out')`;
const run = (page, src, a = {}, extra = {}) => py(page, { revision: 'r-runner', code: RUNNER, args: { src, args: a }, ...extra });

// Python code trying every JS-bridge path out of the sandbox (issue 15, item 3).
// Each probe answers 'blocked: <why>' or 'completed: <what>'; a probe that
// needs the network aims at the canary, which counts every request.
const ESCAPES = String.raw`
import js, sys
from pyodide.ffi import to_js, create_proxy
out = {}
canary = args['canary']
def probe(name, fn):
    try:
        out[name] = 'completed: ' + str(fn())[:80]
    except BaseException as e:
        out[name] = 'blocked: ' + type(e).__name__ + ': ' + str(e)[:100]
async def aprobe(name, fn):
    try:
        out[name] = 'completed: ' + str(await fn())[:80]
    except BaseException as e:
        out[name] = 'blocked: ' + type(e).__name__ + ': ' + str(e)[:100]

from pyodide.code import run_js
probe('run_js', lambda: run_js('1 + 1'))
probe('js_eval', lambda: js.eval('1 + 1'))
probe('js_Function', lambda: js.Function.new('return 1')())
probe('fetch_constructor_constructor', lambda: js.fetch.constructor.constructor('return globalThis')())
probe('response_constructor', lambda: js.Response.new('x').constructor.constructor('return 1')())
probe('console_constructor', lambda: js.console.log.constructor('return 1')())
js.setTimeout('self.__taskyon_string_timer = 1', 0)  # a string timer is eval: checked after the sleep below
probe('wasm_then_eval', lambda: js.WebAssembly.constructor.constructor('return 1')())
import pyodide_js
probe('pyodide_api_eval', lambda: pyodide_js._api.eval('1') if hasattr(pyodide_js, '_api') else 'no _api')
probe('pyodide_module_eval', lambda: pyodide_js._module.eval('1') if hasattr(pyodide_js, '_module') else 'no _module')
probe('pyodide_run_js_in_module', lambda: pyodide_js.runPython('from pyodide.code import run_js; run_js(\"1\")'))
for g in ['process', 'Deno', 'require', 'indexedDB', 'caches', 'open', 'document', 'parent', 'top', 'localStorage']:
    probe('global_' + g, lambda g=g: (lambda v: 'absent' if v is None else v)(getattr(js, g, None)) if g not in ('indexedDB', 'caches') else getattr(js, g).open('x'))
def xhr():
    x = js.XMLHttpRequest.new()
    x.open('GET', canary + '/p/py_xhr', False)
    x.send()
    return x.status
probe('xhr_sync', xhr)
def ws():
    js.WebSocket.new(canary.replace('http:', 'ws:') + '/p/py_ws')
    return 'constructed'
probe('websocket', ws)
probe('importScripts', lambda: js.importScripts(canary + '/p/py_import.js'))
probe('event_source', lambda: js.EventSource.new(canary + '/p/py_es') and 'constructed')
probe('send_beacon', lambda: js.navigator.sendBeacon(canary + '/p/py_beacon', 'x') if hasattr(js.navigator, 'sendBeacon') else 'absent')
def nested():
    src = 'fetch(' + repr(canary + '/p/py_nested') + ').then(() => postMessage(1), () => postMessage(0))'
    b = js.Blob.new(to_js([src]), to_js({'type': 'text/javascript'}, dict_converter=js.Object.fromEntries))
    js.Worker.new(js.URL.createObjectURL(b))
    return 'started'
probe('nested_worker', nested)
def datawk():
    js.Worker.new('data:text/javascript,fetch(' + repr(canary + '/p/py_dataworker') + ')', to_js({'type': 'module'}, dict_converter=js.Object.fromEntries))
    return 'started'
probe('nested_data_worker', datawk)
import urllib.request
probe('urllib', lambda: urllib.request.urlopen(canary + '/p/py_urllib').status)
import socket
def sock():
    s = socket.create_connection(('127.0.0.1', int(canary.rsplit(':', 1)[1])), 1)
    s.sendall(b'GET /p/py_socket HTTP/1.0\r\n\r\n')
    data = s.recv(64)
    if not data:
        raise OSError('connected in emulation only: nothing received')
    return data
probe('socket', sock)
await aprobe('js_fetch', lambda: js.fetch(canary + '/p/py_js_fetch'))
from pyodide.http import pyfetch
await aprobe('pyfetch', lambda: pyfetch(canary + '/p/py_pyfetch'))
async def font():
    return await js.FontFace.new('p', 'url(' + canary + '/p/py_font)').load()
await aprobe('font_face', font)
import asyncio
await asyncio.sleep(0.5)
out['setTimeout_string'] = 'completed: ran' if getattr(js.self, '__taskyon_string_timer', None) else 'blocked: the string timer never ran'
`;

/** @param {{expect: Function, hostLog: Function, destroyed: Function, canaryLog: object[], sleep: Function,
 *           rendererCpu: Function, cpuDelta: Function}} t the runner's helpers */
export function pythonChecks(t) {
  const { expect, canaryLog, sleep } = t;
  const phLog = (page) => page.evaluate(() => window.ph.log);
  return [
    ['B6', 'python_returns_42', 'Python (Pyodide from host-verified bytes, module worker from a data: URL, CSP with wasm-unsafe-eval and no connect-src) returns 42', async ({ page }) => {
      await pythonHost(page);
      canaryLog.length = 0;
      const r = await run(page, "import sys, js\nprint('python', sys.version.split()[0])\nout = {'value': args['a'] + 2, 'origin': str(js.origin), 'scheme': str(js.location.protocol)}", { a: 40 });
      expect(r.ok && r.value.value === 42, 'got ' + JSON.stringify(r));
      expect(r.value.origin === 'null' && r.value.scheme === 'data:', 'not an opaque data: worker: ' + JSON.stringify(r.value));
      const csp = await page.evaluate(() => document.querySelector('iframe').getAttribute('csp'));
      expect(/'wasm-unsafe-eval'/.test(csp) && /connect-src 'none'/.test(csp) && !/'unsafe-eval'/.test(csp), 'csp ' + csp);
      expect(canaryLog.length === 0, 'the canary was reached');
      return `42 from Python ${r.logs[0]?.text.split(' ')[1]} in a data: module worker, origin "null"; CSP ${csp.replace(/sha256-[^']+/, 'sha256-…')}`;
    }, 'python'],

    ['B6', 'tampered_core_file_refuses_to_start', 'one changed byte in any core file (loader, core module, wasm, stdlib, lock) or shipped wheel refuses to start, naming the file; no sandbox is created', async ({ page, hostUrl }) => {
      const core = ['pyodide.mjs', 'pyodide.asm.mjs', 'pyodide.asm.wasm', 'python_stdlib.zip', 'pyodide-lock.json'];
      const wheels = await page.evaluate(() => Object.values(window.taskyon.PYODIDE_MANIFEST.wheels).map((w) => w.file));
      expect(wheels.length > 0, 'no wheel in the manifest');
      const files = [...core.map((n) => [n, '**/node_modules/pyodide/' + n]), ...wheels.map((n) => [n, '**/wheels/' + n])];
      const seen = [];
      for (const [name, where] of files) {
        await page.unrouteAll({ behavior: 'wait' });
        await page.route(where, async (route) => {
          try {
            const resp = await route.fetch();
            const body = Buffer.from(await resp.body());
            body[body.length >> 1] ^= 1;  // one bit of one byte
            await route.fulfill({ response: resp, body });
          } catch { /* the page went on (a refused file ends the load early) */ }
        });
        await page.goto(hostUrl);
        await page.waitForFunction(() => window.taskyonReady === true);
        const r = await page.evaluate(async () => {
          await window.taskyon.forgetPyodideFiles({ cache: true });  // the good files of the last round must not be taken from the cache
          window.h = new window.taskyon.SandboxHost();
          const r = await window.h.call({ tool: 'py', revision: 'r1', runtime: 'python', code: '42' });
          return { r, log: window.h.log, iframes: document.querySelectorAll('iframe').length };
        });
        expect(!r.r.ok && r.r.error.code === 'asset_integrity' && r.r.error.message.includes(name + ' '), `${name}: ` + JSON.stringify(r.r));
        expect(r.log.length === 0 && r.iframes === 0, `${name}: a sandbox was created`);
        seen.push(name);
      }
      await page.unrouteAll({ behavior: 'wait' });
      return `each of ${seen.join(', ')} with one bit flipped: asset_integrity naming the file, no sandbox created`;
    }],

    ['B6', 'boot_that_never_settles_times_out', 'a Python sandbox whose boot never settles (test mode: no \'wasm-unsafe-eval\') is destroyed at its start timeout (start_failed) and the call refused', async ({ page }) => {
      const r = await page.evaluate(async () => {
        const h = new window.taskyon.SandboxHost({ testing: { pythonNoWasmEval: true, pythonStartTimeoutMs: 4000 } });
        const r = await h.call({ tool: 'py', revision: 'r1', runtime: 'python', code: '42' });
        const log = h.log;
        h.close();
        return { r, log };
      });
      const d = r.log.find((e) => e.event === 'destroyed');
      expect(!r.r.ok && r.r.error.code === 'start_failed' && d?.reason === 'start_failed', 'got ' + JSON.stringify(r));
      return `no 'wasm-unsafe-eval': destroyed after the 4 s start timeout (${d.detail}), the call refused start_failed`;
    }],

    ['B6', 'cached_bytes_are_checked_again', 'a Cache API entry that does not match its id is not used: the file is fetched again, and refused when that copy is changed too', async ({ page }) => {
      const r = await page.evaluate(async () => {
        const t = window.taskyon, base = new URL('/node_modules/pyodide/', location.href);
        await t.forgetPyodideFiles({ cache: true });
        await t.loadPyodideFiles(base);  // verified and cached
        await t.forgetPyodideFiles();    // memory only
        const c = await caches.open(t.PYODIDE_CACHE);
        let swapped = 0;
        for (const req of await c.keys()) {  // every cached file replaced by other bytes under its id
          await c.put(req, new Response(new Uint8Array([1, 2, 3])));
          swapped++;
        }
        const fetched = () => performance.getEntriesByType('resource').filter((e) => /\/node_modules\/pyodide\/|\/wheels\//.test(e.name)).length;
        const before = fetched();
        await t.loadPyodideFiles(base);
        const after = fetched();
        return { swapped, refetched: after - before };
      });
      const n = await page.evaluate(() => Object.keys(window.taskyon.PYODIDE_MANIFEST.files).length + Object.keys(window.taskyon.PYODIDE_MANIFEST.wheels).length);
      expect(r.swapped === n && r.refetched === n, `the swapped cache entries were used (${n} files): ` + JSON.stringify(r));
      return `${n} cache entries (core files and wheels) swapped for other bytes: all refused on reading and fetched (and verified) again`;
    }],

    ['B6', 'js_bridge_escapes_blocked', 'from Python: run_js, js.eval, Function via fetch/Response/console constructors, pyodide internals, host globals, XHR, WebSocket, workers, urllib, socket are blocked; js.fetch and pyfetch reach only the host policy; the canary sees 0 requests', async ({ page, canary }) => {
      await pythonHost(page);
      canaryLog.length = 0;
      await page.evaluate(() => { window.seen.length = 0; });
      const r = await run(page, ESCAPES, { canary });
      expect(r.ok, 'the probe failed: ' + JSON.stringify(r.error));
      await sleep(300);
      const probes = r.value;
      if (process.env.TASKYON_PROBES) console.error(JSON.stringify(probes, null, 1));
      const completed = Object.entries(probes).filter(([k, v]) => v.startsWith('completed') &&
        v !== 'completed: absent' && !['websocket', 'event_source', 'nested_worker', 'nested_data_worker'].includes(k));
      expect(completed.length === 0, 'not blocked: ' + JSON.stringify(Object.fromEntries(completed)));
      for (const k of ['js_fetch', 'pyfetch']) expect(/the check policy refuses/.test(probes[k]), `${k} did not go to the host policy: ${probes[k]}`);
      const seen = await page.evaluate(() => window.seen);
      expect(seen.some((u) => u.endsWith('/p/py_js_fetch')) && seen.some((u) => u.endsWith('/p/py_pyfetch')), 'the host policy saw ' + JSON.stringify(seen));
      expect(canaryLog.length === 0, `the canary saw ${canaryLog.length} request(s): ${canaryLog.map((h) => h.url).join(', ')}`);
      const n = Object.keys(probes).length;
      return `${n} probes blocked or absent (constructed WebSocket/EventSource/workers reached nothing), js.fetch and pyfetch -> the host policy (its refusal came back as CapabilityError), canary 0; e.g. run_js: ${probes.run_js.slice(0, 60)}`;
    }, 'python'],

    ['B6', 'pyfetch_works_in_every_call', 'two consecutive calls of one retained Python sandbox both use pyodide.http.pyfetch (imported once, kept in sys.modules) and both reach the host policy', async ({ page, canary }) => {
      await pythonHost(page);
      canaryLog.length = 0;
      await page.evaluate(() => { window.seen.length = 0; });
      const src = `from pyodide.http import pyfetch
try:
    await pyfetch(args['u'])
    out = 'fetched'
except Exception as e:
    out = type(e).__name__ + ': ' + str(e)[:200]`;
      const rs = [];
      for (const n of [1, 2]) rs.push(await run(page, src, { u: canary + '/p/py_pyfetch_' + n }));
      expect(rs.every((r) => r.ok) && rs[0].sandbox === rs[1].sandbox, 'the calls failed or did not share a sandbox: ' + JSON.stringify(rs));
      for (const [i, r] of rs.entries()) expect(/the check policy refuses/.test(r.value), `call ${i + 1}: pyfetch did not reach the host policy: ${r.value}`);
      const seen = await page.evaluate(() => window.seen);
      expect([1, 2].every((n) => seen.some((u) => u.endsWith('/p/py_pyfetch_' + n))), 'the host policy saw ' + JSON.stringify(seen));
      expect(canaryLog.length === 0, 'the canary was reached');
      return `calls 1 and 2 in sandbox ${rs[0].sandbox}: pyfetch -> the host policy both times (${rs[1].value.slice(0, 60)})`;
    }, 'python'],

    ['B6', 'packages_only_from_verified_wheels', 'the shipped wheel (taskyon-tabular, its SHA-256 pinned in the manifest and checked in the host page) installs from its verified bytes by loadPackage and micropip.install and runs; another name, a URL, another version or a list holding one refuses before anything installs, and so do the internal package manager\'s loadPackage and loadBinaryFile behind pyodide._api (instance and prototype); nothing is fetched, the policy never asked', async ({ page, canary }) => {
      await pythonHost(page);
      canaryLog.length = 0;
      const seenBefore = await page.evaluate(() => window.seen.length);
      const r = await run(page, `import pyodide_js, importlib.util
out = {}
async def attempt(name, f):
    try:
        await f()
        out[name] = 'loaded'
    except Exception as e:
        out[name] = str(e)[:240]
u = args['u']
api = pyodide_js._api
await attempt('other', lambda: pyodide_js.loadPackage('numpy'))
await attempt('url', lambda: pyodide_js.loadPackage(u + '/whl/taskyon_tabular-1.0.0-py3-none-any.whl'))
await attempt('mixed', lambda: pyodide_js.loadPackage(['taskyon-tabular', 'evil']))
out['mixed_installed_nothing'] = importlib.util.find_spec('taskyon_tabular') is None
await attempt('managerLoadPackage', lambda: api.packageManager.loadPackage(u + '/whl/evil-1.0-py3-none-any.whl'))
await attempt('prototypeLoadPackage', lambda: api.packageManager.constructor.prototype.loadPackage.call(api.packageManager, u + '/whl/e2-1.0-py3-none-any.whl'))
await attempt('loadBinaryFile', lambda: api.loadBinaryFile(u + '/whl/bin'))
import micropip
await attempt('micropip_other', lambda: micropip.install('requests'))
await attempt('micropip_version', lambda: micropip.install('taskyon-tabular==2.0.0'))
await attempt('micropip_url', lambda: micropip.install(u + '/taskyon_tabular-1.0.0-py3-none-any.whl'))
out['refusals_installed_nothing'] = importlib.util.find_spec('taskyon_tabular') is None
await attempt('micropip', lambda: micropip.install('Taskyon_Tabular==1.0.0'))
await attempt('loadPackage', lambda: pyodide_js.loadPackage('taskyon.tabular'))
import taskyon_tabular
out['summary'] = taskyon_tabular.summarize(taskyon_tabular.parse_csv('a,n\\nx,2\\ny,40'), 'n')
out['list'] = sorted(micropip.list().to_py().keys())
`, { u: canary });
      const v = r.value || {};
      const refusedName = ['other', 'url', 'mixed', 'micropip_other', 'micropip_url'];
      const refusedApi = ['managerLoadPackage', 'prototypeLoadPackage', 'loadBinaryFile'];
      expect(r.ok, 'the probe failed: ' + JSON.stringify(r.error));
      expect(refusedName.every((k) => /is not a verified wheel of this host: the browser Python sandbox installs only taskyon-tabular/.test(v[k])), 'a name was not refused: ' + JSON.stringify(v));
      expect(refusedApi.every((k) => /internal package loader is not available/.test(v[k])), 'the internal package manager: ' + JSON.stringify(v));
      expect(/taskyon-tabular==2\.0\.0 is not shipped/.test(v.micropip_version), 'another version: ' + v.micropip_version);
      expect(v.mixed_installed_nothing === true && v.refusals_installed_nothing === true, 'a refused request installed something: ' + JSON.stringify(v));
      expect(v.micropip === 'loaded' && v.loadPackage === 'loaded' && v.summary?.count === 2 && v.summary?.sum === 42, 'the verified wheel: ' + JSON.stringify(v));
      expect(JSON.stringify(v.list) === '["taskyon-tabular"]', 'micropip.list: ' + JSON.stringify(v.list));
      const asked = await page.evaluate((n) => window.seen.slice(n), seenBefore);
      expect(canaryLog.length === 0 && asked.length === 0, 'fetched: canary ' + canaryLog.length + ', policy asked for ' + JSON.stringify(asked));
      return `taskyon-tabular 1.0.0 installed from verified bytes (micropip.install, loadPackage), summarize -> sum ${v.summary.sum}; refused: "${v.other.slice(0, 70)}…", a URL, a list with one unknown name, ==2.0.0, the internal manager and loadBinaryFile; canary 0, policy never asked`;
    }, 'python'],

    ['B6', 'tool_imports_install_verified_wheels', 'a Python tool whose own code imports a shipped wheel\'s module gets it installed from the verified bytes before its first call (no loadPackage); an import of a package that is not shipped is ModuleNotFoundError, nothing fetched', async ({ page }) => {
      await pythonHost(page);
      canaryLog.length = 0;
      const seenBefore = await page.evaluate(() => window.seen.length);
      const code = "import taskyon_tabular\nfrom taskyon_tabular import parse_csv\n{'sum': taskyon_tabular.summarize(parse_csv(args['csv']), 'n')['sum'], 'version': taskyon_tabular.__version__}";
      const r = await py(page, { revision: 'r-wheel-import', code, args: { csv: 'n\n40\n2' }, disposable: true });
      const missing = await run(page, "try:\n    import requests\n    out = 'imported'\nexcept ModuleNotFoundError as e:\n    out = 'ModuleNotFoundError: ' + str(e)");
      expect(r.ok && r.value.sum === 42 && r.value.version === '1.0.0', 'the importing tool: ' + JSON.stringify(r.ok ? r.value : r.error));
      expect(missing.ok && /^ModuleNotFoundError/.test(missing.value), 'import requests: ' + JSON.stringify(missing.value ?? missing.error));
      const asked = await page.evaluate((n) => window.seen.slice(n), seenBefore);
      expect(canaryLog.length === 0 && asked.length === 0, 'fetched: canary ' + canaryLog.length + ', policy asked for ' + JSON.stringify(asked));
      return `import taskyon_tabular -> sum ${r.value.sum} (version ${r.value.version}) with no loadPackage; import requests: ${missing.value.slice(0, 60)}`;
    }, 'python'],

    ['S4', 'python_output_floods_keep_the_sandbox', 'a Python print flood (1500 prints, one print of 1200 lines) is carried in log messages of up to 4000 characters under the 1000-message cap, never a protocol violation: the call returns and the sandbox is kept; a result nested deeper than 512 levels (json.dumps replaced) and an integer result beyond 2**53 are tool errors, the sandbox kept', async ({ page }) => {
      await pythonHost(page);
      const flood = await run(page, "for i in range(1500):\n    print(i)\nprint('\\n'.join(str(i) for i in range(1200)))\nout = 'done'");
      expect(flood.ok && flood.value === 'done', 'the flood call: ' + JSON.stringify(flood.error || flood.value));
      const text = flood.logs.map((l) => l.text).join('\n');
      expect(flood.logs.length < 1000 && flood.logs.every((l) => l.text.length <= 4096) && text.includes('1499') && text.includes('1199'),
        `${flood.logs.length} log messages, longest ${Math.max(...flood.logs.map((l) => l.text.length))}`);
      const deep = await py(page, { revision: 'r-deep', code: "import json\njson.dumps = lambda v, **k: '[' * 600 + ']' * 600\n0", disposable: true });
      const huge = await run(page, "out = {'n': 10**400}");  // JSON in the page is a double: refused, never made null
      const after = await run(page, "out = 'still here'");
      expect(!huge.ok && huge.sandboxKept && /beyond 2\*\*53/.test(huge.error.message), 'a 400-digit integer result: ' + JSON.stringify(huge.ok ? huge.value : huge.error));
      expect(!deep.ok && deep.sandboxKept && deep.error.name === 'RangeError' && /nested deeper than 512/.test(deep.error.message),
        'deep result ' + JSON.stringify(deep.error));
      expect(after.ok && after.value === 'still here' && after.sandbox === flood.sandbox, 'then ' + JSON.stringify(after.error || after.value));
      return `${flood.logs.length} log messages for 2700 lines; a 600-deep result: ${deep.error.name}; 10**400: ${huge.error.name}; the same sandbox answers after`;
    }, 'python'],

    ['B7', 'state_per_revision_and_session', 'sys attributes, builtins and in-memory files carry over between calls of one (revision, session), never to another session; a disposable call gets a fresh runtime', async ({ page }) => {
      await pythonHost(page);
      const src = `import sys, builtins, os
first = not hasattr(sys, 'taskyon_mark')
seen = {'sys': getattr(sys, 'taskyon_mark', None), 'builtins': getattr(builtins, 'taskyon_secret', None),
        'file': open('/tmp/taskyon_note').read() if os.path.exists('/tmp/taskyon_note') else None}
if first:
    sys.taskyon_mark = args['who']
    builtins.taskyon_secret = args['who'] + '-secret'
    with open('/tmp/taskyon_note', 'w') as f: f.write(args['who'] + '-file')
out = seen`;
      // "alice" is the probes' session (already booted when the group runs): its earlier calls set none of this.
      const c = (session, who, extra = {}) => run(page, src, { who }, { session, ...extra });
      const a1 = await c('default', 'alice');
      const a2 = await c('default', 'alice');
      const b1 = await c('bob', 'bob');
      const b2 = await c('bob', 'bob');
      const d = await c('default', 'disp', { disposable: true });
      const all = [a1, a2, b1, b2, d];
      expect(all.every((r) => r.ok), 'a call failed: ' + JSON.stringify(all.find((r) => !r.ok)));
      const none = { sys: null, builtins: null, file: null };
      const same = (x, y) => JSON.stringify(x) === JSON.stringify(y);
      expect(same(a1.value, none), 'alice\'s first call saw state: ' + JSON.stringify(a1.value));
      expect(same(a2.value, { sys: 'alice', builtins: 'alice-secret', file: 'alice-file' }) && a2.sandbox === a1.sandbox, 'alice\'s state did not carry over: ' + JSON.stringify(a2.value));
      expect(same(b1.value, none) && b1.sandbox !== a1.sandbox, 'bob saw alice\'s state: ' + JSON.stringify(b1.value));
      expect(same(b2.value, { sys: 'bob', builtins: 'bob-secret', file: 'bob-file' }), 'bob\'s state: ' + JSON.stringify(b2.value));
      expect(same(d.value, none) && d.sandbox !== a1.sandbox, 'the disposable call saw state: ' + JSON.stringify(d.value));
      const log = await phLog(page);
      expect(t.destroyed(log, d.sandbox)?.reason === 'disposable', 'the disposable sandbox was not destroyed');
      return 'alice\'s 2nd call saw her sys/builtins/file, bob\'s 1st saw none (own sandbox), bob\'s 2nd only his; disposable: fresh runtime, destroyed';
    }, 'python'],

    ['B6', 'python_csp_removal_is_detected', 'the same bridge probes in a Python sandbox without its CSP (test mode) run eval and reach the canary: the escape check can fail', async ({ page, canary }) => {
      await page.evaluate(() => { if (!window.ph2) window.ph2 = new window.taskyon.SandboxHost({ testing: { stripCsp: true } }); });
      canaryLog.length = 0;
      const r = await page.evaluate((c) => window.ph2.call({ tool: 'py', revision: 'r-runner', runtime: 'python', timeoutMs: 20000, code: c.code, args: c.args }),
        { code: RUNNER, args: { src: ESCAPES, args: { canary } } });
      expect(r.ok, 'the probe failed: ' + JSON.stringify(r.error));
      await sleep(300);
      const ran = Object.entries(r.value).filter(([, v]) => v.startsWith('completed') && v !== 'completed: absent').map(([k]) => k);
      expect(r.value.run_js.startsWith('completed') && canaryLog.length > 0, 'without the CSP eval or the network was still blocked: the check proves nothing: ' + JSON.stringify(r.value));
      return `without the CSP: ${ran.length} probes completed (${ran.slice(0, 8).join(', ')}, …), the canary saw ${canaryLog.length} request(s)`;
    }, 'python'],

    // Last of the group: its destruction recycles the renderer (B4), ending the group's retained runtimes.
    ['B7', 'stuck_python_loop_stopped_within_200ms', 'a `while True: pass` Python call with a 1 s timeout uses no worker CPU from 200 ms after its deadline', async ({ page, cdp }) => {
      await pythonHost(page);
      const warm = await run(page, 'out = 1');  // booted: the loop below runs Python, not the boot
      expect(warm.ok, 'the boot failed: ' + JSON.stringify(warm.error));
      const r = await run(page, 'while True:\n    pass', {}, { timeoutMs: 1000 });
      const [nowPerf, nowWall] = [await page.evaluate(() => performance.now()), Date.now()];
      const entry = t.destroyed(await phLog(page), r.sandbox);
      expect(!r.ok && r.error.code === 'timeout' && entry?.reason === 'timeout', 'the call did not time out: ' + JSON.stringify(r));
      await sleep(Math.max(0, nowWall - (nowPerf - r.deadline) + 200 - Date.now()));
      const a = await t.rendererCpu(cdp);
      await sleep(500);
      const b = await t.rendererCpu(cdp);
      const d = t.cpuDelta(a, b);
      const busyMs = Math.round(d.s * 1000);
      expect(busyMs <= 20, `worker threads used ${busyMs} ms of CPU in the 500 ms from deadline + 200 ms (${d.busy})`);
      return `destroyed ${Math.round(entry.at - r.deadline)} ms after the deadline; worker-thread CPU ${busyMs} ms in the 500 ms window from deadline + 200 ms`;
    }, 'python'],
  ];
}
