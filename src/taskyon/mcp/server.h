// The MCP server protocol (Model Context Protocol, JSON-RPC 2.0), free of any
// transport (issue 13 items 2 and 3): `tycli mcp` feeds it stdin lines and
// writes what it emits to stdout; `tycli serve` feeds it the bodies of
// POST /mcp and routes what it emits to the HTTP response or SSE stream.
// (Not to be confused with external/mcp.h, the *client* of imported servers.)
//
// One Connection = one client = one host session (H3). It answers:
//   initialize                 protocol version negotiated (protocol_versions():
//                              the client's if supported, else the latest),
//                              capabilities {tools:{listChanged:true}, logging:{}};
//                              a version before 2025-06-18 gets no outputSchema
//                              and no structuredContent (they came with that
//                              revision), the result only as text content; a
//                              content block the version lacks (audio before
//                              2025-03-26, resource_link before 2025-06-18) from
//                              an imported server becomes a text block naming it
//   notifications/initialized  (nothing)
//   ping                       {}
//   tools/list                 every active tool: name, description,
//                              inputSchema (= parameters), outputSchema where
//                              declared, _meta {"taskyon/revision", "taskyon/settingsRevision",
//                              "taskyon/execution"} (H4); no pagination (one page)
//   tools/call                 {content:[{type:"text",text:JSON}], structuredContent,
//                              isError, _meta {"taskyon/task", "taskyon/resultTask",
//                              "taskyon/revision", "taskyon/settingsRevision",
//                              "taskyon/status"}} (H4). Tool errors, timeouts,
//                              refusals and invalid arguments are isError results
//                              with a message a model can act on; an unknown tool
//                              is JSON-RPC -32602. Runs on a worker of the
//                              connection (base/workers.h: the one idle last,
//                              or a new one, so a call never waits behind
//                              another; an idle one ends after 10 s); while it runs, logs
//                              stream as notifications/message and
//                              context.progress as notifications/progress (when
//                              the request's _meta has a progressToken), before
//                              the result.
//   logging/setLevel           the least severe level sent as notifications/message
//   notifications/cancelled    cancels the named running call: its sandbox is
//                              destroyed, the call stored as Cancelled (H5); no
//                              response is sent for a cancelled request
// and sends notifications/tools/list_changed when the active tools change (H6).
// Errors per JSON-RPC: -32700 parse error, -32600 invalid request, -32601
// method not found, -32602 invalid params, -32603 internal error. Requests
// before initialize are answered too (as servers in the wild are lenient);
// the version used then is the latest.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "taskyon/host/host.h"
#include "taskyon/json/json.h"

namespace taskyon::mcp {

// The revisions this server speaks, newest first: equal to the pinned SDK's
// (1.32.2) SUPPORTED_PROTOCOL_VERSIONS; keep them equal.
inline constexpr std::string_view kLatestProtocolVersion = "2025-11-25";
std::span<const std::string_view> protocol_versions();

// JSON-RPC batches (an array of messages) are part of MCP 2025-03-26 only:
// added there, removed by 2025-06-18 ("Remove support for JSON-RPC
// batching"). At any other negotiated version, or before initialize, a batch
// is answered with one -32600 (null id) that batch_refusal() words, and none
// of its messages is run; initialize is never accepted inside one.
inline constexpr std::string_view kBatchVersion = "2025-03-26";
bool accepts_batches(std::string_view negotiated_version);
std::string batch_refusal(std::string_view negotiated_version);

inline constexpr std::size_t kMaxMessageBytes = 8u << 20;      // one JSON-RPC message, bytes (-32600 past it)
inline constexpr std::size_t kMaxConcurrentCalls = 16;         // running tools/call per connection; past it isError

// One message the connection sends. `related` is the id of the request it
// belongs to (its response, or a progress/log notification of that call),
// null for messages of the connection itself (list_changed, a response to a
// message without an id). Streamable HTTP uses it to pick the stream.
struct Outgoing {
  json::Value message;
  json::Value related;
};

// Where a connection's messages go. Called from several threads (calls finish
// on their own); the Connection serializes the calls, so the sink needs no
// lock of its own. Must not call back into the Connection.
using Sink = std::function<void(Outgoing)>;

struct ServerInfo {
  std::string name = "taskyon";
  std::string version = "0.1.0";
  std::string instructions = {};  // sent in initialize's result when not empty
};

class Connection {
 public:
  // Opens a host session (label e.g. "stdio"). `host` must outlive it.
  Connection(host::Host& host, Sink sink, ServerInfo info = {}, std::string_view label = "mcp");
  ~Connection();  // close()
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // One JSON-RPC message (or, at kBatchVersion only, a batch array, answered
  // as the single messages are) as text: -32700 for text that is not JSON,
  // -32600 past kMaxMessageBytes or for a batch at another version. Returns at once; tools/call runs on a worker thread.
  void receive(std::string_view text);
  void receive_value(const json::Value& message);  // the same, already parsed
  // A message the transport did not keep because it was over
  // kMaxMessageBytes (stdio drops such a line up to its newline): answered
  // -32600 with a null id, as receive() answers one it is given whole.
  void receive_oversized();

  // Cancels every running call (H5: sandboxes destroyed, calls stored as
  // Cancelled), waits for their threads, closes the host session. Nothing is
  // emitted after it returns. Idempotent.
  void close();

  // The negotiated protocol version; empty before initialize.
  std::string protocol_version() const;
  bool initialized() const;
  const host::SessionId& session() const;
  std::size_t running_calls() const;
  std::size_t idle_workers() const;  // worker threads waiting for a tools/call (tests)

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace taskyon::mcp
