// Drives `tycli mcp` with the official MCP TypeScript SDK client over stdio
// (tests/mcp_stdio_test.cc starts it). It records what it saw and prints one
// JSON object on stdout; the GoogleTest asserts on it, so a wrong shape fails
// there with the whole observation in the message.
//
//   node stdio_client.mjs CONFIG_JSON
//   CONFIG_JSON: {"tycli": PATH, "home": DIR, "v1": REV, "v2": REV}
// The store in DIR holds counter, uppercase (v1 active, v2 installed), fails,
// stuck and chatty (see the test).
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const config = JSON.parse(process.argv[2]);
const env = { TASKYON_HOME: config.home, TMPDIR: config.home + '/tmp', PATH: process.env.PATH };
const seen = { events: [] };
const t0 = performance.now();
const mark = (what) => seen.events.push({ what, ms: Math.round(performance.now() - t0) });

async function connect(name) {
  const transport = new StdioClientTransport({ command: config.tycli, args: ['mcp', '--activation-poll', '100'], env, stderr: 'pipe' });
  const client = new Client({ name, version: '1.0.0' });
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params);
    mark('log:' + n.params.data);
  });
  await client.connect(transport);
  return { client, transport, logs };
}

// Calls and records the whole result; an exception (a JSON-RPC error) is recorded too.
async function call(client, name, args, options) {
  try {
    return await client.callTool({ name, arguments: args }, undefined, options);
  } catch (e) {
    return { thrown: { code: e.code, message: String(e.message) } };
  }
}

const a = await connect('client-a');
seen.serverVersion = a.client.getServerVersion();
seen.capabilities = a.client.getServerCapabilities();
seen.protocolVersion = a.transport._protocolVersion ?? null;
seen.tools = (await a.client.listTools()).tools;

// H3: two sessions (two tycli mcp processes) count on their own.
seen.countA = [];
seen.countA.push(await call(a.client, 'counter', {}));
seen.countA.push(await call(a.client, 'counter', {}));
const b = await connect('client-b');
seen.countB = [await call(b.client, 'counter', {})];
seen.countA.push(await call(a.client, 'counter', {}));

seen.upper = await call(a.client, 'uppercase', { input: 'abc' });
seen.toolError = await call(a.client, 'fails', {});
seen.invalidArgs = await call(a.client, 'counter', { step: 'x' });
seen.unknownTool = await call(a.client, 'no_such_tool', {});

// Progress and logs stream before the result.
const progress = [];
const chatty = call(a.client, 'chatty', {}, {
  onprogress: (p) => { progress.push(p); mark('progress:' + p.progress); },
});
seen.chatty = await chatty;
mark('result:chatty');
seen.progress = progress;
seen.chattyLogs = a.logs.filter((l) => l.logger === 'chatty');

// H5: cancelling a stuck call. The tool logs "stuck" first, then never returns.
const controller = new AbortController();
const stuckLogged = new Promise((resolve) => {
  const timer = setInterval(() => {
    if (a.logs.some((l) => l.data === 'stuck')) { clearInterval(timer); resolve(); }
  }, 5);
});
const stuck = call(a.client, 'stuck', {}, { signal: controller.signal });
await stuckLogged;
controller.abort('test cancels');
seen.stuck = await stuck;
// The server sends no response to a cancelled request; a ping after it still works.
seen.pingAfterCancel = await a.client.ping();

// H6: activating v2 of uppercase (another process, tycli tool activate) sends
// list_changed; a call pinned to v1 still runs v1.
const changed = new Promise((resolve) => {
  a.client.setNotificationHandler(ToolListChangedNotificationSchema, () => { mark('list_changed'); resolve(true); });
  setTimeout(() => resolve(false), 5000);
});
execFileSync(config.tycli, ['tool', 'activate', 'uppercase', config.v2], { env });
seen.listChanged = await changed;
seen.toolsAfter = (await a.client.listTools()).tools;
seen.upperV2 = await call(a.client, 'uppercase', { input: 'abc' });
seen.upperV1Pinned = await call(a.client, config.v1, { input: 'abc' });

await b.client.close();
await a.client.close();
console.log(JSON.stringify(seen));
