// Drives `tycli serve`'s /mcp with the official MCP TypeScript SDK Client over
// StreamableHTTPClientTransport, with the bearer token (tests/serve_test.cc
// starts the server). Prints one JSON object of what it saw; the test asserts.
//
//   node http_client.mjs CONFIG_JSON     CONFIG_JSON: {"url": "http://127.0.0.1:PORT/mcp", "token": HEX}
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const config = JSON.parse(process.argv[2]);
const seen = {};

async function connect(name, token) {
  const transport = new StreamableHTTPClientTransport(new URL(config.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

async function call(client, name, args) {
  try {
    return await client.callTool({ name, arguments: args });
  } catch (e) {
    return { thrown: { code: e.code, message: String(e.message) } };
  }
}

try {
  await connect('no-token', '0'.repeat(64));
  seen.wrongToken = 'connected';
} catch (e) {
  seen.wrongToken = String(e.message);
}

const a = await connect('client-a', config.token);
seen.sessionId = a.transport.sessionId ?? null;
seen.serverVersion = a.client.getServerVersion();
seen.protocolVersion = a.transport._protocolVersion ?? null;
seen.tools = (await a.client.listTools()).tools;
seen.upper = await call(a.client, 'upper', { input: 'abc' });
seen.invalid = await call(a.client, 'upper', { input: 5 });
// H3: two sessions count on their own.
seen.countA = [await call(a.client, 'counter', {}), await call(a.client, 'counter', {})];
const b = await connect('client-b', config.token);
seen.countB = [await call(b.client, 'counter', {})];
seen.countA.push(await call(a.client, 'counter', {}));
await b.transport.terminateSession();
await a.transport.terminateSession();
await a.client.close();
await b.client.close();
process.stdout.write(JSON.stringify(seen) + '\n');
