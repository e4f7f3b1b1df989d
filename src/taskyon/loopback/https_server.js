// The loopback HTTPS test server (src/taskyon/loopback/loopback.h). Run as
//   node https_server.js CERT_FILE KEY_FILE
// Listens on 127.0.0.1, port 0 (the kernel picks), prints {"port":N} and a
// newline on stdout once listening, and exits when its stdin closes (so it
// never outlives the process that started it). Routes:
//   /ok                 200 {"ok":true}
//   /echo               200 {"method","url","headers":[[name,value],...],"body"} of this request
//   /redirect           302, Location: /ok (never followed by the fetch capability)
//   /slow?ms=N          200 {"slept":N} after N ms (default 2000)
//   /endless            200, a body that never ends (64 KiB chunks, no Content-Length)
//   /large?bytes=N      200, N bytes of 'x' with Content-Length; &chunked=1 without it
//   /cookie             200, Set-Cookie: session=loopback-cookie; Path=/
//   /count              200 {"requests":N}: requests served so far, /count itself not counted
//   anything else       404
'use strict';
const https = require('node:https');
const fs = require('node:fs');

const [certFile, keyFile] = process.argv.slice(2);
let served = 0;
let abandoned = 0;  // /slow requests whose client hung up first (see /count)

function json(res, status, value, extra = {}) {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...extra });
  res.end(body);
}

function pairs(raw) {
  const out = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i], raw[i + 1]]);
  return out;
}

const server = https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, (req, res) => {
  const url = new URL(req.url, 'https://loopback.invalid');
  const count = served;
  if (url.pathname !== '/count') served++;
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    switch (url.pathname) {
      case '/ok':
        return json(res, 200, { ok: true });
      case '/echo':
        return json(res, 200, {
          method: req.method,
          url: req.url,
          headers: pairs(req.rawHeaders),
          body: Buffer.concat(chunks).toString('utf8'),
        });
      case '/redirect':
        res.writeHead(302, { Location: url.searchParams.get('to') ?? '/ok', 'Content-Length': 0 });
        return res.end();
      case '/slow': {
        const ms = Number(url.searchParams.get('ms') ?? 2000);
        const timer = setTimeout(() => json(res, 200, { slept: ms }), ms);
        res.on('close', () => {
          clearTimeout(timer);
          if (!res.writableEnded) abandoned++;  // the client hung up before the answer
        });
        return;
      }
      case '/endless': {
        res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
        const chunk = Buffer.alloc(64 * 1024, 'y');
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
          if (!res.destroyed) res.once('drain', pump);
        };
        res.on('close', () => res.removeAllListeners('drain'));
        return pump();
      }
      case '/large': {
        const bytes = Number(url.searchParams.get('bytes') ?? 0);
        const headers = { 'Content-Type': 'application/octet-stream' };
        if (url.searchParams.get('chunked') !== '1') headers['Content-Length'] = bytes;
        res.writeHead(200, headers);
        return res.end(Buffer.alloc(bytes, 'x'));
      }
      case '/cookie':
        return json(res, 200, { cookie: 'set' }, { 'Set-Cookie': 'session=loopback-cookie; Path=/' });
      case '/count':
        return json(res, 200, { requests: count, abandoned });
      default:
        return json(res, 404, { error: 'no such route' });
    }
  });
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n');
});
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
