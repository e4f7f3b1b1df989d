// A real `tycli serve` for strict mode (B8), shared by run.mjs (the checks), bench.mjs and the
// demo's screenshot: its own TASKYON_HOME in a temp dir, a self-signed HTTPS upstream on
// loopback (admitted by tycli's TEST ONLY --fetch-allow-cidr and --fetch-ca-file, as
// tests/serve_test.cc does), tools installed and one read grant given through the CLI.
import https from 'node:https';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { listen } from './servers.mjs';

// browser/: served by the server itself too (`--page`), the checks' host page at tests/page.html.
const BROWSER_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// The tool code the browser runs in strict mode (also the installed revisions' code).
export const STRICT_CODE = `async ({u, method = 'GET'}) => {
  try { const r = await fetch(u, {method}); return {status: r.status, body: await r.text()}; }
  catch (e) { return {error: e.name + ':' + (e.code || '')}; }
}`;

/**
 * Starts it all. Tools `getter` (granted read on the upstream's origin) and `other` (no grant).
 * @param {string} tycli the binary
 * @returns {Promise<{home: string, port: number, token: string, pageUrl: string, origin: string, revisions: Record<string, string>,
 *   upstreamLog: object[], cli: (args: string[]) => any, stop: () => Promise<void>}>}
 */
export async function startStrict(tycli) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskyon-b8-'));
  const home = path.join(dir, 'home');
  const upstreamLog = [];
  let serve = null, upstream = null;
  const cli = (args) => {
    const r = spawnSync(tycli, ['--json', ...args], { env: { ...process.env, TASKYON_HOME: home }, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`tycli ${args.join(' ')}: exit ${r.status}: ${r.stderr.trim()}`);
    return r.stdout.trim() ? JSON.parse(r.stdout) : null;
  };
  const stop = async () => {
    if (serve && serve.exitCode === null) {
      const exited = new Promise((r) => serve.once('exit', r));
      serve.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    }
    if (upstream) upstream.close();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const gen = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
      '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-addext', 'basicConstraints=critical,CA:TRUE'], { encoding: 'utf8' });
    if (gen.status !== 0) throw new Error('openssl req failed: ' + gen.stderr);
    upstream = https.createServer({ key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')) }, (req, res) => {
      upstreamLog.push({ method: req.method, url: req.url, origin: req.headers.origin || null, ua: req.headers['user-agent'] || '',
        authorization: req.headers.authorization || null, cookie: req.headers.cookie || null });
      if (req.url === '/no-content') { res.writeHead(204).end(); return; }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ upstream: true, path: req.url }));
    });
    const origin = `https://127.0.0.1:${await listen(upstream)}`;
    const revisions = {};
    for (const name of ['getter', 'other']) {
      const file = path.join(dir, name + '.json');
      fs.writeFileSync(file, JSON.stringify({ name, description: 'B8 check tool', parameters: { type: 'object', properties: {} },
        execution: 'sandboxed-code', runtime: 'javascript', code: STRICT_CODE }));
      revisions[name] = cli(['tool', 'install', file])[0].revision;
    }
    cli(['grant', 'fetch', 'getter', origin, '--access', 'read']);
    serve = spawn(tycli, ['--json', '--fetch-allow-cidr', '127.0.0.1/32', '--fetch-ca-file', path.join(dir, 'cert.pem'),
      'serve', '--port', '0', '--page', BROWSER_ROOT, '--page-start', 'tests/page.html'], { env: { ...process.env, TASKYON_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    serve.stderr.on('data', (d) => { err += d; });
    const first = await new Promise((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error('tycli serve did not start in 10 s: ' + err)), 10000);
      serve.stdout.on('data', (d) => { out += d; const nl = out.indexOf('\n'); if (nl >= 0) { clearTimeout(timer); resolve(out.slice(0, nl)); } });
      serve.on('exit', (code) => { clearTimeout(timer); reject(new Error(`tycli serve exited ${code}: ${err}`)); });
    });
    const where = JSON.parse(first);
    const token = fs.readFileSync(where.tokenFile, 'utf8').trim();
    return { home, port: where.port, token, pageUrl: where.pageUrl, origin, revisions, upstreamLog, cli, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
