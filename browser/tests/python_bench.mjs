#!/usr/bin/env node
// Figures of the browser Python sandbox (docs/browser.md "Browser Python"),
// next to the JS sandbox measured in the same run and page:
//   files cold     fetch + SHA-256 check of the five core files (nothing cached)
//   files cached   the same from the host origin's Cache API (checked again)
//   boot cold      a first Python call: files fetched and verified, Pyodide booted, `1` returned
//   boot memory    a new Python sandbox with the verified bytes in the host's memory
//   boot cache     a new page whose bytes come from the Cache API
//   warm call      a retained runtime's call (`1 + 1`), mean of N
//   memory         renderer RSS growth per retained runtime (/proc, one extra runtime)
//   node browser/tests/python_bench.mjs [--iterations N]
import fs from 'node:fs';
import { listen, startHostServer } from './servers.mjs';

const CHROMIUM = process.env.TASKYON_CHROMIUM || '/usr/bin/chromium';
const i = process.argv.indexOf('--iterations');
const N = i > 0 ? Number(process.argv[i + 1]) : 50;

const { chromium } = await import('playwright-core');
const server = startHostServer();
const port = await listen(server);
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
const cdp = await browser.newBrowserCDPSession();
const context = await browser.newContext();
const page = await context.newPage();
const url = `http://127.0.0.1:${port}/tests/page.html`;
const open = async () => { await page.goto(url); await page.waitForFunction(() => window.taskyonReady === true); };

async function rendererRssKb() {
  const { processInfo } = await cdp.send('SystemInfo.getProcessInfo');
  let kb = 0;
  for (const p of processInfo.filter((p) => p.type === 'renderer')) {
    try { kb += Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${p.id}/status`, 'utf8'))[1]); } catch { /* ended */ }
  }
  return kb;
}

await open();
const a = await page.evaluate(async (N) => {
  const t = window.taskyon, base = new URL('/node_modules/pyodide/', location.href);
  const ms = async (f) => { const s = performance.now(); const r = await f(); return [performance.now() - s, r]; };
  const ok = (r) => { if (!r.ok) throw new Error(JSON.stringify(r.error)); return r; };
  const py = (h, c) => h.call({ tool: 'py', runtime: 'python', timeoutMs: 120000, ...c }).then(ok);
  await t.forgetPyodideFiles({ cache: true });
  const out = {};
  [out.filesColdMs] = await ms(() => t.loadPyodideFiles(base, { cache: false }));
  await t.forgetPyodideFiles({ cache: true });
  const h = new t.SandboxHost();
  await h.assets();
  [out.bootColdMs] = await ms(() => py(h, { revision: 'cold', code: '1' }));  // fetch, verify, cache, boot
  await t.forgetPyodideFiles();  // memory only: the Cache API keeps them
  [out.filesCachedMs] = await ms(() => t.loadPyodideFiles(base));
  [out.bootMemoryMs] = await ms(() => py(h, { revision: 'memory', code: '1' }));
  for (let k = 0; k < 10; k++) await py(h, { revision: 'memory', code: '1' });
  let s = performance.now();
  for (let k = 0; k < N; k++) await py(h, { revision: 'warm', code: '1 + 1' });  // first one boots: excluded below
  s = performance.now();
  for (let k = 0; k < N; k++) await py(h, { revision: 'warm', code: '1 + 1' });
  out.warmMs = (performance.now() - s) / N;
  // The JS sandbox in the same page: a cold disposable sandbox (renderer alive) and a warm call.
  const js = [];
  for (let k = 0; k < 5; k++) { const [d] = await ms(() => h.call({ tool: 'j', revision: 'jd', code: '() => 1', disposable: true }).then(ok)); js.push(d); }
  out.jsColdMs = js.sort((x, y) => x - y)[2];
  for (let k = 0; k < 20; k++) await h.call({ tool: 'j', revision: 'jw', code: '() => 1' });
  s = performance.now();
  for (let k = 0; k < N; k++) await h.call({ tool: 'j', revision: 'jw', code: '() => 1' });
  out.jsWarmMs = (performance.now() - s) / N;
  window.benchHost = h;
  return out;
}, N);
const before = await rendererRssKb();
await page.evaluate(() => window.benchHost.call({ tool: 'py', runtime: 'python', revision: 'extra', code: '1', timeoutMs: 120000 }));
await new Promise((r) => setTimeout(r, 500));
a.runtimeRssMb = (await rendererRssKb() - before) / 1024;
await page.evaluate(() => window.benchHost.close());
await open();  // a new page: memory empty, the Cache API holds the verified bytes
a.bootCacheMs = await page.evaluate(async () => {
  const s = performance.now();
  const r = await new window.taskyon.SandboxHost().call({ tool: 'py', runtime: 'python', revision: 'c', code: '1', timeoutMs: 120000 });
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  return performance.now() - s;
});
await context.close();
await browser.close();
server.close();

const f = (x) => x.toFixed(x < 1 ? 3 : 1);
console.log(`browser Python figures (Chromium, Pyodide 314; warm: means of ${N})`);
console.log(`  core files, fetch + verify          ${f(a.filesColdMs)} ms`);
console.log(`  core files, Cache API + verify      ${f(a.filesCachedMs)} ms  = ${(a.filesCachedMs / a.filesColdMs).toFixed(2)}x fetching`);
console.log(`  boot cold (fetch, verify, boot)     ${f(a.bootColdMs)} ms  = ${(a.bootColdMs / a.jsColdMs).toFixed(0)}x a cold JS sandbox (${f(a.jsColdMs)} ms)`);
console.log(`  boot, bytes in host memory          ${f(a.bootMemoryMs)} ms  = ${(a.bootMemoryMs / a.bootColdMs).toFixed(2)}x cold`);
console.log(`  boot, new page, bytes in Cache API  ${f(a.bootCacheMs)} ms  = ${(a.bootCacheMs / a.bootColdMs).toFixed(2)}x cold`);
console.log(`  warm call (1 + 1)                   ${f(a.warmMs)} ms  = ${(a.warmMs / a.jsWarmMs).toFixed(1)}x a warm JS call (${f(a.jsWarmMs)} ms)`);
console.log(`  warm call vs boot from memory       1 : ${(a.bootMemoryMs / a.warmMs).toFixed(0)}`);
console.log(`  renderer RSS per retained runtime   ${a.runtimeRssMb.toFixed(0)} MB`);
