// An MCP server over stdio with one tool, `blocks`, whose result holds a
// content block of each type some MCP revision lacks (audio: 2025-03-26 on,
// resource_link: 2025-06-18 on) and a text block. tests/host_test.cc imports
// it to see what a client at each revision is handed.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const server = new Server({ name: "content-blocks", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{ name: "blocks", description: "one block of each type", inputSchema: { type: "object" } }],
}));
server.setRequestHandler(CallToolRequestSchema, async () => ({
  content: [
    { type: "text", text: "three blocks" },
    { type: "audio", data: "UklGRiQAAABXQVZF", mimeType: "audio/wav" },
    { type: "resource_link", uri: "file:///data/report.csv", name: "report", mimeType: "text/csv",
      description: "the quarterly numbers" },
  ],
}));
await server.connect(new StdioServerTransport());
