// The browser host demo (docs/browser.md "Demo"): the sandbox host and popups of browser/host/
// in one static page. Revision ids here are labels: the WebAssembly core that computes them from
// the manifest (the CLI's ids) is not wired into the browser yet.
import { SandboxHost } from '../host/host.js';
import { PopupHost, PopupPermissions } from '../host/popup.js';

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const REV = { v1: 'sha256:demo-counter-v1', v2: 'sha256:demo-counter-v2' };
const VIEWER = 'sha256:demo-viewer';
const COUNTER = '({step = 1}) => ({count: globalThis.n = (globalThis.n ?? 0) + step, sandboxSince: globalThis.t0 ??= Date.now()})';
const FETCHER = 'async ({u}) => { try { const r = await fetch(u); return "HTTP " + r.status + ": " + (await r.text()).slice(0, 80); } catch (e) { return e.name + " " + (e.code || "") + ": " + e.message; } }';

// Strict mode: #token=<tycli serve's token>&tool=<a tool installed on the server> (default fetcher);
// the page runs that tool's stored revision and code, and shows the server's audit rows.
const params = new URLSearchParams(location.hash.slice(1));
const token = params.get('token') || '';
const serverToolName = params.get('tool') || 'fetcher';
/** @type {{revision: string, code: string} | null} */
let serverTool = null;
const api = (path) => fetch('/serve' + path, { headers: { Authorization: 'Bearer ' + token }, cache: 'no-store' })
  .then(async (r) => { const j = await r.json(); if (!r.ok) throw new Error(j.error ? j.error.code + ': ' + j.error.message : 'HTTP ' + r.status); return j; });
let active = 'v1';
const counterLines = [];
let host = makeHost(false);
const hosts = new Set([host]);

function makeHost(strict) {
  return new SandboxHost(strict ? { egress: { endpoint: '/serve/v1/fetch', token } } : {});
}

function render() {
  const rows = [...hosts].flatMap((h) => h.log).sort((a, b) => a.at - b.at).slice(-14);
  $('log').querySelector('tbody').replaceChildren(...rows.map((e, i) => {
    const tr = document.createElement('tr');
    for (const [v, cls] of [[i + 1], [e.event, e.event], [e.sandbox], [e.tool], [e.revision], [e.session], [e.reason || '']]) {
      const td = document.createElement('td');
      td.textContent = String(v);
      if (cls) td.className = cls;
      tr.append(td);
    }
    return tr;
  }));
}

async function counter(session) {
  const r = await host.call({ tool: 'counter', revision: REV[active], session, code: COUNTER });
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
    $('activate-out').textContent = `active: ${rev} (${REV[rev]}); the other revision's sandboxes are gone`;
    render();
  };
}
$('stuck').onclick = async () => {
  const t = performance.now();
  const r = await host.call({ tool: 'stuck', revision: 'sha256:demo-stuck', code: '() => { while (true) {} }', timeoutMs: 200 });
  $('stuck-out').textContent = `${r.error ? r.error.code : 'returned?'} after ${Math.round(performance.now() - t)} ms; sandbox ${r.sandbox ?? '—'} removed`;
  render();
};
$('strict').onchange = () => {
  const strict = /** @type {HTMLInputElement} */ ($('strict')).checked;
  if (strict && !/^[0-9a-f]{64}$/.test(token)) {
    $('fetch-out').textContent = 'strict mode needs the server token: open this page with #token=<tycli serve token>';
    /** @type {HTMLInputElement} */ ($('strict')).checked = false;
    return;
  }
  host = makeHost(strict);
  hosts.add(host);
  $('mode').textContent = host.mode;
  $('fetch-out').textContent = `a new host in ${host.mode} mode`;
  if (strict) {
    api('/v1/tools/' + encodeURIComponent(serverToolName)).then((t) => {
      serverTool = { revision: t.revision, code: t.definition.code };
      $('fetch-out').textContent = `strict: the server's ${serverToolName} ${t.revision.slice(0, 19)}…`;
    }, (e) => { $('fetch-out').textContent = `strict: the server has no tool ${serverToolName}: ${e.message}`; });
  }
};
$('fetch').onclick = async () => {
  const u = /** @type {HTMLInputElement} */ ($('url')).value;
  const strict = host.mode === 'strict' && serverTool;
  const r = strict
    ? await host.call({ tool: serverToolName, revision: serverTool.revision, code: serverTool.code, args: { u } })
    : await host.call({ tool: 'fetcher', revision: 'sha256:demo-fetcher', code: FETCHER, args: { u } });
  let text = `${host.mode}: ` + (r.ok ? (typeof r.value === 'string' ? r.value : JSON.stringify(r.value)) : r.error.code);
  if (strict) {
    const rows = await api('/v1/audit?revision=' + encodeURIComponent(serverTool.revision)).catch(() => []);
    const last = rows[rows.length - 1];
    if (last) text += `\nserver audit #${rows.length}: ${last.capability} ${last.verdict} ${last.target}`;
  }
  $('fetch-out').textContent = text;
  render();
};

const permissions = new PopupPermissions();
const popups = new PopupHost({ permissions, trusted: [VIEWER] });
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
/** @type {any} */ (window).demoReady = true;
