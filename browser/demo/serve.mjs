#!/usr/bin/env node
// Serves the browser host demo on loopback until Ctrl-C:
//   node browser/demo/serve.mjs [--tycli build/tycli]
// browser/ through the checks' page server; with --tycli also a real `tycli serve` in a
// temporary TASKYON_HOME (browser/tests/strict.mjs: tool `getter` granted read on an HTTPS
// upstream on loopback) behind the page server's /serve/* relay, and the printed URL carries
// its token for the strict-mode toggle. `tycli serve --page` serves the page itself (docs/serve.md "The page").
import { listen, startHostServer } from '../tests/servers.mjs';
import { startStrict } from '../tests/strict.mjs';

const ti = process.argv.indexOf('--tycli');
const strict = ti > 0 ? await startStrict(process.argv[ti + 1]) : null;
const server = startHostServer({ relay: { port: () => (strict ? strict.port : 0) } });
const port = await listen(server);
console.log(`demo: http://127.0.0.1:${port}/demo/index.html` + (strict ? `#token=${strict.token}&tool=getter` : ''));
if (strict) console.log(`strict mode: fetch ${strict.origin}/anything (granted), or another URL (refused by the server)`);
const stop = async () => { server.close(); if (strict) await strict.stop(); process.exit(0); };
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
