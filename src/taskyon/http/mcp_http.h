// MCP Streamable HTTP at /mcp of `tycli serve` (MCP 2025-11-25, "Transports";
// docs/serve.md), over the transport-free server of taskyon/mcp/server.h.
// Every request has passed H1/H2 first (server.h).
//   POST   JSON-RPC message, or a batch in a session at MCP 2025-03-26
//          (mcp::accepts_batches; else 400, -32600, nothing of it run).
//          `initialize` (never in a batch) opens a session: a fresh
//          mcp::Connection (= one host session, H3) and an `Mcp-Session-Id`
//          (32 random hex digits) in the response's headers; every later
//          request must carry it (none: 400; unknown or ended: 404).
//          A POST whose requests are all answered within 1 s and whose calls
//          sent nothing meanwhile is answered application/json (the response,
//          or an array for a batch). Otherwise, when its Accept names
//          text/event-stream, it is answered as an SSE stream: each
//          notifications/progress (the call's _meta.progressToken) and
//          notifications/message of its calls as an `event: message` as it
//          comes, then the responses, then the stream ends; a ": keep-alive"
//          comment every 200 ms finds a client that went away, and its running
//          calls are then cancelled (H5). A client that accepts only JSON gets
//          JSON when the responses exist (its calls' notifications dropped).
//          A POST of only notifications or responses is 202 with no body. A
//          request the client cancelled (notifications/cancelled, H5: sandbox
//          destroyed) gets no JSON-RPC response; a JSON POST of nothing else
//          ends 202 with no body. A request id still running in the session
//          is refused (400, -32600). No event ids: streams are not resumable.
//   GET    405 (no server-initiated SSE stream; the spec allows it), so
//          notifications/tools/list_changed reaches only stdio clients.
//   DELETE ends the session: its running calls are cancelled (H5), its
//          sandboxes destroyed; 204.
// `MCP-Protocol-Version`, when sent, must be one of mcp::protocol_versions() (400).
// At most kMaxSessions sessions at once (503 past it).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "taskyon/host/host.h"
#include "taskyon/http/server.h"

namespace taskyon::http {

inline constexpr std::size_t kMaxSessions = 64;

class McpEndpoint {
 public:
  // `wait` bounds how long a POST waits for its responses (the host's
  // longest call plus a margin): past it, its running calls are cancelled
  // (as notifications/cancelled would) and each gets a -32603 "no response
  // in time" error. /mcp calls are not counted against /v1's
  // --max-concurrent-calls: each session runs at most 16 tools/call at once
  // (mcp/server.h), and each waiting POST holds one server worker thread.
  McpEndpoint(host::Host& host, std::chrono::milliseconds wait);
  ~McpEndpoint();  // close_all()
  McpEndpoint(const McpEndpoint&) = delete;
  McpEndpoint& operator=(const McpEndpoint&) = delete;

  // Routes /mcp on `server`; this object must outlive the server's run().
  void mount(Server& server);
  // Ends every session (calls cancelled, sandboxes destroyed). Idempotent.
  void close_all();
  std::size_t session_count() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace taskyon::http
