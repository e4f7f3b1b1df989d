// Drives `tycli serve`'s /mcp with the official MCP TypeScript SDK Client over
// StreamableHTTPClientTransport to see what streams (tests/serve_test.cc
// starts the server; its store holds chatty, stuck and silent, see the test):
// progress and log notifications of a running call, a cancelled call, and a
// client that disconnects mid-call. Prints one JSON object of what it saw.
//
//   node http_stream_client.mjs CONFIG_JSON     CONFIG_JSON: {"url": "http://127.0.0.1:PORT/mcp", "token": HEX}
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const config = JSON.parse(process.argv[2]);
const seen = { events: [] };
const t0 = performance.now();
const mark = (what) => seen.events.push({ what, ms: Math.round(performance.now() - t0) });

async function connect(name) {
  const transport = new StreamableHTTPClientTransport(new URL(config.url), {
    requestInit: { headers: { Authorization: `Bearer ${config.token}` } },
  });
  const client = new Client({ name, version: '1.0.0' });
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params);
    mark('log:' + n.params.data);
  });
  await client.connect(transport);
  return { client, transport, logs };
}

async function call(client, name, args, options) {
  try {
    return await client.callTool({ name, arguments: args }, undefined, options);
  } catch (e) {
    return { thrown: { code: e.code, message: String(e.message) } };
  }
}

const waitFor = (test) => new Promise((resolve) => {
  const timer = setInterval(() => { if (test()) { clearInterval(timer); resolve(true); } }, 5);
  setTimeout(() => { clearInterval(timer); resolve(false); }, 10000);
});

const a = await connect('client-a');
// Progress (the request carries a progressToken) and logs arrive while the call runs.
const progress = [];
seen.chatty = await call(a.client, 'chatty', {}, {
  onprogress: (p) => { progress.push(p); mark('progress:' + p.progress); },
});
mark('result:chatty');
seen.progress = progress;
seen.chattyLogs = a.logs.filter((l) => l.logger === 'chatty');

// H5 over HTTP: the tool logs "stuck" (seen only if it streams), then never returns; aborting sends notifications/cancelled.
const controller = new AbortController();
const stuck = call(a.client, 'stuck', {}, { signal: controller.signal });
seen.stuckLogged = await waitFor(() => a.logs.some((l) => l.data === 'stuck'));
mark('abort:stuck');
controller.abort('test cancels');
seen.stuck = await stuck;
seen.pingAfterCancel = await a.client.ping();

// A client that goes away mid-call (its connection closed, no DELETE): the call is cancelled.
const b = await connect('client-b');
seen.sessionB = b.transport.sessionId;
const silent = call(b.client, 'silent', {});
await new Promise((r) => setTimeout(r, 600));
mark('disconnect:silent');
await b.transport.close();
seen.silent = await silent;

await a.transport.terminateSession();
await a.client.close();
process.stdout.write(JSON.stringify(seen) + '\n');
