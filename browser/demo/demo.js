// The browser host demo (docs/browser.md "Demo"): the sandbox host and popups of browser/host/
// in one static page. The page loads the WebAssembly core (browser/core/, `make wasm`): direct
// mode decides every mediated fetch with its policy, and the revision ids shown are computed here
// from the tool definitions, the ids `tycli tool install` prints. Without the module the page says
// so, shows labels and refuses every fetch (browser/host/policy.js).
import { SandboxHost, refuseAll } from '../host/host.js';
import { PopupHost, PopupPermissions } from '../host/popup.js';
import { BrowserStore, grantedDecider } from '../host/store.js';
import { ServerRuns } from '../host/server.js';
import { loadCore } from '../core/load.mjs';
import { wasmDecider } from '../core/policy.mjs';

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const loaded = /** @type {any} */ (await loadCore(new URL('../../build-wasm/taskyon_core.wasm', import.meta.url).href));  // {ok, core, bytes} | {ok: false, reason}
const core = loaded.ok ? loaded.core : null;
// Direct mode's decisions: the wasm policy, then a grant for (revision, origin, access) in this
// page's browser store (IndexedDB, store.js), each decision in its audit. A request the policy
// admits but no grant covers is put to the user while the tool's fetch waits (askGrant below).
const store = core ? await BrowserStore.open('taskyon-demo', { core }) : null;
const decide = core ? grantedDecider(wasmDecider(core), store, { ask: (q) => askGrant(q) }) : refuseAll;

// The counter is examples/tools/counter.json as `tycli tool install` reads it; v2 the same with another code (its default step 10).
const counterV1 = await fetch(new URL('../../examples/tools/counter.json', import.meta.url), { cache: 'no-store' }).then((r) => r.json());
const counterV2 = { ...counterV1, code: counterV1.code.replace('step = 1', 'step = 10') };
const FETCHER = 'async ({u}) => { try { const r = await fetch(u); return "HTTP " + r.status + ": " + (await r.text()).slice(0, 80); } catch (e) { return e.name + " " + (e.code || "") + ": " + e.message; } }';
const STUCK = '() => { while (true) {} }';
const tool = (name, code, description) => ({ name, description, parameters: { type: 'object' }, execution: 'sandboxed-code', runtime: 'javascript', code });
const DEFS = {
  v1: counterV1,
  v2: counterV2,
  fetcher: tool('fetcher', FETCHER, 'Fetches a URL through the host page.'),
  stuck: tool('stuck', STUCK, 'Never returns.'),
  viewer: tool('viewer', '() => null', 'Opens a report popup.'),
};
/** The revision id of a definition: the wasm core's (the CLI's id), or a label without the module. */
const revisionOf = (key) => {
  if (!core) return `label:${key}`;
  const a = /** @type {any} */ (core.manifest(JSON.stringify(DEFS[key])));
  return a.ok ? a.value.revision : `error:${a.error.code}`;
};
const REV = { v1: revisionOf('v1'), v2: revisionOf('v2') };
const FETCHER_REV = revisionOf('fetcher');
const STUCK_REV = revisionOf('stuck');
const VIEWER = revisionOf('viewer');
const COUNTER = { v1: counterV1.code, v2: counterV2.code };
$('ids-out').textContent = core
  ? [`wasm core (${loaded.bytes} bytes) computed in this page:`, `counter v1 ${REV.v1}`, `  = tycli tool install examples/tools/counter.json`,
    `counter v2 ${REV.v2}`, `fetcher    ${FETCHER_REV}`].join('\n')
  : `no wasm core: ${loaded.reason}; ids are labels and direct mode refuses every fetch`;

// Strict mode: the page uses the server's store (server.js): a call of a tool installed on the server
// (#tool=NAME, default fetcher) is a run of the server, which pins it and answers the revision's code,
// decides its fetches (egress proxy) and stores the call and its result, so `tycli task tree` shows
// it; the page shows the stored task and the server's audit row. The server's token: served by
// `tycli serve --page` (docs/serve.md), it is in the page's own path, /page/<token>/…, and the API
// is this origin's /v1; served by browser/demo/serve.mjs, it is #token=<token>, and the API is
// behind that server's /serve relay.
const params = new URLSearchParams(location.hash.slice(1));
const servedBy = /^\/page\/([0-9a-f]{64})\//.exec(location.pathname);
const token = servedBy ? servedBy[1] : params.get('token') || '';
const apiBase = servedBy ? '' : '/serve';
const serverToolName = params.get('tool') || 'fetcher';
/** @type {{revision: string} | null} */
let serverTool = null;
/** @type {ServerRuns | null} */
let server = null;
const api = (path) => fetch(apiBase + path, { headers: { Authorization: 'Bearer ' + token }, cache: 'no-store' })
  .then(async (r) => { const j = await r.json(); if (!r.ok) throw new Error(j.error ? j.error.code + ': ' + j.error.message : 'HTTP ' + r.status); return j; });
let active = 'v1';
const counterLines = [];
let host = makeHost(false);
const hosts = new Set([host]);

function makeHost(strict) {
  if (!strict) return new SandboxHost({ decide });
  server ??= new ServerRuns({ token, base: apiBase || '/' });
  return new SandboxHost({ egress: server.egress(), ...server.capabilities(), onRecord: server.sandboxLog });
}

function render() {
  const rows = [...hosts].flatMap((h) => h.log).sort((a, b) => a.at - b.at).slice(-14);
  $('log').querySelector('tbody').replaceChildren(...rows.map((e, i) => {
    const tr = document.createElement('tr');
    for (const [v, cls] of [[i + 1], [e.event, e.event], [e.sandbox], [e.tool], [String(e.revision).startsWith('sha256:') ? e.revision.slice(0, 19) + '…' : e.revision], [e.session], [e.reason || '']]) {
      const td = document.createElement('td');
      td.textContent = String(v);
      if (cls) td.className = cls;
      tr.append(td);
    }
    return tr;
  }));
}

async function counter(session) {
  const r = await host.call({ tool: 'counter', revision: REV[active], session, code: COUNTER[active] });
  counterLines.push(`${session} @ ${active}: ` + (r.ok ? `count ${/** @type {any} */ (r.value).count} (sandbox ${r.sandbox})` : r.error.code));
  $('counter-out').textContent = counterLines.slice(-4).join('\n');
  render();
}

$('alice').onclick = () => counter('alice');
$('bob').onclick = () => counter('bob');
for (const [id, rev] of [['activate', 'v2'], ['activate1', 'v1']]) {
  $(id).onclick = () => {
    active = rev;
    host.activate('counter', REV[rev]);
    $('activate-out').textContent = `active: ${rev} (${REV[rev].slice(0, 19)}…); the other revision's sandboxes are gone`;
    render();
  };
}
$('stuck').onclick = async () => {
  const t = performance.now();
  const r = await host.call({ tool: 'stuck', revision: STUCK_REV, code: STUCK, timeoutMs: 200 });
  $('stuck-out').textContent = `${r.error ? r.error.code : 'returned?'} after ${Math.round(performance.now() - t)} ms; sandbox ${r.sandbox ?? '—'} removed`;
  render();
};
$('strict').onchange = () => {
  const strict = /** @type {HTMLInputElement} */ ($('strict')).checked;
  if (strict && !/^[0-9a-f]{64}$/.test(token)) {
    $('fetch-out').textContent = 'strict mode needs the server token: open the page URL tycli serve --page prints, or this page with #token=<tycli serve token>';
    /** @type {HTMLInputElement} */ ($('strict')).checked = false;
    return;
  }
  host = makeHost(strict);
  hosts.add(host);
  $('mode').textContent = host.mode;
  $('fetch-out').textContent = `a new host in ${host.mode} mode`;
  if (strict) {
    api('/v1/tools/' + encodeURIComponent(serverToolName)).then((t) => {
      serverTool = { revision: t.revision };
      $('fetch-out').textContent = `strict: the server's ${serverToolName} ${t.revision.slice(0, 19)}…`;
    }, (e) => { $('fetch-out').textContent = `strict: the server has no tool ${serverToolName}: ${e.message}`; });
  }
};
// The live audit of the browser store (direct mode).
async function renderAudit() {
  if (!store) return;
  const rows = (await store.auditRows()).slice(-5);
  $('audit-out').textContent = rows.length ? rows.map((r) => `${r.at.slice(11, 23)} ${r.verdict.padEnd(5)} ${r.access ?? '-'} ${r.target}  ${r.reason}`).join('\n') : 'no decision yet';
}
// The grant prompt (grantedDecider's ask, as the CLI's --ask): the tool's fetch waits for the
// answer; once allows this request, always stores the grant, deny refuses.
/** @param {{revision: string, tool: string, origin: string, access: string}} q @returns {Promise<string>} */
function askGrant(q) {
  $('grant-ask').hidden = false;
  $('grant-text').textContent = `${q.tool} ${q.revision.slice(0, 19)}… wants ${q.access} on ${q.origin}`;
  return new Promise((resolve) => {
    const answer = (a) => () => { $('grant-ask').hidden = true; resolve(a); };
    $('grant-once').onclick = answer('once');
    $('grant-yes').onclick = answer('always');
    $('grant-no').onclick = answer('no');
  });
}
$('fetch').onclick = async () => {
  const u = /** @type {HTMLInputElement} */ ($('url')).value;
  if (store && host.mode === 'direct') await store.install(DEFS.fetcher);  // the store holds what it grants to
  const strict = host.mode === 'strict' && serverTool;
  const r = strict && server
    ? await server.call(host, { tool: serverToolName, args: { u } })
    : await host.call({ tool: 'fetcher', revision: FETCHER_REV, code: FETCHER, args: { u } });
  let text = `${host.mode}: ` + (r.ok ? (typeof r.value === 'string' ? r.value : JSON.stringify(r.value)) : r.error.code);
  if (strict && 'task' in r) {
    text += `\nstored by the server as task ${String(r.task).slice(0, 19)}… (tycli task tree ${String(r.task).slice(0, 19)})`;
    const rows = await api('/v1/audit?revision=' + encodeURIComponent(serverTool.revision)).catch(() => []);
    const last = rows[rows.length - 1];
    if (last) text += `\nserver audit #${rows.length}: ${last.capability} ${last.verdict} ${last.target}`;
  }
  $('fetch-out').textContent = text;
  await renderAudit();
  render();
};

// Popup permissions kept in the browser store: a reload remembers the checkbox.
const permissions = store ? await store.popupPermissions() : new PopupPermissions();
/** @type {HTMLInputElement} */ ($('perm')).checked = permissions.has(VIEWER, 'custom-html');
const popups = new PopupHost({ permissions, trusted: [VIEWER], audit: store ? (row) => store.audit(row) : undefined });
$('perm').onchange = () => {
  if (/** @type {HTMLInputElement} */ ($('perm')).checked) permissions.grant(VIEWER, 'custom-html');
  else permissions.revoke(VIEWER, 'custom-html');
};
$('popup').onclick = () => {
  const r = popups.open({ tool: 'viewer', revision: VIEWER, title: 'Report',
    html: '<h1>Report</h1><p>Rendered in an opaque origin: <script>document.write(self.origin)</script></p>' });
  $('popup-out').textContent = r.ok ? 'opened (noopener: the page holds no handle to it)' : `refused: ${r.code}`;
};
render();
await renderAudit();
/** @type {any} */ (window).demoReady = true;
