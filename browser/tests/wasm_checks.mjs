// The browser checks of the wasm core in the host page (issue 14, DESIGN §9):
// the page loads build-wasm/taskyon_core.wasm (browser/core/load.mjs), its
// SandboxHost decides with wasmDecider (browser/core/policy.mjs), and the
// answers are compared with the native rules: `tycli policy check --json` and
// `tycli --json tool install` from --tycli, or without a binary the same
// module run in Node (tests/wasm_parity_test.cc proves it equal to native).
// Every check SKIPs with the reason while the module is not built (`make wasm`;
// `make test` builds it before ctest).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CORE_WASM } from './servers.mjs';
import { instantiate } from '../core/core.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CORPUS = path.resolve(repo, '..', 'shared', 'corpora', 'ssrf_public.json');
const TOOLS = path.join(repo, 'examples', 'tools');

// Corpus cases by id, read as they are. Chosen so the native answer needs no
// live DNS: IP literals, no host, or a name given --resolve (the allowed ones).
const CASES = {
  M4: ['ssrf-003', 'ssrf-004', 'ssrf-007', 'ssrf-010', 'ssrf-022'],
  M5: ['ssrf-036', 'ssrf-038', 'ssrf-039', 'ssrf-041'],
  M6: ['ssrf-050', 'ssrf-067', 'ssrf-134', 'ssrf-155', 'ssrf-165', 'ssrf-174', 'ssrf-191', 'ssrf-197', 'ssrf-206'],
  allowed: ['ssrf-290', 'ssrf-291'],
};
const PUBLIC_ADDRESS = '93.184.215.14';  // what an allowed name "resolves" to for the native check (--resolve)

// A tool that fetches every URL and says how each ended.
const FETCH_ALL = `async ({urls}) => { const out = []; for (const u of urls) { try { const r = await fetch(u); out.push('fetched ' + r.status); } catch (e) { out.push(e.name + ':' + e.code); } } return out; }`;

function corpusCases(ids) {
  if (!fs.existsSync(CORPUS)) throw new Error(`the SSRF corpus ${CORPUS} is missing`);
  const all = JSON.parse(fs.readFileSync(CORPUS, 'utf8'));
  return ids.map((id) => {
    const c = all.find((x) => x.id === id);
    if (!c) throw new Error(`corpus case ${id} is missing from ${CORPUS}`);
    return c;
  });
}

/**
 * @param {{expect: Function, canaryLog: object[], Skip: typeof Error, tycli: string, call: Function}} h
 */
export function wasmChecks({ expect, canaryLog, Skip, tycli, call }) {
  let nodeCore = null;  // the module in Node: the native stand-in without a tycli binary
  let home = null;

  const requireModule = () => {
    if (!fs.existsSync(CORE_WASM)) throw new Skip(`${CORE_WASM} is not built (make wasm; make test builds it before ctest)`);
  };
  const tycliHome = () => {
    if (!home) {
      home = fs.mkdtempSync(path.join(os.tmpdir(), 'taskyon-wasm-checks-'));
      process.on('exit', () => fs.rmSync(home, { recursive: true, force: true }));
    }
    return home;
  };

  // The native rules' answer for a fetch: tycli policy check --json (exit 1 = refused), or the module in Node.
  async function nativeDecision(url, method, host) {
    if (tycli) {
      const args = ['policy', 'check', '--json', '--method', method];
      if (host && !/^[\d.]+$|^\[/.test(host)) args.push('--resolve', `${host}:${PUBLIC_ADDRESS}`);
      const r = spawnSync(tycli, [...args, '--', url], { encoding: 'utf8', env: { ...process.env, TASKYON_HOME: tycliHome() } });
      try { return { ...JSON.parse(r.stdout), by: 'tycli' }; } catch { throw new Error(`tycli policy check ${url}: exit ${r.status}: ${r.stderr || r.stdout}`); }
    }
    nodeCore ??= await instantiate(fs.readFileSync(CORE_WASM));
    const a = nodeCore.decideFetch(JSON.stringify({ url, method }));
    if (!a.ok) throw new Error(`the wasm core in Node refused ${url}: ${a.error.code}`);
    return { ...a.value, by: 'wasm in Node' };
  }

  // The page's wasm decider in a SandboxHost (window.h), or the reason the module is absent.
  async function wasmHost(page) {
    requireModule();
    const r = await page.evaluate(async () => {
      const t = /** @type {any} */ (window).taskyon;
      const loaded = await t.loadCore('/build-wasm/taskyon_core.wasm');
      if (!loaded.ok) return loaded;
      window.core = loaded.core;
      window.decide = t.wasmDecider(loaded.core);
      if (window.h) window.h.close();
      window.h = new t.SandboxHost({ decide: window.decide });
      return { ok: true, info: loaded.core.info('{}').value };
    });
    if (!r.ok) { if (r.absent) throw new Skip(r.reason); throw new Error(r.reason); }
    expect(r.info && r.info.build === 'wasm32-wasi', 'the page\'s core is not the wasm build: ' + JSON.stringify(r.info));
    return r.info;
  }

  // Each URL fetched by tool code in the page: refused by the wasm policy with the native reason class, canary 0.
  async function refusedLikeNative(env, id, extra) {
    const { page } = env;
    await wasmHost(page);
    const cases = corpusCases(CASES[id]).map((c) => ({ label: c.id, url: c.url, method: c.method || 'GET', host: c.whatwg_host }));
    cases.push(...extra(env.canary));
    const want = [];
    for (const c of cases) {
      const n = await nativeDecision(c.url, c.method, c.host);
      expect(n.admitted === false && n.verdict === 'deny', `${c.label}: the native policy (${n.by}) does not refuse ${c.url}: ${JSON.stringify(n)}`);
      want.push({ ...c, code: 'policy_' + n.reasonClass, by: n.by });
    }
    canaryLog.length = 0;
    const r = await call(page, { tool: 'f', revision: 'r-wasm', code: FETCH_ALL, args: { urls: cases.map((c) => c.url) }, timeoutMs: 20000 });
    expect(r.ok, 'the tool failed: ' + JSON.stringify(r.error));
    const bad = want.filter((w, i) => r.value[i] !== 'CapabilityError:' + w.code).map((w) => `${w.label} ${w.url}: page ${r.value[want.indexOf(w)]}, native ${w.code}`);
    expect(bad.length === 0, 'the page\'s wasm policy differs from native: ' + bad.join('; '));
    expect(canaryLog.length === 0, `the canary saw ${canaryLog.length} request(s)`);
    const codes = [...new Set(want.map((w) => w.code))].sort();
    return `${cases.length} URLs (${cases.map((c) => c.label).join(', ')}) refused in the page by the wasm policy with the reason of ${want[0].by} (${codes.join(', ')}); canary 0`;
  }

  const canaryCase = (label, url) => ({ label, url, method: 'GET', host: '127.0.0.1' });

  return [
    ['M4', 'wasm_policy_https_only', 'in the page, the wasm policy refuses non-https schemes and ports as the native policy does (same reason code); nothing reaches the canary', (env) =>
      refusedLikeNative(env, 'M4', (canary) => [canaryCase('canary over http', canary + '/p/wasm-http')])],

    ['M5', 'wasm_policy_refuses_url_credentials', 'in the page, the wasm policy refuses userinfo URLs as the native policy does (same reason code); nothing reaches the canary', (env) =>
      refusedLikeNative(env, 'M5', (canary) => [canaryCase('canary with userinfo', canary.replace('http://', 'https://user:pw@') + '/p/wasm-userinfo')])],

    ['M6', 'wasm_policy_blocks_local_targets', 'in the page, the wasm policy refuses loopback, private, link-local, metadata and special addresses as the native policy does; an allowed public https URL reaches the grant step', async (env) => {
      const refused = await refusedLikeNative(env, 'M6', (canary) => [canaryCase('canary over https', canary.replace('http://', 'https://') + '/p/wasm-https')]);
      const allowed = [];
      for (const c of corpusCases(CASES.allowed)) {
        const n = await nativeDecision(c.url, c.method || 'GET', c.whatwg_host);
        expect(n.admitted === true, `${c.id}: the native policy (${n.by}) does not admit ${c.url}: ${JSON.stringify(n)}`);
        const v = await env.page.evaluate((req) => window.decide(req), { url: c.url, method: c.method || 'GET' });
        expect(v.allow === true && v.origin === n.origin && v.access === n.access && v.href === n.href,
          `${c.id} ${c.url}: the page's decider answered ${JSON.stringify(v)}, native ${n.origin} ${n.access} ${n.href}`);
        allowed.push(`${c.id} -> allow ${v.origin} ${v.access}`);
      }
      return `${refused}; ${allowed.join(', ')} (the grant step's input, as native)`;
    }],

    ['R1', 'wasm_core_computes_revision_ids', 'a host page under a strict CSP (\'wasm-unsafe-eval\' for the page only) computes each example tool\'s revision id with the wasm core, equal to the id tycli tool install prints', async (env) => {
      const { page } = env;
      requireModule();
      await page.goto(env.hostUrl + '?csp=strict');
      await page.waitForFunction(() => window.taskyonReady === true);
      await wasmHost(page);
      const files = fs.readdirSync(TOOLS).filter((f) => f.endsWith('.json')).sort();
      expect(files.length > 0, `no example tools in ${TOOLS}`);
      const out = [];
      for (const f of files) {
        const text = fs.readFileSync(path.join(TOOLS, f), 'utf8');
        let want, by;
        if (tycli) {
          const h = fs.mkdtempSync(path.join(os.tmpdir(), 'taskyon-wasm-install-'));
          const r = spawnSync(tycli, ['--json', 'tool', 'install', path.join(TOOLS, f)], { encoding: 'utf8', env: { ...process.env, TASKYON_HOME: h } });
          fs.rmSync(h, { recursive: true, force: true });
          expect(r.status === 0, `tycli tool install ${f}: exit ${r.status}: ${r.stderr}`);
          want = JSON.parse(r.stdout)[0].revision; by = 'tycli tool install';
        } else {
          nodeCore ??= await instantiate(fs.readFileSync(CORE_WASM));
          want = nodeCore.manifest(text).value.revision; by = 'the module in Node';
        }
        const got = await page.evaluate((t) => { const a = window.core.manifest(t); return a.ok ? a.value.revision : 'error ' + a.error.code; }, text);
        expect(got === want, `${f}: the page computed ${got}, ${by} printed ${want}`);
        out.push(`${f.replace(/\.json$/, '')} ${got.slice(0, 15)}…`);
      }
      const sandboxed = await call(page, { tool: 't', revision: 'r1', code: '() => typeof WebAssembly.compile' });
      expect(sandboxed.ok, 'a sandbox did not run under the strict host CSP: ' + JSON.stringify(sandboxed.error));
      return `${files.length} example tools, ids equal to ${tycli ? 'tycli tool install' : 'the module in Node'}: ${out.join(', ')}`;
    }],
  ];
}
