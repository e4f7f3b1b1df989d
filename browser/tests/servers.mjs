// The loopback server of the host page (browser/ as its root), shared by
// run.mjs (the checks) and bench.mjs (the figures).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import crypto from 'node:crypto';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');  // browser/
const pyodideDir = path.resolve(root, '..', 'node_modules', 'pyodide');
// The wasm core (issue 14, `make wasm`), served as /build-wasm/taskyon_core.wasm; 404 while it is not built.
const examplesDir = path.resolve(root, '..', 'examples', 'tools');
export const CORE_WASM = process.env.TASKYON_CORE_WASM || path.resolve(root, '..', 'build-wasm', 'taskyon_core.wasm');

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm', '.json': 'application/json', '.css': 'text/css; charset=utf-8', '.png': 'image/png' };

export function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

// relay (the B8 checks only): requests under `/serve/` are passed to `tycli serve` on
// 127.0.0.1:relay.port() as a same-origin server would get them — the server's own
// Host, no Origin (B8.page_served_by_tycli_serve uses `tycli serve --page` itself instead).
export function startHostServer({ relay = null } = {}) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (relay && url.pathname.startsWith('/serve/')) { relayTo(relay.port(), req, res, url); return; }
    // Pyodide's core files (browser Python, B6) from the npm package: /node_modules/pyodide/<file>.
    const py = /^\/node_modules\/pyodide\/([A-Za-z0-9_.-]+)$/.exec(url.pathname);
    const core = url.pathname === '/build-wasm/taskyon_core.wasm';
    // The example tool definitions (the demo installs them): /examples/tools/<name>.json.
    const example = /^\/examples\/tools\/([A-Za-z0-9_-]+\.json)$/.exec(url.pathname);
    const file = core ? CORE_WASM : example ? path.join(examplesDir, example[1])
      : py ? path.join(pyodideDir, py[1]) : path.resolve(root, '.' + decodeURIComponent(url.pathname));
    if ((!py && !core && !example && !file.startsWith(root + path.sep)) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404).end('not found');
      return;
    }
    const headers = { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream', 'cache-control': 'no-store' };
    if (url.searchParams.get('csp') === 'strict' && file.endsWith('.html')) headers['content-security-policy'] = strictHostCsp();
    res.writeHead(200, headers);
    fs.createReadStream(file).pipe(res);
  });
  return server;
}


// A strict CSP for a host page: its own scripts, the sandbox bootstrap's hash
// (a srcdoc iframe inherits the page's CSP, the intersection applies) and
// blob: workers; 'wasm-unsafe-eval' for the wasm core the page itself runs
// (the sandbox iframes' own CSP still refuses it); nothing else. The hash is
// computed from the file served.
export function strictHostCsp() {
  const boot = fs.readFileSync(path.join(root, 'sandbox', 'bootstrap.js'));
  const hash = 'sha256-' + crypto.createHash('sha256').update(boot).digest('base64');
  return `default-src 'none'; script-src 'self' '${hash}' 'wasm-unsafe-eval' blob:; worker-src blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; object-src 'none'`;
}

function relayTo(port, req, res, url) {
  if (!port) { res.writeHead(502).end('no tycli serve'); return; }
  const headers = { host: `127.0.0.1:${port}` };
  for (const h of ['authorization', 'content-type', 'content-length']) if (req.headers[h]) headers[h] = req.headers[h];
  const up = http.request({ host: '127.0.0.1', port, method: req.method, path: url.pathname.slice('/serve'.length) + url.search, headers }, (r) => {
    res.writeHead(r.statusCode, { 'content-type': r.headers['content-type'] || 'application/json', 'cache-control': 'no-store' });
    r.pipe(res);
  });
  up.on('error', (e) => { if (!res.headersSent) res.writeHead(502); res.end(String(e.message)); });
  req.pipe(up);
}
