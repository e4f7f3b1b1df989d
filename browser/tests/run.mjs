#!/usr/bin/env node
// The browser checks: the contracts of DESIGN §9 (B1-B4) and the sandbox
// lifetime of §5 (S1-S6, M2, M13) proven in real Chromium. playwright-core
// drives Debian's /usr/bin/chromium (never a downloaded browser); this script
// starts a loopback server for the host page (browser/ as its root) and a
// canary server on another loopback port that logs every request, none of which
// should ever arrive.
//
//   node browser/tests/run.mjs [--filter SUBSTRING]... [--json] [--list] [--tycli PATH]
//
// B8 (strict mode) starts a real `tycli serve` from --tycli PATH (or $TASKYON_TYCLI)
// in its own TASKYON_HOME; without a binary those checks SKIP with the reason.
//
// One line per check, named as `tycli diagnostics` names them
// (tool_security_contracts.<id>.<name>): PASS, FAIL or SKIP with the reason.
// Exit: 0 no check failed; 1 a check failed; 77 Chromium missing (SKIP: run
// scripts/setup.sh); 3 the environment failed.
import http from 'node:http';
import fs from 'node:fs';
import { listen, startHostServer } from './servers.mjs';
import { startStrict, STRICT_CODE } from './strict.mjs';
import { pythonChecks } from './python_checks.mjs';
import { wasmChecks } from './wasm_checks.mjs';
import { storeChecks } from './store_checks.mjs';
import { taskChecks } from './tasks_checks.mjs';
import { execFileSync } from 'node:child_process';

const CHROMIUM = process.env.TASKYON_CHROMIUM || '/usr/bin/chromium';

const argv = process.argv.slice(2);
const filters = [];
let json = false, list = false, tycliArg = '';
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--filter') filters.push(argv[++i] || '');
  else if (argv[i] === '--json') json = true;
  else if (argv[i] === '--list') list = true;
  else if (argv[i] === '--tycli') tycliArg = argv[++i] || '';
  else { console.error(`browser checks: unknown argument ${argv[i]}`); process.exit(2); }
}
const TYCLI = tycliArg || process.env.TASKYON_TYCLI || '';
// ---------------------------------------------------------------- servers

// Every request that reaches the canary is logged: a sandbox probe must never get here.
const canaryLog = [];
function startCanary() {
  const server = http.createServer((req, res) => {
    canaryLog.push({ method: req.method, url: req.url, at: Date.now(), cookie: req.headers.cookie || null, token: req.headers['x-token'] || null });
    const p = new URL(req.url, 'http://x').pathname;
    const headers = { 'access-control-allow-origin': '*', 'cache-control': 'no-store' };
    // The store checks' header (x-token) passes a preflight; nothing else is allowed more than before.
    if (req.method === 'OPTIONS' && p.startsWith('/m/')) {
      res.writeHead(204, { ...headers, 'access-control-allow-headers': 'x-token', 'access-control-allow-methods': 'GET' }).end();
      return;
    }
    // Routes for the direct-mode checks (M9-M12), reached only with the address space omitted.
    if (p === '/m/redirect') { res.writeHead(302, { ...headers, location: '/m/after-redirect' }).end(); return; }
    if (p === '/m/slow') { res.writeHead(200, headers); res.write('a'); return; }  // never ends
    if (p === '/m/big') {
      res.writeHead(200, { ...headers, 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 120);
      let n = 0;
      const more = () => { while (n < 64) { n++; if (!res.write(chunk)) { res.once('drain', more); return; } } res.end(); };
      more();
      return;
    }
    if (p.endsWith('.js')) res.writeHead(200, { ...headers, 'content-type': 'text/javascript' }).end('self.__canary = 1; export {};');
    else if (p.startsWith('/p/eventsource')) res.writeHead(200, { ...headers, 'content-type': 'text/event-stream' }).end('data: hi\n\n');
    else res.writeHead(200, { ...headers, 'content-type': 'text/plain' }).end('canary');
  });
  server.on('upgrade', (req, socket) => {
    canaryLog.push({ method: 'UPGRADE', url: req.url, at: Date.now() });
    socket.destroy();
  });
  return server;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- helpers run in the page

// Creates window.h = new SandboxHost(options) in the page.
async function newHost(page, options = {}) {
  await page.evaluate((o) => {
    if (window.h) window.h.close();
    window.h = new window.taskyon.SandboxHost(o);
  }, options);
}

// One call through window.h; `c` is the call (code as a string).
function call(page, c) {
  return page.evaluate((c) => window.h.call(c), c);
}

const hostLog = (page) => page.evaluate(() => window.h.log);
const destroyed = (log, sandbox) => log.find((e) => e.event === 'destroyed' && e.sandbox === sandbox);

function expect(cond, message) { if (!cond) throw new Error(message); }

// ---------------------------------------------------------------- B2 probes

// Tool code that tries every direct network path of BROWSER.md from the worker.
// It captures the native fetch when it is loaded (before the harness installs
// the mediated one), as hostile code would.
const PROBE_CODE = String.raw`((nativeFetch) => async ({canary}) => {
  const out = {};
  const settle = (p, ms = 1500) => Promise.race([p, new Promise((r) => setTimeout(() => r('pending'), ms))]);
  const probe = async (name, fn) => {
    try { out[name] = 'completed: ' + String(await settle(fn(canary + '/p/' + name))).slice(0, 60); }
    catch (e) { out[name] = 'blocked: ' + ((e && e.name) || e); }
  };
  await probe('fetch', (u) => nativeFetch(u).then((r) => r.status));
  await probe('fetch_post', (u) => nativeFetch(u, { method: 'POST', body: 'x' }).then((r) => r.status));
  await probe('fetch_no_cors', (u) => nativeFetch(u, { mode: 'no-cors' }).then((r) => r.type));
  await probe('fetch_keepalive', (u) => nativeFetch(u, { keepalive: true, method: 'POST', body: 'x' }).then((r) => r.status));
  await probe('xhr_sync', (u) => { const x = new XMLHttpRequest(); x.open('GET', u, false); x.send(); return x.status; });
  await probe('xhr_async', (u) => new Promise((res, rej) => { const x = new XMLHttpRequest(); x.open('GET', u); x.onload = () => res(x.status); x.onerror = () => rej(new Error('xhr error')); x.send(); }));
  await probe('websocket', (u) => new Promise((res, rej) => { const w = new WebSocket(u.replace('http:', 'ws:')); w.onopen = () => res('open'); w.onerror = () => rej(new Error('ws error')); w.onclose = () => rej(new Error('ws closed')); }));
  await probe('eventsource', (u) => new Promise((res, rej) => { const s = new EventSource(u); s.onmessage = () => { s.close(); res('message'); }; s.onerror = () => { s.close(); rej(new Error('es error')); }; }));
  await probe('import_scripts', (u) => { importScripts(u + '.js'); return 'loaded'; });
  await probe('dynamic_import', (u) => import(u + '.mjs.js').then(() => 'imported'));
  await probe('nested_worker_url', (u) => new Promise((res, rej) => { const w = new Worker(u + '.js'); w.onerror = () => rej(new Error('worker error')); setTimeout(() => res('started'), 800); }));
  await probe('nested_blob_worker', (u) => new Promise((res, rej) => {
    const src = 'fetch(' + JSON.stringify(u) + ').then(() => postMessage("reached"), (e) => postMessage("blocked"))';
    const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })));
    w.onmessage = (e) => (e.data === 'reached' ? res('reached') : rej(new Error('inner fetch blocked')));
    w.onerror = () => rej(new Error('worker error'));
  }));
  await probe('font_face', (u) => new FontFace('probe', 'url(' + u + ')').load().then(() => 'loaded'));
  let evalResult, fnResult;
  try { evalResult = 'ran: ' + (0, eval)('1 + 1'); } catch (e) { evalResult = 'blocked: ' + e.name; }
  try { fnResult = 'ran: ' + new Function('return 2')(); } catch (e) { fnResult = 'blocked: ' + e.name; }
  return { probes: out, eval: evalResult, newFunction: fnResult };
})(self.fetch)`;

// The same paths from the iframe's own document (the supervisor's realm): the
// tool cannot reach it, but the CSP must cover it too.
async function iframeProbes(frame, canary) {
  return frame.evaluate(async (canary) => {
    const out = {};
    const img = new Image();
    out.iframe_img = await new Promise((r) => { img.onload = () => r('completed'); img.onerror = () => r('blocked'); img.src = canary + '/p/iframe_img'; setTimeout(() => r('pending'), 1500); });
    try { await fetch(canary + '/p/iframe_fetch'); out.iframe_fetch = 'completed'; } catch (e) { out.iframe_fetch = 'blocked: ' + e.name; }
    return out;
  }, canary);
}

// The (one) sandbox iframe's frame, for code run in the supervisor's realm.
async function sandboxFrame(page) {
  const el = await page.$('iframe');
  return el ? el.contentFrame() : null;
}

// Runs the 15 probes in a sandbox of a host made with `testing`; returns what the canary saw.
async function runProbes(env, testing) {
  const { page } = env;
  await newHost(page, { testing });
  canaryLog.length = 0;
  const r = await call(page, { tool: 'probe', revision: 'r-probe', code: PROBE_CODE, args: { canary: env.canary }, timeoutMs: 30000 });
  expect(r.ok, 'the probe tool failed: ' + JSON.stringify(r.error));
  const frame = await sandboxFrame(page);
  expect(frame, 'no sandbox iframe frame found');
  const inFrame = await iframeProbes(frame, env.canary);
  await sleep(300);  // late requests (keepalive, nested workers) still count
  const probes = { ...r.value.probes, ...inFrame };
  return { probes, value: r.value, hits: canaryLog.slice() };
}

// ---------------------------------------------------------------- CPU (B4)

// CPU seconds of every worker thread of every renderer process (the sandbox's
// worker runs in one): the pids from CDP, the CPU time from
// /proc/<pid>/task/<tid>/stat (utime + stime, clock ticks of 10 ms), read when
// asked (CDP's own cpuTime lags).
async function rendererCpu(cdp) {
  const { processInfo } = await cdp.send('SystemInfo.getProcessInfo');
  const cpu = new Map();  // "pid/tid name" -> CPU seconds
  for (const p of processInfo.filter((p) => p.type === 'renderer')) {
    let tids = [];
    try { tids = fs.readdirSync(`/proc/${p.id}/task`); } catch { continue; }  // ended: no CPU
    for (const tid of tids) {
      try {
        // Tool code runs on the worker thread; other threads' work (the
        // renderer's own teardown, the host page) is not the sandbox running.
        const stat = fs.readFileSync(`/proc/${p.id}/task/${tid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        if (!name.startsWith('DedicatedWorker')) continue;
        cpu.set(`${p.id}/${tid} ${name}`, (Number(f[11]) + Number(f[12])) / 100);  // fields 14, 15: utime, stime
      } catch { /* the thread ended */ }
    }
  }
  return cpu;
}

// CPU seconds used between two samples by the threads alive at the second,
// and the busiest of them.
function cpuDelta(a, b) {
  let s = 0;
  const busy = [];
  for (const [k, t] of b) {
    const d = t - (a.get(k) ?? 0);
    s += d;
    if (d > 0) busy.push(`${k}: ${Math.round(d * 1000)} ms`);
  }
  return { s, busy: busy.sort().slice(0, 6).join(', ') };
}

const m_deadline = (r) => (typeof r.deadline === 'number' ? r.deadline : NaN);

// A while(true){} tool with a 200 ms timeout; CPU used by renderers in the
// window [deadline + 200 ms, deadline + 700 ms].
async function spinAndMeasure(env, testing, how) {
  const { page, cdp } = env;
  await newHost(page, { testing });
  await call(page, { tool: 'warm', revision: 'r-warm', code: '() => 1' });  // assets loaded, renderer warm
  // A second host of the page with a retained sandbox: it shares the renderer too.
  await page.evaluate(async (testing) => {
    if (window.h2) window.h2.close();
    window.h2 = new window.taskyon.SandboxHost({ testing });
    await window.h2.call({ tool: 'other', revision: 'r-other', code: '() => 1' });
  }, testing);
  const code = '() => { while (true) {} }';
  const r = how === 'abort'
    ? await page.evaluate((code) => {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 200);
      return window.h.call({ tool: 'spin', revision: 'r-spin', code, timeoutMs: 60000, signal: ac.signal });
    }, code)
    : await call(page, { tool: 'spin', revision: 'r-spin', code, timeoutMs: 200 });
  // The deadline on this process's clock: the timeout's nominal deadline, or
  // the abort (its listener destroys at once). The window starts 200 ms after it.
  const [nowPerf, nowWall] = [await page.evaluate(() => performance.now()), Date.now()];
  const log = await hostLog(page);
  const entry = destroyed(log, r.sandbox);
  const deadlinePerf = how === 'abort' ? (entry ? entry.at : nowPerf) : m_deadline(r);
  const lateMs = (entry ? entry.at : NaN) - deadlinePerf;
  await sleep(Math.max(0, nowWall - (nowPerf - deadlinePerf) + 200 - Date.now()));
  const a = await rendererCpu(cdp);
  await sleep(500);
  const b = await rendererCpu(cdp);
  return { r, entry, busyMs: Math.round(cpuDelta(a, b).s * 1000), busy: cpuDelta(a, b).busy, windowMs: 500, destroyedAfterMs: Math.round(lateMs) };
}

// ---------------------------------------------------------------- B5 popups

const TRUSTED = 'sha256:' + 'ab'.repeat(32);     // the revision of the page's trusted host tool
const POPUP_ORIGIN = 'https://popup.example.test';  // served by a playwright route: no network

// window.ph = a PopupHost trusting TRUSTED, with TRUSTED permitted for `targets`.
async function popupHost(page, targets = []) {
  await page.evaluate(({ targets, trusted }) => {
    const { PopupHost, PopupPermissions } = window.taskyon.popup;
    window.TRUSTED = trusted;
    window.perms = new PopupPermissions();
    for (const t of targets) if (!window.perms.grant(trusted, t).ok) throw new Error('grant ' + t);
    window.ph = new PopupHost({ permissions: window.perms, trusted: [trusted] });
    const b = document.createElement('button');
    b.id = 'open'; b.textContent = 'open';
    b.onclick = () => { window.popResult = window.ph.open(window.popRequest); };
    document.body.append(b);
  }, { targets, trusted: TRUSTED });
}

// The user's click on the host page's button, which asks for `req`.
async function clickOpen(page, req) {
  await page.evaluate((r) => { window.popRequest = r; window.popResult = null; }, req);
  await page.click('#open');
  return page.evaluate(() => window.popResult);
}

// ---------------------------------------------------------------- B8 strict mode: a real tycli serve

// A Skip thrown by a check reports SKIP with its reason.
class Skip extends Error {}

// Started by the first B8 check (strict.mjs), stopped at the end.
let strict = null;

async function strictEnv() {
  if (!TYCLI) throw new Skip('no tycli binary given (--tycli PATH or TASKYON_TYCLI; the ctest passes the build\'s)');
  if (!fs.existsSync(TYCLI)) throw new Error(`tycli binary ${TYCLI} does not exist`);
  if (!strict) strict = await startStrict(TYCLI);
  return strict;
}

async function stopStrict() { if (strict) await strict.stop(); }

// window.h in strict mode (the relay's /serve/v1/fetch: same origin as the page), with a decide
// that would allow everything and counts how often it is asked.
async function strictHost(page, env, endpoint = '/serve/v1/fetch') {
  await page.evaluate(({ endpoint, token }) => {
    if (window.h) window.h.close();
    window.decided = 0;
    window.h = new window.taskyon.SandboxHost({ egress: { endpoint, token },
      decide: async () => { window.decided++; return { allow: true }; } });
  }, { endpoint, token: env.token });
}

const audit = () => strict.cli(['audit']);

// ---------------------------------------------------------------- the checks

// A tool that fetches `u` and says what happened.
const FETCH_CODE = `async ({u}) => { try { const r = await fetch(u); return 'fetched ' + r.status + ' ' + (await r.text()).length; } catch (e) { return e.name + ':' + e.code; } }`;

// A host whose policy allows everything and whose direct fetch omits the
// public address space (test mode), so the loopback canary is reachable:
// what remains to stop a request is direct mode's own rules (M9-M12).
async function directHost(page, fetchOptions) {
  await page.evaluate((fetchOptions) => {
    if (window.h) window.h.close();
    window.h = new window.taskyon.SandboxHost({ decide: async () => ({ allow: true }), fetchOptions, testing: { omitAddressSpace: true } });
  }, fetchOptions);
}

const COUNTER = '({step = 1}) => { globalThis.__count = (globalThis.__count ?? 0) + step; return {count: globalThis.__count}; }';

const checks = [
  ['B1', 'code_runs_in_opaque_blob_worker', 'tool code runs in a classic Blob worker of an opaque-origin sandboxed iframe', async (env) => {
    const { page } = env;
    await newHost(page);
    const r = await call(page, { tool: 'where', revision: 'r1', code: `() => ({
      origin: self.origin, href: self.location.href, secure: self.isSecureContext,
      window: typeof window, document: typeof document, parent: typeof parent, opener: typeof opener,
      secret: typeof __hostSecret, storage: typeof localStorage, idb: (() => { try { indexedDB.open('x'); return 'opened'; } catch (e) { return 'threw ' + e.name; } })(),
      scope: Object.prototype.toString.call(self) })` });
    expect(r.ok, 'call failed: ' + JSON.stringify(r.error));
    const v = r.value;
    expect(v.origin === 'null', `worker origin is ${v.origin}, not "null"`);
    expect(v.href.startsWith('blob:null/'), `worker script is ${v.href}, not a blob: URL of an opaque origin`);
    expect(v.scope === '[object DedicatedWorkerGlobalScope]', `runs in ${v.scope}`);
    for (const k of ['window', 'document', 'parent', 'opener', 'secret', 'storage']) expect(v[k] === 'undefined', `${k} is visible in the worker (${v[k]})`);
    expect(v.idb !== 'opened', 'IndexedDB opened in the worker');
    const attrs = await page.evaluate(() => [...document.querySelectorAll('iframe')].map((f) => f.getAttribute('sandbox')));
    expect(attrs.length === 1 && attrs[0] === 'allow-scripts', `iframe sandbox attribute is ${JSON.stringify(attrs)}, not exactly "allow-scripts"`);
    const frame = await sandboxFrame(page);
    const f = await frame.evaluate(() => {
      const t = (fn) => { try { fn(); return 'allowed'; } catch (e) { return 'threw ' + e.name; } };
      return { origin: self.origin, parentDoc: t(() => parent.document.title), storage: t(() => localStorage.length), cookie: t(() => document.cookie) };
    });
    expect(f.origin === 'null', `iframe origin is ${f.origin}`);
    for (const k of ['parentDoc', 'storage', 'cookie']) expect(f[k].startsWith('threw'), `the iframe's ${k} access was ${f[k]}`);
    return `worker origin "null", ${v.href.slice(0, 10)}… script, no window/document/parent/storage; iframe sandbox="allow-scripts", parent and storage throw`;
  }],

  ['B1', 'runs_under_a_strict_host_csp', 'a host page with a strict CSP of its own (self, the bootstrap hash, blob: workers) runs sandboxes', async (env) => {
    const { page } = env;
    await page.goto(env.hostUrl + '?csp=strict');
    await page.waitForFunction(() => window.taskyonReady === true);
    await newHost(page);
    const r = await call(page, { tool: 'counter', revision: 'r1', code: COUNTER });
    const r2 = await call(page, { tool: 'counter', revision: 'r1', code: COUNTER });
    expect(r.ok && r2.ok && r2.value.count === 2, 'calls failed under the strict host CSP: ' + JSON.stringify(r.error || r2.error));
    return 'counter 1, 2 under the host CSP default-src \'none\'; script-src \'self\' <bootstrap hash> \'wasm-unsafe-eval\' blob:; worker-src blob:; connect-src \'self\'';
  }],

  ['B2', 'csp_first_and_in_attribute', 'the srcdoc starts with the meta CSP, repeated in the csp attribute, pinning the bootstrap by hash', async (env) => {
    const { page } = env;
    await newHost(page);
    await call(page, { tool: 't', revision: 'r1', code: '() => 1' });
    const info = await page.evaluate(async () => {
      const f = document.querySelector('iframe');
      const a = await window.h.assets();
      const boot = await (await fetch(new URL('../sandbox/bootstrap.js', location.href))).text();
      const d = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(boot));
      return { srcdoc: f.srcdoc, csp: f.getAttribute('csp'), want: a.csp, hash: 'sha256-' + btoa(String.fromCharCode(...new Uint8Array(d))) };
    });
    expect(info.srcdoc.startsWith('<meta http-equiv="Content-Security-Policy" content="' + info.want + '">'), 'the srcdoc does not start with the meta CSP');
    expect(info.csp === info.want, 'the csp attribute differs from the meta CSP');
    for (const part of ["default-src 'none'", "connect-src 'none'", 'worker-src blob:', `script-src '${info.hash}' blob:`]) {
      expect(info.want.includes(part), `the CSP lacks ${part}`);
    }
    expect(!/unsafe-eval|unsafe-inline/.test(info.want), 'the CSP allows eval or inline script');
    return `meta CSP first and csp attribute equal; bootstrap pinned as ${info.hash.slice(0, 20)}…`;
  }],

  ['B2', 'direct_egress_blocked', 'the 15 direct network probes (the 14 of BROWSER.md and a cross-origin worker URL) reach the canary 0 times; eval and new Function throw', async (env) => {
    const { probes, value, hits } = await runProbes(env, {});
    expect(Object.keys(probes).length === 15, `expected 15 probes, got ${Object.keys(probes).length}`);
    expect(hits.length === 0, `the canary saw ${hits.length} request(s): ${hits.map((h) => h.method + ' ' + h.url).join(', ')}`);
    const through = Object.entries(probes).filter(([, v]) => v.startsWith('completed') && !v.includes('pending'));
    expect(through.length === 0, `probes completed: ${through.map(([k, v]) => k + '=' + v).join(', ')}`);
    expect(value.eval.startsWith('blocked') && value.newFunction.startsWith('blocked'), `eval: ${value.eval}, new Function: ${value.newFunction}`);
    return `15 probes (${Object.keys(probes).join(', ')}): canary saw 0 requests; eval/new Function: ${value.eval}`;
  }],

  ['B2', 'each_csp_layer_blocks_alone', 'the meta CSP alone and the csp attribute alone (test modes) each keep the canary at 0', async (env) => {
    const out = [];
    for (const cspLayers of ['meta', 'attribute']) {
      const { probes, hits } = await runProbes(env, { cspLayers });
      expect(hits.length === 0, `with the ${cspLayers} layer alone the canary saw ${hits.map((h) => h.url).join(', ')}`);
      out.push(`${cspLayers} alone: ${Object.keys(probes).length} probes, 0 requests`);
    }
    return out.join('; ');
  }],

  ['B2', 'csp_removal_is_detected', 'the same probes with the CSP stripped (test mode) DO reach the canary: the check can fail', async (env) => {
    const { probes, hits } = await runProbes(env, { stripCsp: true });
    const paths = new Set(hits.map((h) => new URL(h.url, 'http://x').pathname.replace(/^\/p\//, '').replace(/\..*$/, '')));
    expect(hits.length > 0, 'with the CSP stripped the canary saw nothing: the probes prove nothing');
    return `without the CSP the canary saw ${hits.length} request(s) from ${paths.size} of ${Object.keys(probes).length} probes (${[...paths].sort().join(', ')})`;
  }],

  ['B3', 'forged_message_destroys', 'a message of unknown type from tool code destroys the sandbox', async (env) => {
    const { page } = env;
    await newHost(page);
    const r = await call(page, { tool: 't', revision: 'r1', code: "() => { self.postMessage({t: 'grant', origin: 'https://x'}); return new Promise(() => {}); }" });
    const e = destroyed(await hostLog(page), r.sandbox);
    expect(!r.ok && r.error.code === 'protocol_error', 'the call ended with ' + JSON.stringify(r.error || r.value));
    expect(e && e.reason === 'protocol_error', 'no destruction recorded');
    expect((await page.evaluate(() => document.querySelectorAll('iframe').length)) === 0, 'the iframe is still there');
    return `destroyed: ${e.detail}`;
  }],

  ['B3', 'forged_supervisor_report_destroys', 'tool code posting the supervisor\'s own message type (a made-up worker_error) destroys the sandbox as protocol_error, never crashed', async (env) => {
    const { page } = env;
    await newHost(page);
    const code = "() => { self.postMessage({t: 'supervisor', reason: 'worker_error', detail: 'made up at line 1'}); return new Promise(() => {}); }";
    const r = await call(page, { tool: 't', revision: 'r-forge', code });
    const e = destroyed(await hostLog(page), r.sandbox);
    expect(!r.ok && r.error.code === 'protocol_error', 'the call ended with ' + JSON.stringify(r.error || r.value));
    expect(e && e.reason === 'protocol_error' && /forged_supervisor/.test(e.detail) && !/made up/.test(e.detail),
      'recorded as ' + JSON.stringify(e));
    return `destroyed: ${e.detail}`;
  }],

  ['S2', 'page_leftover_code_cannot_speak_for_a_later_call', 'code a call leaves in its retained sandbox never sees a later call\'s message (the harness\'s own port) and cannot speak for it: its self.postMessage of a well-formed request naming the running call destroys the sandbox before anything is decided', async (env) => {
    const { page } = env;
    await page.evaluate(() => {
      if (window.h) window.h.close();
      window.decided = 0;
      window.h = new window.taskyon.SandboxHost({ tasks: async () => { window.decided++; return { ok: true, json: '[]', created: 0 }; } });
    });
    const LEAKY = `async ({mode}, context) => {
      if (mode === 'plant') {
        self.__seen = [];
        self.addEventListener('message', (e) => { self.__seen.push('capture:' + (e.data && e.data.t)); }, true);
        self.addEventListener('message', (e) => { self.__seen.push('bubble:' + (e.data && e.data.t)); });
        self.onmessage = (e) => { self.__seen.push('on:' + (e.data && e.data.t)); };
        return 'planted';
      }
      if (mode === 'look') { await new Promise((r) => setTimeout(r, 50)); return self.__seen.slice(); }
      self.postMessage({ t: 'task', id: context.callId, req: 1000, op: 'createSubtasksResult',
        json: JSON.stringify({ drafts: [{ role: 'assistant', content: { message: 'spoken for this call' } }] }) });
      return new Promise(() => {});
    }`;
    const c = (mode) => call(page, { tool: 'leaky', revision: 'r-leaky', code: LEAKY, args: { mode } });
    const planted = await c('plant'), look = await c('look'), speak = await c('speak');
    expect(planted.ok && look.ok && look.sandbox === planted.sandbox, 'the retained calls: ' + JSON.stringify([planted, look]));
    expect(Array.isArray(look.value) && look.value.length === 0, 'leftover listeners saw ' + JSON.stringify(look.value));
    const e = destroyed(await hostLog(page), speak.sandbox);
    expect(!speak.ok && speak.error.code === 'protocol_error' && e && /forged_message/.test(e.detail), 'the spoken request: ' + JSON.stringify([speak.error, e]));
    const decided = await page.evaluate(() => window.decided);
    expect(decided === 0, `the page decided ${decided} request(s) of the forged message`);
    return `listeners planted in call 1 (capture, bubble, onmessage) saw nothing of call 2; a self.postMessage naming call 3 destroyed it (${e.detail.slice(0, 60)}…), 0 decisions`;
  }],

  ['B3', 'second_port_destroys', 'a message carrying a second MessagePort destroys the sandbox', async (env) => {
    const { page } = env;
    await newHost(page, { testing: { exposeHarnessPort: true } });  // on the harness's own port: the host's validation decides
    const r = await call(page, { tool: 't', revision: 'r1', code: "() => { const c = new MessageChannel(); self.__taskyonHarnessPort.postMessage({t: 'ready'}, [c.port2]); return new Promise(() => {}); }" });
    const e = destroyed(await hostLog(page), r.sandbox);
    expect(!r.ok && e && e.reason === 'protocol_error', 'not destroyed: ' + JSON.stringify(r));
    return `destroyed: ${e.detail}`;
  }],

  ['B3', 'second_bind_destroys', 'a second handshake (another port) posted to the iframe destroys the sandbox', async (env) => {
    const { page } = env;
    await newHost(page);
    const first = await call(page, { tool: 't', revision: 'r1', code: COUNTER });
    expect(first.ok, 'first call failed');
    await page.evaluate(() => {
      const c = new MessageChannel();
      document.querySelector('iframe').contentWindow.postMessage({ t: 'bind', source: 'postMessage(1)' }, '*', [c.port2]);
    });
    await sleep(200);
    const e = destroyed(await hostLog(page), first.sandbox);
    expect(e && e.reason === 'protocol_error', 'not destroyed after a second bind');
    return `destroyed: ${e.detail}`;
  }],

  ['B3', 'window_message_destroys', 'a message from the iframe window instead of the bound port destroys the sandbox', async (env) => {
    const { page } = env;
    await newHost(page);
    const first = await call(page, { tool: 't', revision: 'r1', code: COUNTER });
    await (await sandboxFrame(page)).evaluate(() => parent.postMessage({ t: 'result', id: 1, ok: true, json: '1' }, '*'));
    await sleep(200);
    const e = destroyed(await hostLog(page), first.sandbox);
    expect(e && e.reason === 'protocol_error', 'not destroyed after a window message');
    return `destroyed: ${e.detail}`;
  }],

  ['B3', 'oversized_or_misshaped_destroys', 'an oversized result, a stale call id and an extra field on the harness\'s own port (test mode: exposed to tool code) each destroy the sandbox', async (env) => {
    const { page } = env;
    await newHost(page, { testing: { exposeHarnessPort: true } });
    const cases = {
      oversized: "() => { self.__taskyonHarnessPort.postMessage({t: 'log', id: 1, level: 'log', text: 'x'.repeat(5000)}); return new Promise(() => {}); }",
      stale_id: "() => { self.__taskyonHarnessPort.postMessage({t: 'log', id: 99, level: 'log', text: 'x'}); return new Promise(() => {}); }",
      extra_field: "() => { self.__taskyonHarnessPort.postMessage({t: 'log', id: 1, level: 'log', text: 'x', admin: true}); return new Promise(() => {}); }",
    };
    const out = [];
    for (const [name, code] of Object.entries(cases)) {
      const r = await call(page, { tool: name, revision: 'r-' + name, code });
      expect(!r.ok && r.error.code === 'protocol_error', `${name}: ${JSON.stringify(r.error || r.value)}`);
      out.push(`${name}: ${r.error.message}`);
    }
    return out.join('; ');
  }],

  ['B4', 'cpu_bound_timeout_stops_within_200ms', 'a while(true){} tool with a 200 ms timeout uses no CPU from 200 ms after its deadline (worker-thread CPU time from /proc)', async (env) => {
    const m = await spinAndMeasure(env, {}, 'timeout');
    expect(!m.r.ok && m.r.error.code === 'timeout', 'the call did not time out: ' + JSON.stringify(m.r));
    expect(m.entry && m.entry.reason === 'timeout', 'no destruction recorded');
    expect(m.busyMs <= 20, `worker threads used ${m.busyMs} ms of CPU in the ${m.windowMs} ms from deadline + 200 ms (${m.busy})`);
    const iframes = await env.page.evaluate(() => document.querySelectorAll('iframe').length);
    const warm = (await hostLog(env.page)).find((e) => e.event === 'destroyed' && e.revision === 'r-warm');
    const other = await env.page.evaluate(() => window.h2.log.find((e) => e.event === 'destroyed'));
    expect(iframes === 0 && warm && warm.reason === 'renderer_recycled' && other && other.reason === 'renderer_recycled',
      `the renderer was not recycled (${iframes} iframes left)`);
    return `destroyed ${m.destroyedAfterMs} ms after the deadline, the idle sandboxes of both hosts recycled with it; worker-thread CPU ${m.busyMs} ms in the ${m.windowMs} ms window from deadline + 200 ms`;
  }],

  ['B4', 'cpu_bound_abort_stops_within_200ms', 'an aborted while(true){} call stops using CPU within 200 ms', async (env) => {
    const m = await spinAndMeasure(env, {}, 'abort');
    expect(!m.r.ok && m.r.error.code === 'cancelled', 'the call was not aborted: ' + JSON.stringify(m.r));
    expect(m.busyMs <= 20, `worker threads used ${m.busyMs} ms of CPU in the ${m.windowMs} ms from abort + 200 ms (${m.busy})`);
    return `worker-thread CPU ${m.busyMs} ms in the ${m.windowMs} ms window from abort + 200 ms`;
  }],

  ['B4', 'terminate_alone_is_detected', 'with worker.terminate() only (test mode keeps the iframe) the measurement sees the worker still spinning: the check can fail', async (env) => {
    const m = await spinAndMeasure(env, { keepIframeOnDestroy: true }, 'timeout');
    expect(m.busyMs >= 50, `terminate() alone left only ${m.busyMs} ms of CPU in ${m.windowMs} ms: the B4 measurement would not see a running worker`);
    return `terminate() alone: worker-thread CPU ${m.busyMs} ms in ${m.windowMs} ms (still spinning; 2 shared cores)`;
  }],

  ['B4', 'iframe_removal_alone_is_detected', 'removing only the stopped sandbox\'s iframe (test mode: no renderer recycling) while other sandboxes keep the renderer leaves the worker spinning: the recycling is needed', async (env) => {
    const m = await spinAndMeasure(env, { noRecycle: true }, 'timeout');
    const iframes = await env.page.evaluate(() => document.querySelectorAll('iframe').length);
    expect(iframes === 2, `expected the two idle sandboxes' iframes, found ${iframes}`);
    expect(m.busyMs >= 50, `with its iframe removed the worker used only ${m.busyMs} ms of CPU in ${m.windowMs} ms: the renderer recycling would not be needed`);
    return `iframe removed, renderer kept by two idle sandboxes: worker-thread CPU ${m.busyMs} ms in ${m.windowMs} ms (still spinning)`;
  }],

  ['B5', 'worker_cannot_open_windows', 'the worker has no window.open; the iframe (no allow-popups) gets null from it and nothing is requested', async (env) => {
    const { page } = env;
    await newHost(page);
    canaryLog.length = 0;
    const r = await call(page, { tool: 'w', revision: 'r1', code: '() => ({open: typeof open, showModalDialog: typeof showModalDialog})' });
    expect(r.ok && r.value.open === 'undefined', 'the worker has open: ' + JSON.stringify(r.value));
    const pages = page.context().pages().length;
    const opened = await (await sandboxFrame(page)).evaluate((u) => String(window.open(u + '/p/popup', '_blank')), env.canary);
    await sleep(300);
    expect(opened === 'null' && page.context().pages().length === pages && canaryLog.length === 0, `window.open in the iframe gave ${opened}, canary ${canaryLog.length}`);
    return 'worker: typeof open is undefined; iframe: window.open gives null, no page, canary 0';
  }],

  ['B5', 'popup_refused_without_permission', 'a trusted host tool without a popup permission, or an untrusted revision with one, opens nothing even on a click', async (env) => {
    const { page } = env;
    await popupHost(page);
    const before = page.context().pages().length;
    const refused = [];
    for (const req of [{ tool: 'viewer', revision: TRUSTED, html: '<p>hi</p>' },
      { tool: 'viewer', revision: TRUSTED, url: POPUP_ORIGIN + '/page' },
      { tool: 'viewer', revision: 'sha256:untrusted', html: '<p>hi</p>', grant: true }]) {
      if (req.grant) await page.evaluate((r) => window.perms.grant(r.revision, 'custom-html'), req);
      const r = await clickOpen(page, req);
      expect(r && r.ok === false, 'opened: ' + JSON.stringify(r));
      refused.push(r.code);
    }
    await sleep(300);
    expect(page.context().pages().length === before, 'a window opened');
    expect(refused.join() === 'no_permission,no_permission,not_trusted', 'codes ' + refused.join());
    // Bad targets are refused as permissions too.
    const bad = await page.evaluate(() => ['http://x.example', 'https://x.example/', 'https://u:p@x.example', 'null', 'custom-HTML']
      .map((t) => window.perms.grant('sha256:t', t).ok));
    expect(bad.every((ok) => ok === false), 'a bad permission target was stored: ' + bad);
    return `on a click: ${refused.join(', ')}; no window; http, path, credential and other non-origin targets refused as permissions`;
  }],

  ['B5', 'popup_opens_only_on_click', 'with a permission, a popup opens from the user\'s click and never without one', async (env) => {
    const { page } = env;
    // Playwright's evaluate runs as a user gesture, so the call without a click is
    // made through CDP (userGesture false) in a freshly loaded page no gesture reached.
    const session = await page.context().newCDPSession(page);
    await page.reload();
    const before = page.context().pages().length;
    const { result } = await session.send('Runtime.evaluate', { awaitPromise: true, returnByValue: true, userGesture: false,
      expression: `(async () => {
        while (!window.taskyonReady) await new Promise((r) => setTimeout(r, 20));
        const { PopupHost, PopupPermissions } = window.taskyon.popup;
        const perms = new PopupPermissions();
        perms.grant(${JSON.stringify(TRUSTED)}, 'custom-html');
        const ph = new PopupHost({ permissions: perms, trusted: [${JSON.stringify(TRUSTED)}] });
        return { active: navigator.userActivation.isActive, r: ph.open({ tool: 'viewer', revision: ${JSON.stringify(TRUSTED)}, html: '<p>x</p>' }) };
      })()` });
    const noClick = result.value;
    await sleep(300);
    expect(noClick && noClick.active === false, 'the page had a user activation: ' + JSON.stringify(noClick));
    expect(noClick.r.ok === false && noClick.r.code === 'no_user_activation', 'without a click: ' + JSON.stringify(noClick));
    await popupHost(page, ['custom-html']);
    expect(page.context().pages().length === before, 'a window opened without a click');
    const [popup, r] = await Promise.all([page.context().waitForEvent('page', { timeout: 5000 }),
      clickOpen(page, { tool: 'viewer', revision: TRUSTED, html: '<p id="x">hello</p>' })]);
    expect(r.ok === true, 'on a click: ' + JSON.stringify(r));
    await popup.waitForLoadState();
    const log = await page.evaluate(() => window.ph.log.map((e) => e.verdict + (e.code ? ':' + e.code : '')));
    return `without a click: no_user_activation, no window; on a click: a window (${popup.url().slice(0, 5)}…); log ${log.join(' ')}`;
  }],

  ['B5', 'custom_html_popup_isolated', 'custom HTML runs in an opaque origin in a script-free host window with no opener: no host storage, no parent, no network', async (env) => {
    const { page } = env;
    await popupHost(page, ['custom-html']);
    canaryLog.length = 0;
    const html = `<p id="x">hello</p><script>
      const out = {origin: self.origin};
      try { out.storage = String(localStorage.getItem('taskyon-host-secret')); } catch (e) { out.storage = 'threw ' + e.name; }
      try { out.parent = String(parent.document.body.innerHTML.length); } catch (e) { out.parent = 'threw ' + e.name; }
      try { out.opener = String(top.opener); } catch (e) { out.opener = 'threw ' + e.name; }
      fetch(${JSON.stringify(env.canary)} + '/p/popup_fetch').then(() => { out.fetch = 'reached'; }, () => { out.fetch = 'blocked'; });
      new Image().src = ${JSON.stringify(env.canary)} + '/p/popup_img';
      window.__out = out;
    </script>`;
    const [popup] = await Promise.all([page.context().waitForEvent('page', { timeout: 5000 }),
      clickOpen(page, { tool: 'viewer', revision: TRUSTED, html })]);
    await popup.waitForLoadState();
    const outer = await popup.evaluate(() => ({ opener: window.opener === null, scripts: document.scripts.length,
      origin: self.origin, iframes: [...document.querySelectorAll('iframe')].map((f) => f.getAttribute('sandbox')) }));
    const inner = popup.frames().find((f) => f !== popup.mainFrame());
    expect(inner, 'the popup has no inner frame');
    await inner.waitForFunction(() => window.__out && window.__out.fetch, null, { timeout: 5000 });
    const out = await inner.evaluate(() => window.__out);
    await sleep(300);
    expect(outer.opener && outer.scripts === 0, 'outer window: ' + JSON.stringify(outer));
    expect(outer.iframes.length === 1 && outer.iframes[0] === 'allow-scripts', 'iframe sandbox ' + JSON.stringify(outer.iframes));
    expect(out.origin === 'null', 'custom HTML origin ' + out.origin);
    expect(out.storage.startsWith('threw') && out.parent.startsWith('threw'), 'custom HTML reached host state: ' + JSON.stringify(out));
    expect(out.fetch === 'blocked' && canaryLog.length === 0, `custom HTML reached the network: ${out.fetch}, canary ${canaryLog.length}`);
    return `window.opener null, 0 scripts in the host window; HTML origin "null", localStorage ${out.storage}, parent ${out.parent}; fetch ${out.fetch}, canary 0`;
  }],

  ['B5', 'https_origin_popup_has_no_opener', 'a permitted exact HTTPS origin opens on a click with no opener and none of the host\'s storage; another origin of the same tool is refused', async (env) => {
    const { page } = env;
    await page.context().route(POPUP_ORIGIN + '/**', (route) => route.fulfill({ status: 200, contentType: 'text/html',
      body: '<!doctype html><p>permitted origin</p>' }));
    await popupHost(page, [POPUP_ORIGIN]);
    const other = await clickOpen(page, { tool: 'viewer', revision: TRUSTED, url: 'https://other.example.test/' });
    expect(other.ok === false && other.code === 'no_permission', 'another origin: ' + JSON.stringify(other));
    const [popup, r] = await Promise.all([page.context().waitForEvent('page', { timeout: 5000 }),
      clickOpen(page, { tool: 'viewer', revision: TRUSTED, url: POPUP_ORIGIN + '/page?q=1' })]);
    expect(r.ok === true, JSON.stringify(r));
    await popup.waitForLoadState();
    const seen = await popup.evaluate(() => ({ opener: window.opener === null, origin: self.origin,
      storage: localStorage.getItem('taskyon-host-secret'), referrer: document.referrer }));
    expect(seen.opener && seen.origin === POPUP_ORIGIN && seen.storage === null && seen.referrer === '', JSON.stringify(seen));
    return `${POPUP_ORIGIN}: opener null, origin its own, host secret not in its storage, no referrer; other.example.test refused`;
  }],

  ['B5', 'opener_is_detectable', 'a window opened without noopener (the check\'s own control) DOES have an opener: the measurement above can fail', async (env) => {
    const { page } = env;
    await page.context().route(POPUP_ORIGIN + '/**', (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<p>x</p>' }));
    await page.evaluate((u) => {
      const b = document.createElement('button'); b.id = 'raw'; b.textContent = 'raw';
      b.onclick = () => { window.open(u, '_blank'); };
      document.body.append(b);
    }, POPUP_ORIGIN + '/raw');
    const [popup] = await Promise.all([page.context().waitForEvent('page', { timeout: 5000 }), page.click('#raw')]);
    await popup.waitForLoadState();
    const hasOpener = await popup.evaluate(() => window.opener !== null);
    expect(hasOpener, 'without noopener the popup still had no opener: the check cannot tell');
    return 'window.open without noopener: window.opener is set in the popup';
  }],

  ['S1', 'retained_per_revision_and_session', 'state survives calls of one (revision, session), never another session or revision', async (env) => {
    const { page } = env;
    await newHost(page);
    const c = (revision, session) => call(page, { tool: 'counter', revision, session, code: COUNTER });
    const a1 = await c('r1', 'alice'), a2 = await c('r1', 'alice'), b1 = await c('r1', 'bob'), r2 = await c('r2', 'alice'), a3 = await c('r1', 'alice');
    const counts = [a1, a2, b1, r2, a3].map((r) => r.ok ? r.value.count : r.error.code);
    expect(JSON.stringify(counts) === '[1,2,1,1,3]', `counts ${JSON.stringify(counts)}, want [1,2,1,1,3]`);
    expect(a1.sandbox === a2.sandbox && a2.sandbox === a3.sandbox && b1.sandbox !== a1.sandbox && r2.sandbox !== a1.sandbox, 'sandbox ids do not follow (revision, session)');
    return 'alice r1: 1, 2, 3 in one sandbox; bob r1: 1; alice r2: 1 (own sandboxes)';
  }],

  ['S2', 'calls_serialized_with_own_context', 'concurrent calls to one sandbox run one at a time, each with its own context; a saved context is refused later', async (env) => {
    const { page } = env;
    await newHost(page);
    const code = `async ({n}, context) => {
      globalThis.trace = (globalThis.trace || []); trace.push('start' + n);
      await new Promise((r) => setTimeout(r, 50)); trace.push('end' + n);
      if (n === 1) globalThis.saved = context;
      let stale = 'none';
      if (n === 3) { try { await saved.fetch('https://example.com/'); stale = 'allowed'; } catch (e) { stale = e.code; } }
      return {trace: trace.slice(), own: context.callId, same: globalThis.fetch === context.fetch, stale};
    }`;
    const rs = await page.evaluate((code) => Promise.all([1, 2, 3].map((n) => window.h.call({ tool: 's', revision: 'r1', code, args: { n } }))), code);
    expect(rs.every((r) => r.ok), 'a call failed: ' + JSON.stringify(rs.map((r) => r.error)));
    const trace = rs[2].value.trace.join(',');
    expect(trace === 'start1,end1,start2,end2,start3,end3', `interleaved: ${trace}`);
    expect(new Set(rs.map((r) => r.value.own)).size === 3, 'calls shared a context');
    expect(rs.every((r) => r.value.same), 'global fetch is not the call\'s context.fetch (M2)');
    expect(rs[2].value.stale === 'call_ended', `a saved context's fetch was ${rs[2].value.stale}`);
    return `trace ${trace}; three contexts; globalThis.fetch === context.fetch; saved context: ${rs[2].value.stale}`;
  }],

  ['S3', 'revision_change_destroys_old_sandbox', 'activating another revision destroys the old revision\'s sandboxes only', async (env) => {
    const { page } = env;
    await newHost(page);
    const a = await call(page, { tool: 'counter', revision: 'r1', code: COUNTER });
    const other = await call(page, { tool: 'other', revision: 'o1', code: COUNTER });
    await page.evaluate(() => window.h.activate('counter', 'r2'));
    const log = await hostLog(page);
    const e = destroyed(log, a.sandbox);
    expect(e && e.reason === 'superseded', 'the old revision\'s sandbox was not destroyed: ' + JSON.stringify(log));
    expect(!destroyed(log, other.sandbox), 'another tool\'s sandbox was destroyed');
    const b = await call(page, { tool: 'counter', revision: 'r2', code: COUNTER });
    expect(b.ok && b.value.count === 1, 'the new revision saw old state');
    return `r1's sandbox destroyed (superseded), other tool kept, r2 starts at 1`;
  }],

  ['S4', 'timeout_and_boundary_failure_destroy', 'a timeout and a worker crash each destroy the sandbox; a thrown error keeps it', async (env) => {
    const { page } = env;
    await newHost(page);
    const t = await call(page, { tool: 't', revision: 'r-t', code: '() => new Promise(() => {})', timeoutMs: 100 });
    const c = await call(page, { tool: 'c', revision: 'r-c', code: "() => { setTimeout(() => { throw new Error('boom'); }); return new Promise(() => {}); }" });
    const k1 = await call(page, { tool: 'k', revision: 'r-k', code: "() => { throw Object.assign(new Error('no'), {code: 'mine'}); }" });
    const k2 = await call(page, { tool: 'k', revision: 'r-k', code: "() => { throw Object.assign(new Error('no'), {code: 'mine'}); }" });
    const before = (await hostLog(page)).length;
    const bad = await page.evaluate(() => window.h.call({ tool: 'k', revision: 'r-k', code: '() => 1', args: { n: 1n } }));
    const log = await hostLog(page);
    expect(bad.error?.code === 'bad_request' && log.length === before, 'arguments that are not JSON: ' + JSON.stringify(bad));
    expect(t.error?.code === 'timeout' && destroyed(log, t.sandbox)?.reason === 'timeout', 'timeout: ' + JSON.stringify(t));
    expect(c.error?.code === 'crashed' && destroyed(log, c.sandbox)?.reason === 'crashed', 'crash: ' + JSON.stringify(c));
    expect(k1.error?.code === 'mine' && k1.sandbox === k2.sandbox && !destroyed(log, k1.sandbox), 'a thrown error destroyed the sandbox');
    return `timeout -> destroyed (timeout); uncaught error in the worker -> destroyed (crashed: ${destroyed(log, c.sandbox).detail}); thrown error -> tool error, sandbox kept; non-JSON arguments -> bad_request, nothing created or destroyed`;
  }],

  ['S5', 'abort_or_terminate_destroys_sandbox', 'the caller\'s abort, terminate() and closeSession() each destroy the sandbox', async (env) => {
    const { page } = env;
    await newHost(page);
    const a = await page.evaluate(() => {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 50);
      return window.h.call({ tool: 'a', revision: 'r-a', code: '() => new Promise(() => {})', signal: ac.signal });
    });
    const b = await call(page, { tool: 'b', revision: 'r-b', code: COUNTER });
    await page.evaluate(() => window.h.terminate('r-b'));
    const b2 = await call(page, { tool: 'b', revision: 'r-b', code: COUNTER });
    const s1 = await call(page, { tool: 'b', revision: 'r-b', session: 'alice', code: COUNTER });
    const closed = await page.evaluate(() => window.h.closeSession('alice'));
    const s2 = await call(page, { tool: 'b', revision: 'r-b', session: 'alice', code: COUNTER });
    const log = await hostLog(page);
    expect(closed === 1 && destroyed(log, s1.sandbox)?.reason === 'session_closed' && s2.value.count === 1 && !destroyed(log, b2.sandbox),
      'closeSession did not destroy exactly the session\'s sandbox');
    expect(a.error?.code === 'cancelled' && destroyed(log, a.sandbox)?.reason === 'cancelled', 'abort: ' + JSON.stringify(a));
    expect(destroyed(log, b.sandbox)?.reason === 'terminated' && b2.sandbox !== b.sandbox && b2.value.count === 1, 'terminate did not destroy');
    return 'abort -> destroyed (cancelled); terminate -> destroyed (terminated), next call in a fresh sandbox; closeSession -> that session\'s sandbox destroyed (session_closed), others kept';
  }],

  ['S6', 'disposable_call_fresh_and_destroyed', 'a disposable call gets a fresh sandbox, destroyed after it', async (env) => {
    const { page } = env;
    await newHost(page);
    const kept = await call(page, { tool: 'counter', revision: 'r1', code: COUNTER });
    const d1 = await call(page, { tool: 'counter', revision: 'r1', code: COUNTER, disposable: true });
    const d2 = await call(page, { tool: 'counter', revision: 'r1', code: COUNTER, disposable: true });
    const log = await hostLog(page);
    expect(d1.value.count === 1 && d2.value.count === 1, 'a disposable call saw state');
    expect(destroyed(log, d1.sandbox)?.reason === 'disposable' && destroyed(log, d2.sandbox)?.reason === 'disposable', 'not destroyed');
    expect(!destroyed(log, kept.sandbox) && d1.sandbox !== kept.sandbox, 'the retained sandbox was used or destroyed');
    return 'two disposable calls: count 1 each, each sandbox destroyed (disposable); the retained one untouched';
  }],

  ['M13', 'mediated_fetch_refused_without_policy', 'fetch goes to the host page, which refuses it (policy_unavailable) as a tool error; nothing reaches the network', async (env) => {
    const { page } = env;
    await newHost(page);
    canaryLog.length = 0;
    const r = await call(page, { tool: 'f', revision: 'r1', code: `async ({u}) => { try { await fetch(u); return 'fetched'; } catch (e) { return e.name + ':' + e.code; } }`, args: { u: env.canary + '/p/mediated' } });
    expect(r.ok && r.value === 'CapabilityError:policy_unavailable', 'got ' + JSON.stringify(r.value ?? r.error));
    expect(canaryLog.length === 0, 'the canary was reached');
    return 'fetch -> CapabilityError policy_unavailable, canary 0, sandbox kept';
  }],

  ['M13', 'request_headers_checked_before_policy', 'forbidden request headers (Cookie, Origin, Sec-*, Host, Proxy-*), a CR/LF value, a non-token name and CONNECT are refused (policy_blocked / invalid_request) before the page\'s decide is asked; the sandbox is kept', async (env) => {
    const { page } = env;
    await page.evaluate(() => {
      if (window.h) window.h.close();
      window.asked = [];
      window.h = new window.taskyon.SandboxHost({ decide: async (r) => { window.asked.push(r.headers); return { allow: false, code: 'refused_by_check', message: 'x' }; },
        testing: { exposeHarnessPort: true } });
    });
    canaryLog.length = 0;
    const r = await call(page, { tool: 'f', revision: 'r-hdr', args: { u: env.canary + '/p/hdr' }, code: `async ({u}, context) => {
      const out = {};
      for (const h of ['Cookie', 'Origin', 'Sec-Fetch-Site', 'Host', 'Proxy-Authorization', 'Content-Length', 'X-Fine']) {
        try { await fetch(u, { headers: { [h]: 'v' } }); out[h] = 'fetched'; } catch (e) { out[h] = e.code; }
      }
      // Raw requests past the harness's Headers, on its own port (test mode): answered, not fatal.
      const port = self.__taskyonHarnessPort;
      const raw = (req, method, headers) => new Promise((resolve) => {
        port.addEventListener('message', function on(e) {
          if (e.data && e.data.t === 'fetch_result' && e.data.req === req) { port.removeEventListener('message', on); resolve(e.data.code); }
        });
        port.postMessage({ t: 'fetch', id: context.callId, req, url: u, method, headers, body: null });
      });
      out.crlf = await raw(1001, 'GET', [['x-a', 'b\\r\\nCookie: c']]);
      out.name = await raw(1002, 'GET', [['bad name', 'v']]);
      out.connect = await raw(1003, 'CONNECT', []);
      return out;
    }` });
    expect(r.ok, 'the call failed: ' + JSON.stringify(r.error));
    const v = r.value;
    const blocked = ['Cookie', 'Origin', 'Sec-Fetch-Site', 'Host', 'Proxy-Authorization', 'Content-Length'];
    expect(blocked.every((h) => v[h] === 'policy_blocked') && v.connect === 'policy_blocked', 'got ' + JSON.stringify(v));
    expect(v.crlf === 'invalid_request' && v.name === 'invalid_request' && v['X-Fine'] === 'refused_by_check', 'got ' + JSON.stringify(v));
    const asked = await page.evaluate(() => window.asked);
    expect(asked.length === 1, 'decide was asked ' + asked.length + ' times: ' + JSON.stringify(asked));
    expect(canaryLog.length === 0, 'the canary was reached');
    return `${blocked.length} forbidden headers and CONNECT -> policy_blocked, CR/LF value and non-token name -> invalid_request, decide asked once (X-Fine only), canary 0`;
  }],

  ['M2', 'global_fetch_is_context_fetch', 'global fetch is the call\'s context.fetch: both go to the host page and get its decision', async (env) => {
    const { page } = env;
    await newHost(page);
    canaryLog.length = 0;
    const r = await call(page, { tool: 'f', revision: 'r1', args: { u: env.canary + '/p/m2' }, code: `async ({u}, context) => {
      const codes = [];
      for (const f of [fetch, globalThis.fetch, self.fetch, context.fetch]) { try { await f(u); codes.push('fetched'); } catch (e) { codes.push(e.code); } }
      return {same: globalThis.fetch === context.fetch, codes};
    }` });
    expect(r.ok && r.value.same, 'globalThis.fetch !== context.fetch');
    expect(r.value.codes.every((c) => c === 'policy_unavailable'), 'codes ' + r.value.codes);
    expect(canaryLog.length === 0, 'the canary was reached');
    return 'fetch, globalThis.fetch, self.fetch and context.fetch are one function; all four refused by the host (policy_unavailable)';
  }],

  ['M6', 'direct_mode_public_address_space', 'even a policy that allows everything cannot reach a loopback server: direct mode uses targetAddressSpace "public"', async (env) => {
    const { page } = env;
    await page.evaluate(() => {
      if (window.h) window.h.close();
      window.h = new window.taskyon.SandboxHost({ decide: async () => ({ allow: true }) });
    });
    canaryLog.length = 0;
    const r = await call(page, { tool: 'f', revision: 'r1', code: `async ({u}) => { try { const r = await fetch(u); return 'fetched ' + r.status; } catch (e) { return e.name + ':' + e.code; } }`, args: { u: env.canary + '/p/allowed' } });
    expect(r.ok && r.value === 'CapabilityError:network_error', 'got ' + JSON.stringify(r.value ?? r.error));
    expect(canaryLog.length === 0, `the canary saw ${canaryLog.length} request(s)`);
    return 'allow-all decider, loopback target: refused by Chromium before sending (network_error), canary 0';
  }],

  ['M6', 'address_space_removal_is_detected', 'the same allow-all fetch without targetAddressSpace (test mode) DOES reach the loopback canary: the check can fail', async (env) => {
    const { page } = env;
    await directHost(page, {});
    canaryLog.length = 0;
    const r = await call(page, { tool: 'f', revision: 'r1', code: FETCH_CODE, args: { u: env.canary + '/p/allowed' } });
    expect(canaryLog.length > 0, 'without the address space the canary still saw nothing: the check proves nothing');
    return `without targetAddressSpace: ${r.value}, canary saw ${canaryLog.length} request(s)`;
  }],

  ['M9', 'no_ambient_credentials', 'a mediated request carries none of the host page\'s cookies', async (env) => {
    const { page } = env;
    await page.evaluate(() => { document.cookie = 'hostsession=secret; path=/; SameSite=Lax'; });
    const control = await page.evaluate(async (u) => { await fetch(u, { credentials: 'include' }).catch(() => {}); return true; }, env.canary + '/p/control');
    const withCookie = canaryLog.filter((h) => h.url === '/p/control' && h.cookie && h.cookie.includes('hostsession=secret')).length;
    expect(control && withCookie === 1, 'the control request (credentials: include) did not carry the cookie: the check would prove nothing');
    await directHost(page, {});
    canaryLog.length = 0;
    const r = await call(page, { tool: 'f', revision: 'r1', code: FETCH_CODE, args: { u: env.canary + '/p/mediated' } });
    const hit = canaryLog.find((h) => h.url === '/p/mediated');
    expect(r.ok && hit, 'the mediated request did not arrive: ' + JSON.stringify(r.value ?? r.error));
    expect(hit.cookie === null, `the mediated request carried cookies: ${hit.cookie}`);
    return `the page's own request carried the cookie, the mediated one none (${r.value})`;
  }],

  ['M10', 'no_automatic_redirects', 'a redirect is refused as a tool error and its target never requested', async (env) => {
    const { page } = env;
    await directHost(page, {});
    canaryLog.length = 0;
    const r = await call(page, { tool: 'f', revision: 'r1', code: FETCH_CODE, args: { u: env.canary + '/m/redirect' } });
    await sleep(100);
    expect(r.ok && r.value === 'CapabilityError:redirect_not_followed', 'got ' + JSON.stringify(r.value ?? r.error));
    expect(!canaryLog.some((h) => h.url.startsWith('/m/after-redirect')), 'the redirect target was requested');
    return 'a 302 -> CapabilityError redirect_not_followed; the target never requested';
  }],

  ['M11', 'timeouts_enforced', 'a response that never ends is cut at the fetch timeout, a tool error, the sandbox kept', async (env) => {
    const { page } = env;
    await directHost(page, { timeoutMs: 300 });
    const r = await call(page, { tool: 'f', revision: 'r1', code: FETCH_CODE, args: { u: env.canary + '/m/slow' } });
    expect(r.ok && r.value === 'CapabilityError:timeout', 'got ' + JSON.stringify(r.value ?? r.error));
    return 'an endless response -> CapabilityError timeout after 300 ms; the call went on';
  }],

  ['M12', 'response_size_limits_enforced', 'a response larger than the cap is refused as a tool error', async (env) => {
    const { page } = env;
    await directHost(page, { maxResponseBytes: 1 << 20 });
    const r = await call(page, { tool: 'f', revision: 'r1', code: FETCH_CODE, args: { u: env.canary + '/m/big' } });
    expect(r.ok && r.value === 'CapabilityError:response_too_large', 'got ' + JSON.stringify(r.value ?? r.error));
    return 'a 4 MiB response with a 1 MiB cap -> CapabilityError response_too_large';
  }],

  ['B8', 'strict_granted_passes_the_proxy', 'in strict mode a granted request goes through tycli serve\'s /v1/fetch and is audited there; the page\'s decide is never asked and no request leaves the page for the target', async (env) => {
    const { page } = env;
    const s = await strictEnv();
    await strictHost(page, s);
    canaryLog.length = 0; strict.upstreamLog.length = 0;
    const before = audit().length;
    const rev = s.revisions.getter;
    const r = await call(page, { tool: 'getter', revision: rev, code: STRICT_CODE, args: { u: s.origin + '/granted?x=1' } });
    expect(r.ok && r.value.status === 200 && JSON.parse(r.value.body).path === '/granted?x=1', 'the call gave ' + JSON.stringify(r.value ?? r.error));
    const rows = audit().slice(before);
    expect(rows.length === 1 && rows[0].capability === 'fetch' && rows[0].verdict === 'allow' && rows[0].revision === rev && rows[0].target === s.origin,
      'audit rows ' + JSON.stringify(rows));
    expect(strict.upstreamLog.length === 1 && strict.upstreamLog[0].origin === null && !/Chrom/i.test(strict.upstreamLog[0].ua) && strict.upstreamLog[0].authorization === null,
      'the upstream saw ' + JSON.stringify(strict.upstreamLog));
    const decided = await page.evaluate(() => window.decided);
    expect(decided === 0 && canaryLog.length === 0, `decide asked ${decided} times, canary ${canaryLog.length}`);
    // A null-body status (204) reaches the tool as a Response too.
    const empty = await call(page, { tool: 'getter', revision: rev, code: STRICT_CODE, args: { u: s.origin + '/no-content' } });
    expect(empty.ok && empty.value.status === 204 && empty.value.body === '', '204 gave ' + JSON.stringify(empty.value ?? empty.error));
    return `200 (and a 204) from ${s.origin} via /v1/fetch; audit: fetch allow under ${rev.slice(0, 15)}…; upstream saw 1 request, from tycli (no Origin, no browser UA, no token); decide asked 0 times; canary 0`;
  }],

  ['B8', 'strict_ungranted_refused', 'in strict mode the server refuses what no grant allows (a write, another revision, a loopback target) although the page\'s decide allows all; nothing reaches the target', async (env) => {
    const { page } = env;
    const s = await strictEnv();
    await strictHost(page, s);
    canaryLog.length = 0; strict.upstreamLog.length = 0;
    const before = audit().length;
    const codes = [];
    for (const [tool, args] of [['getter', { u: s.origin + '/write', method: 'POST' }], ['other', { u: s.origin + '/other' }],
      ['getter', { u: env.canary + '/p/strict' }]]) {
      const r = await call(page, { tool, revision: s.revisions[tool], code: STRICT_CODE, args });
      expect(r.ok && r.value.error, `${tool} ${JSON.stringify(args)} was not refused: ` + JSON.stringify(r.value ?? r.error));
      codes.push(r.value.error);
    }
    expect(codes.join() === 'CapabilityError:denied,CapabilityError:denied,CapabilityError:policy_blocked', 'codes ' + codes.join());
    const rows = audit().slice(before);
    expect(rows.length === 3 && rows.every((x) => x.verdict !== 'allow'), 'audit rows ' + JSON.stringify(rows));
    const decided = await page.evaluate(() => window.decided);
    expect(strict.upstreamLog.length === 0 && canaryLog.length === 0 && decided === 0, `upstream ${strict.upstreamLog.length}, canary ${canaryLog.length}, decide ${decided}`);
    return `${codes.join(', ')}; 3 audit rows, none allow; upstream 0, canary 0, decide 0`;
  }],

  ['B8', 'strict_needs_the_token_and_same_origin', 'a wrong token is refused by the server (unauthorized), and a page of another origin cannot use the proxy directly (H2 refuses its preflight)', async (env) => {
    const { page } = env;
    const s = await strictEnv();
    strict.upstreamLog.length = 0;
    await strictHost(page, { ...s, token: '0'.repeat(64) });
    const wrong = await call(page, { tool: 'getter', revision: s.revisions.getter, code: STRICT_CODE, args: { u: s.origin + '/x' } });
    await strictHost(page, s, `http://127.0.0.1:${s.port}/v1/fetch`);
    const cross = await call(page, { tool: 'getter', revision: s.revisions.getter, code: STRICT_CODE, args: { u: s.origin + '/x' } });
    expect(wrong.ok && wrong.value.error === 'CapabilityError:unauthorized', 'wrong token: ' + JSON.stringify(wrong.value ?? wrong.error));
    expect(cross.ok && cross.value.error === 'CapabilityError:egress_unavailable', 'cross-origin: ' + JSON.stringify(cross.value ?? cross.error));
    expect(strict.upstreamLog.length === 0, 'the upstream saw ' + strict.upstreamLog.length);
    return `wrong token: ${wrong.value.error}; from the page's origin straight to the server: ${cross.value.error}; upstream 0`;
  }],

  ['B8', 'page_served_by_tycli_serve', 'tycli serve --page serves the host page under /page/<token>/: a strict host there needs no relay, and tool code sees nothing of the token in the page\'s URL', async (env) => {
    const { page } = env;
    const s = await strictEnv();
    await page.goto(s.pageUrl);
    await page.waitForFunction(() => window.taskyonReady === true);
    expect(await page.evaluate((t) => location.pathname.includes(t), s.token), 'the page URL does not carry the token: ' + s.pageUrl);
    await strictHost(page, s, '/v1/fetch');
    strict.upstreamLog.length = 0;
    const r = await call(page, { tool: 'getter', revision: s.revisions.getter, code: STRICT_CODE, args: { u: s.origin + '/served-page' } });
    expect(r.ok && r.value.status === 200 && JSON.parse(r.value.body).path === '/served-page', 'the call gave ' + JSON.stringify(r.value ?? r.error));
    const PEEK = `() => JSON.stringify({ href: String(self.location), origin: self.origin, name: self.name,
      doc: typeof document === 'object' ? [document.URL, document.baseURI, document.referrer] : null })`;
    const seen = await call(page, { tool: 'other', revision: s.revisions.other, code: PEEK, args: {} });
    expect(seen.ok && typeof seen.value === 'string', 'the peek gave ' + JSON.stringify(seen.error));
    expect(!seen.value.includes(s.token) && !seen.value.includes('/page/'), 'tool code saw the page URL: ' + seen.value);
    expect(strict.upstreamLog.length === 1, 'the upstream saw ' + strict.upstreamLog.length);
    return `the page at /page/<token>/tests/page.html, strict fetch through its own origin's /v1/fetch: 200; tool code saw ${seen.value}`;
  }],

  ['B8', 'page_runs_in_the_server_store', 'a page using the server\'s store (server.js ServerRuns) runs the code the server pinned; the tool\'s storage and tree requests are the server\'s decisions (storage denied until `tycli grant storage`, subtasks compiled as children of the server\'s call task); call, subtasks and result (runtime browser) are in the server\'s store, so tycli task tree, audit and sandbox log show what the browser did; a run takes no request after its result', async (env) => {
    const { page } = env;
    const s = await strictEnv();
    const PLANNER = `async ({n}, context) => {
  const out = {};
  try { await context.storage.set('k', {n}); out.set = 'ok'; } catch (e) { out.set = e.code; }
  try { out.got = await context.storage.get('k'); } catch (e) { out.got = e.code; }
  const made = await context.createSubtasksResult([{role: 'assistant', content: {message: 'from the browser ' + n}}]);
  out.made = made.length + ':' + String(made[0].id).split(':')[0];
  out.resolved = Object.keys(await context.resolveInvocation('planner')).sort().join();
  console.log('planner ran ' + n);
  return out;
}`;
    const def = { name: 'planner', description: 'a browser run', parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
      execution: 'sandboxed-code', runtime: 'javascript', code: PLANNER };
    const stuck = { ...def, name: 'stuckrun', code: '() => { while (true) {} }', parameters: { type: 'object' } };
    const r = await page.evaluate(async ({ token, def, stuck }) => {
      const t = window.taskyon;
      const install = async (d) => (await fetch('/serve/v1/tools', { method: 'POST', headers: { Authorization: 'Bearer ' + token }, body: JSON.stringify(d) })).json();
      const revision = (await install(def)).revision;
      const stuckRevision = (await install(stuck)).revision;
      window.__token = token;
      const server = new t.server.ServerRuns({ token, base: '/serve' });
      if (window.h) window.h.close();
      const host = new t.SandboxHost({ egress: server.egress(), ...server.capabilities(), onRecord: server.sandboxLog });
      window.h = host;
      const first = await server.call(host, { tool: 'planner', args: { n: 1 } });
      const refusedArgs = await server.call(host, { tool: 'planner', args: { n: 'x' } });
      return { revision, stuckRevision, first, refusedArgs };
    }, { token: s.token, def, stuck });
    expect(r.first.ok && r.first.value.set === 'denied' && r.first.value.got === 'denied', 'first run (no storage grant): ' + JSON.stringify(r.first.value ?? r.first.error));
    expect(r.first.value.made === '1:hmac-sha256' && r.first.value.resolved === 'settings,tool', 'tree requests: ' + JSON.stringify(r.first.value));
    expect(!r.refusedArgs.ok && r.refusedArgs.error.code === 'invalid_arguments' && r.refusedArgs.logs.length === 0, 'bad arguments ran: ' + JSON.stringify(r.refusedArgs));
    s.cli(['grant', 'storage', 'planner']);
    const second = await page.evaluate(async () => {
      const server = new window.taskyon.server.ServerRuns({ token: window.__token, base: '/serve' });
      return server.call(window.h, { tool: 'planner', args: { n: 2 } });
    });
    expect(second.ok && second.value.set === 'ok' && second.value.got?.n === 2, 'second run (granted): ' + JSON.stringify(second.value ?? second.error));
    // What the CLI sees in the server's store.
    const tree = s.cli(['task', 'tree', second.task])[0];
    const result = tree.children.find((c) => c.role === 'tool');
    const made = tree.children.find((c) => c.createdBy);
    expect(tree.id === second.task && tree.toolRevision === r.revision && tree.state === 'Completed', 'the stored call: ' + JSON.stringify(tree).slice(0, 300));
    expect(result && result.content.toolResult.runtime.kind === 'browser' && /Chrom/.test(result.content.toolResult.runtime.version) &&
      result.content.toolResult.result.got.n === 2 && result.content.toolResult.logs[0].text === 'planner ran 2', 'the stored result: ' + JSON.stringify(result));
    expect(made && made.content.message === 'from the browser 2' && made.createdBy.task === second.task, 'the stored subtask: ' + JSON.stringify(made));
    const rows = audit().filter((x) => x.revision === r.revision).map((x) => `${x.capability}:${x.verdict}`);
    expect(['storage.set:deny', 'storage.set:allow', 'createSubtasksResult:allow', 'resolveInvocation:allow'].every((x) => rows.includes(x)), 'server audit ' + rows.join());
    // A stuck run: the page's sandbox is stopped at the timeout; the server stores the timeout and logs the destruction.
    const stuckRun = await page.evaluate(async ({ token, ended }) => {
      const server = new window.taskyon.server.ServerRuns({ token, base: '/serve' });
      window.h.close();
      window.h = new window.taskyon.SandboxHost({ egress: server.egress(), ...server.capabilities(), onRecord: server.sandboxLog });
      const r = await server.call(window.h, { tool: 'stuckrun', timeoutMs: 300 });
      const late = await fetch(`/serve/v1/runs/${encodeURIComponent(ended)}/requests`, { method: 'POST', headers: { Authorization: 'Bearer ' + token },
        body: JSON.stringify({ op: 'storage.get', args: { key: 'k' } }) });
      return { r, late: late.status };
    }, { token: s.token, ended: second.run });
    expect(!stuckRun.r.ok && stuckRun.r.error.code === 'timeout' && stuckRun.r.record.status === 'timeout', 'the stuck run: ' + JSON.stringify(stuckRun.r));
    expect(stuckRun.late === 404, 'a request under a run whose result is stored: HTTP ' + stuckRun.late);
    let logged = [];
    for (let i = 0; i < 40 && !logged.length; i++, await sleep(100)) logged = s.cli(['sandbox', 'log']).filter((x) => x.revision === r.stuckRevision);
    expect(logged.length === 1 && /^browser: timeout: sandbox \d+, session default/.test(logged[0].reason), 'the server\'s sandbox log: ' + JSON.stringify(logged));
    const stuckTask = s.cli(['task', 'show', stuckRun.r.task]);
    expect(stuckTask.state === 'Error' && stuckTask.runtime.kind === 'browser', 'the stuck call as stored: ' + JSON.stringify(stuckTask));
    return `planner: storage denied, then allowed after tycli grant storage; task tree shows the call ${second.task.slice(0, 19)}… with its subtask and result (runtime ${result.content.toolResult.runtime.version}); server audit ${rows.length} rows; stuck run stored as timeout, sandbox log "${logged[0].reason.slice(0, 40)}…"`;
  }],

  ['B8', 'page_runs_record_the_hosts_word', 'what a run records is the host\'s word where the host knows: a tool that throws an error whose code is "cancelled" or "timeout" is stored as tool_error (the sandbox was kept), logs past the server\'s bounds are cut by the page with a note, and a result the server cannot take is stored as that refusal, never left to expire as a timeout', async (env) => {
    const { page } = env;
    const s = await strictEnv();
    const tools = {
      liar: '({code}) => { const e = new Error("not really"); e.code = code; throw e; }',
      chatty: '() => { const l = "\\u0001".repeat(4000); for (let i = 0; i < 900; i++) console.log(l); return "fine"; }',
      deep: '() => { let v = []; for (let i = 1; i < 512; i++) v = [v]; return v; }',
    };
    const r = await page.evaluate(async ({ token, tools }) => {
      const t = window.taskyon;
      for (const [name, code] of Object.entries(tools)) {
        await fetch('/serve/v1/tools?activate=1', { method: 'POST', headers: { Authorization: 'Bearer ' + token },
          body: JSON.stringify({ name, description: 'record check', parameters: { type: 'object' }, execution: 'sandboxed-code', runtime: 'javascript', code }) });
      }
      const server = new t.server.ServerRuns({ token, base: '/serve' });
      if (window.h) window.h.close();
      window.h = new t.SandboxHost({ egress: server.egress(), ...server.capabilities(), onRecord: server.sandboxLog });
      const out = {};
      for (const code of ['cancelled', 'timeout']) out[code] = await server.call(window.h, { tool: 'liar', args: { code } });
      out.chatty = await server.call(window.h, { tool: 'chatty', timeoutMs: 5000 });
      out.deep = await server.call(window.h, { tool: 'deep', timeoutMs: 5000 });
      // Only what the check reads (a 511-deep value does not cross back to the test).
      return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, { ok: v.ok, task: v.task,
        record: { status: v.record.status, error: v.record.error, logs: v.record.logs && v.record.logs.map((l) => ({ text: l.text.slice(0, 120) })) } }]));
    }, { token: s.token, tools });
    for (const code of ['cancelled', 'timeout']) {
      expect(r[code].record.status === 'tool_error' && s.cli(['task', 'show', r[code].task]).state === 'Error', `a tool's ${code} code: ` + JSON.stringify(r[code].record));
    }
    expect(r.chatty.ok && r.chatty.record.status === 'ok' && r.chatty.record.logs.length <= 1000 && /dropped by the page/.test(r.chatty.record.logs.at(-1).text),
      'chatty: ' + JSON.stringify({ status: r.chatty.record.status, error: r.chatty.record.error, logs: r.chatty.record.logs?.length }));
    expect(r.deep.record.status === 'tool_error' && /refused by the server|cannot be stored/.test(r.deep.record.error.message), 'deep: ' + JSON.stringify(r.deep.record));
    return `thrown codes cancelled/timeout stored as tool_error; ${r.chatty.record.logs.length} log entries kept of 900 (cut by the page); a 511-deep result: ${r.deep.record.error.message.slice(0, 70)}…`;
  }],
];

// Browser Python (B6, B7): python_checks.mjs; a fifth element names a group that shares one page.
checks.push(...pythonChecks({ expect, hostLog, destroyed, canaryLog, sleep, rendererCpu, cpuDelta }));

// The wasm core in the host page (issue 14): its policy and ids against native (wasm_checks.mjs); SKIP while unbuilt.
checks.push(...wasmChecks({ expect, canaryLog, Skip, tycli: TYCLI, call }));

// The browser store (store.js): grants, secrets, re-hashed revisions, records across a reload.
checks.push(...storeChecks({ expect, canaryLog, Skip, call }));

// The tree capabilities (tasks.js): createSubtasksResult and resolveInvocation by the wasm task compiler.
checks.push(...taskChecks({ expect, Skip }));

// Contracts of the CLI's runtimes, named as `tycli diagnostics` names them: no browser
// counterpart, so each reports SKIP with the reason instead of being left out unsaid.
for (const [id, name, why] of [
  ['N1', 'node_is_the_default_runtime', 'the browser runs JavaScript in its own worker, not in Node or Deno (tycli diagnostics checks it)'],
  ['N2', 'deno_only_when_selected_and_installed', 'there is no Deno in the browser (tycli diagnostics checks it)'],
  ['N4', 'deno_has_no_permissions', 'there is no Deno in the browser (tycli diagnostics checks it)'],
  ['P1', 'python_offered_only_when_detected', 'native Python is the CLI\'s; browser Python is Pyodide from verified bytes (B6, B7)'],
  ['P2', 'python_needs_session_approval', 'native Python is the CLI\'s; browser Python is ordinary sandboxed code (B6, B7)'],
  ['P3', 'never_loads_pyodide', 'the CLI\'s rule; in the browser Pyodide is the Python runtime, from verified bytes (B6)'],
]) checks.push([id, name, `CLI-only contract: ${why}`, async () => { throw new Skip(`CLI-only: ${why}`); }]);

// ---------------------------------------------------------------- main

const selected = checks.filter(([id, name]) => {
  const full = `tool_security_contracts.${id}.${name}`;
  return filters.length === 0 || filters.some((f) => full.includes(f));
});

if (list) {
  for (const [id, name, desc] of selected) console.log(`tool_security_contracts.${id}.${name}  ${desc}`);
  process.exit(0);
}
if (selected.length === 0) { console.error('browser checks: no check matches the filters'); process.exit(2); }

if (!fs.existsSync(CHROMIUM)) {
  const why = `${CHROMIUM} not found: run scripts/setup.sh (it installs Debian's chromium)`;
  if (json) console.log(JSON.stringify({ skipped: why }));
  else for (const [id, name] of selected) console.log(`SKIP tool_security_contracts.${id}.${name}: ${why}`);
  process.exit(77);
}

let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch (e) {
  console.error('browser checks: playwright-core is missing (npm ci, or scripts/setup.sh): ' + e.message);
  process.exit(3);
}

const hostServer = startHostServer({ relay: { port: () => (strict ? strict.port : 0) } }), canaryServer = startCanary();
const [hostPort, canaryPort] = await Promise.all([listen(hostServer), listen(canaryServer)]);
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
const cdp = await browser.newBrowserCDPSession();
const results = [];
let failed = 0;
const t0 = Date.now();
// The build step of B6: Pyodide's core-file ids, from the npm package (a changed package changes the committed file).
try {
  execFileSync(process.execPath, [new URL('../../scripts/pyodide-manifest.mjs', import.meta.url).pathname], { stdio: ['ignore', 'ignore', 'pipe'] });
} catch (e) {  // no node_modules/pyodide: the committed manifest stays, and the Python checks fail on the missing files
  console.error('browser checks: the Pyodide manifest was not rewritten: ' + String(e.stderr || e.message).trim());
}
const groups = new Map();  // group -> {context, page}: checks of one group share a page (a booted Pyodide)
for (const [id, name, desc, fn, group] of selected) {
  const full = `tool_security_contracts.${id}.${name}`;
  const shared = group ? groups.get(group) : undefined;
  const context = shared ? shared.context : await browser.newContext();
  const page = shared ? shared.page : await context.newPage();
  const started = Date.now();
  let outcome, reason;
  try {
    const hostUrl = `http://127.0.0.1:${hostPort}/tests/page.html`;
    if (!shared) {
      await page.goto(hostUrl);
      await page.waitForFunction(() => window.taskyonReady === true);
    }
    if (group && !shared) groups.set(group, { context, page });
    reason = await fn({ page, cdp, hostUrl, canary: `http://127.0.0.1:${canaryPort}` });
    outcome = 'PASS';
  } catch (e) {
    outcome = e instanceof Skip ? 'SKIP' : 'FAIL';
    reason = String(e && e.message || e).split('\n')[0];
    if (outcome === 'FAIL') failed++;
  }
  if (!group) await context.close();
  const ms = Date.now() - started;
  results.push({ name: full, contract: id, description: desc, outcome, reason, ms });
  if (!json) console.log(`${outcome} ${full} (${ms} ms): ${reason}`);
}
for (const { context } of groups.values()) await context.close();
await browser.close();
await stopStrict();
hostServer.close();
canaryServer.close();
const skipped = results.filter((r) => r.outcome === 'SKIP').length, passed = results.length - failed - skipped;
if (json) console.log(JSON.stringify({ checks: results, summary: { passed, failed, skipped, ms: Date.now() - t0 } }, null, 2));
else console.log(`browser checks: ${passed} passed, ${failed} failed, ${skipped} skipped (${Date.now() - t0} ms)`);
process.exit(failed ? 1 : 0);
