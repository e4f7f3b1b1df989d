#!/usr/bin/env node
// Figures of the browser sandbox in Debian's Chromium (docs/browser.md), each
// next to a baseline measured in the same run and page:
//   cold start  a fresh sandbox (iframe + supervisor + Blob worker + tool code,
//               to its "ready") vs a plain Blob worker of the host page, to its
//               first message; first in a cold renderer, then while another
//               sandbox keeps the renderer alive (disposable calls);
//   warm call   a retained sandbox's call round trip (`() => 1`, validated,
//               relayed through the iframe) vs a MessagePort round trip to a
//               plain Blob worker of the host page.
//   strict fetch (with --tycli PATH) a warm call making one strict-mode fetch (page -> the page
//               server's relay -> tycli serve's /v1/fetch, decided and audited -> an HTTPS
//               upstream on loopback) vs this script's own POST /v1/fetch to the same server.
//   server run  (with --tycli PATH) a warm call as a run of tycli serve (server.js: POST /v1/runs,
//               the call in the page's retained sandbox, POST /v1/runs/{run}/result, stored) vs the
//               same warm call with no server (the page's own record only), alternated.
//   node browser/tests/bench.mjs [--iterations N] [--tycli PATH]
import { listen, startHostServer } from './servers.mjs';
import { startStrict, STRICT_CODE } from './strict.mjs';
import http from 'node:http';

const CHROMIUM = process.env.TASKYON_CHROMIUM || '/usr/bin/chromium';
const i = process.argv.indexOf('--iterations');
const N = i > 0 ? Number(process.argv[i + 1]) : 30;

const ti = process.argv.indexOf('--tycli');
const strict = ti > 0 ? await startStrict(process.argv[ti + 1]) : null;

const { chromium } = await import('playwright-core');
const server = startHostServer({ relay: { port: () => (strict ? strict.port : 0) } });
const port = await listen(server);
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
const page = await browser.newPage();
await page.goto(`http://127.0.0.1:${port}/tests/page.html`);
await page.waitForFunction(() => window.taskyonReady === true);

const figures = await page.evaluate(async (N) => {
  const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
  const h = new window.taskyon.SandboxHost();
  await h.assets();
  // Plain Blob worker of the host page (no iframe, no CSP, no validation): the floor.
  const plainSrc = 'onmessage = (e) => postMessage(e.data); postMessage("ready");';
  const plainStart = async () => {
    const t = performance.now();
    const w = new Worker(URL.createObjectURL(new Blob([plainSrc], { type: 'text/javascript' })));
    await new Promise((r) => { w.onmessage = r; });
    return { w, ms: performance.now() - t };
  };
  const out = {};
  // Cold sandbox in a cold renderer: the first sandbox of the page (one sample),
  // then sandboxes while a retained one keeps the renderer alive.
  let t = performance.now();
  await h.call({ tool: 'keep', revision: 'keep', code: '() => 1' });
  out.coldFirstMs = performance.now() - t;
  const cold = [], plainCold = [];
  for (let k = 0; k < N; k++) {
    t = performance.now();
    const r = await h.call({ tool: 'd', revision: 'd', code: '() => 1', disposable: true });
    if (!r.ok) throw new Error('disposable call failed: ' + JSON.stringify(r.error));
    cold.push(performance.now() - t);
    const p = await plainStart();
    plainCold.push(p.ms);
    p.w.terminate();
  }
  out.coldMs = median(cold);
  out.plainWorkerStartMs = median(plainCold);
  // Warm round trips.
  // Means over N * 10 sequential calls (performance.now() is coarsened to
  // 0.1 ms in a page that is not cross-origin isolated: too coarse for one).
  for (let k = 0; k < 20; k++) await h.call({ tool: 'w', revision: 'w', code: '() => 1' });
  t = performance.now();
  for (let k = 0; k < N * 10; k++) await h.call({ tool: 'w', revision: 'w', code: '() => 1' });
  out.warmMs = (performance.now() - t) / (N * 10);
  const { w } = await plainStart();
  for (let k = 0; k < 20; k++) await new Promise((r) => { w.onmessage = r; w.postMessage({ t: 'call', id: k, args: {} }); });
  t = performance.now();
  for (let k = 0; k < N * 10; k++) await new Promise((r) => { w.onmessage = r; w.postMessage({ t: 'call', id: k, args: {} }); });
  out.plainRoundTripMs = (performance.now() - t) / (N * 10);
  w.terminate();
  h.close();
  return out;
}, N);

// Strict mode: the page's call with one proxied fetch vs a plain client's POST /v1/fetch.
let strictFig = null;
if (strict) {
  const M = N * 2;
  const url = strict.origin + '/bench';
  strictFig = await page.evaluate(async ({ M, token, revision, code, url }) => {
    const h = new window.taskyon.SandboxHost({ egress: { endpoint: '/serve/v1/fetch', token } });
    const one = async () => { const r = await h.call({ tool: 'getter', revision, code, args: { u: url } });
      if (!r.ok || r.value.status !== 200) throw new Error('strict call failed: ' + JSON.stringify(r.value ?? r.error)); };
    for (let k = 0; k < 5; k++) await one();
    const t = performance.now();
    for (let k = 0; k < M; k++) await one();
    const ms = (performance.now() - t) / M;
    h.close();
    return { ms };
  }, { M, token: strict.token, revision: strict.revisions.getter, code: STRICT_CODE, url });
  strictFig.run = await page.evaluate(async ({ M, token }) => {
    const t = window.taskyon;
    const code = '({n}) => n + 1';
    await fetch('/serve/v1/tools?activate=1', { method: 'POST', headers: { Authorization: 'Bearer ' + token },
      body: JSON.stringify({ name: 'inc', description: 'bench', parameters: { type: 'object' }, execution: 'sandboxed-code', runtime: 'javascript', code }) });
    const server = new t.server.ServerRuns({ token, base: '/serve' });
    const h = new t.SandboxHost({ egress: server.egress(), ...server.capabilities() });
    const started = await server.call(h, { tool: 'inc', args: { n: 0 } });  // the revision the plain calls use too
    const revision = started.record.tool.revision;
    const viaServer = async () => { const r = await server.call(h, { tool: 'inc', args: { n: 1 } }); if (!r.ok || r.record.status !== 'ok') throw new Error('run failed'); };
    const plain = async () => { const r = await h.call({ tool: 'inc', revision, code, args: { n: 1 } }); if (!r.ok) throw new Error('call failed'); };
    let a = 0, b = 0;
    for (let k = 0; k < 3; k++) { await viaServer(); await plain(); }
    for (let k = 0; k < M; k++) {  // alternated: the machine's load falls on both alike
      let x = performance.now(); await viaServer(); a += performance.now() - x;
      x = performance.now(); await plain(); b += performance.now() - x;
    }
    h.close();
    return { ms: a / M, plainMs: b / M };
  }, { M, token: strict.token });
  const agent = new http.Agent({ keepAlive: true });
  const body = JSON.stringify({ revision: strict.revisions.getter, url, method: 'GET' });
  const post = () => new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: strict.port, path: '/v1/fetch', method: 'POST', agent,
      headers: { authorization: 'Bearer ' + strict.token, 'content-type': 'application/json' } }, (res) => {
      res.resume(); res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error('HTTP ' + res.statusCode))));
    });
    req.setNoDelay(true);
    req.on('error', reject);
    req.end(body);
  });
  for (let k = 0; k < 5; k++) await post();
  const t = performance.now();
  for (let k = 0; k < M; k++) await post();
  strictFig.plainMs = (performance.now() - t) / M;
  strictFig.n = M;
  agent.destroy();
  await strict.stop();
}

await browser.close();
server.close();
const f = (x) => x.toFixed(x < 1 ? 3 : 1);
console.log(`browser sandbox figures (Chromium, ${N} cold / ${N * 10} warm samples; cold: medians, warm: means)`);
console.log(`  first sandbox, cold renderer        ${f(figures.coldFirstMs)} ms`);
console.log(`  cold sandbox, renderer alive        ${f(figures.coldMs)} ms  = ${(figures.coldMs / figures.plainWorkerStartMs).toFixed(1)}x a plain Blob worker start (${f(figures.plainWorkerStartMs)} ms)`);
console.log(`  warm call round trip                ${f(figures.warmMs)} ms  = ${(figures.warmMs / figures.plainRoundTripMs).toFixed(1)}x a plain worker MessagePort round trip (${f(figures.plainRoundTripMs)} ms)`);
console.log(`  warm call vs cold sandbox           1 : ${(figures.coldMs / figures.warmMs).toFixed(0)}`);
if (strictFig) {
  console.log(`  strict fetch call (means of ${strictFig.n})   ${f(strictFig.ms)} ms  = ${(strictFig.ms / strictFig.plainMs).toFixed(1)}x a plain client's POST /v1/fetch (${f(strictFig.plainMs)} ms), ${(strictFig.ms / figures.warmMs).toFixed(0)}x the warm call`);
  console.log(`  warm call as a server run (means)   ${f(strictFig.run.ms)} ms  = ${(strictFig.run.ms / strictFig.run.plainMs).toFixed(1)}x the same warm call with no server (${f(strictFig.run.plainMs)} ms)`);
}
