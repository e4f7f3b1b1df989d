// A loopback reverse proxy for the MCP conformance suite, which sends no
// Authorization header: it adds `tycli serve`'s bearer token (H1) and the
// server's own Host (H2) to every request and passes the answer on as it
// streams. Only for tests (the conformance run in tests/serve_test.cc).
//
//   node conformance_proxy.mjs CONFIG_JSON   CONFIG_JSON: {"port": SERVE_PORT, "token": HEX, "lifetimeMs"?: N}
// Prints {"port": PROXY_PORT} once it listens; ends when killed or after
// lifetimeMs (default 300000), so a test that dies leaks nothing for long.
import http from 'node:http';

const config = JSON.parse(process.argv[2]);
const server = http.createServer((req, res) => {
  const headers = { ...req.headers, host: `127.0.0.1:${config.port}`, authorization: `Bearer ${config.token}` };
  delete headers.origin;
  const upstream = http.request({ host: '127.0.0.1', port: config.port, method: req.method, path: req.url, headers }, (up) => {
    res.writeHead(up.statusCode, up.headers);
    up.pipe(res);
  });
  upstream.on('error', () => { res.destroy(); });
  res.on('close', () => { if (!res.writableEnded) upstream.destroy(); });
  req.pipe(upstream);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'));
setTimeout(() => process.exit(0), config.lifetimeMs ?? 300000);
