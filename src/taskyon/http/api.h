// The JSON API of `tycli serve` (DESIGN §8; docs/serve.md lists every
// endpoint). Shapes are the CLI's --json ones (taskyon/host/views.h):
//   GET  /v1/tools                 host::tool_list_json
//   GET  /v1/tools/{ref}           host::tool_show_json (ref: name, id or prefix, R4)
//   POST /v1/tools[?activate=1]    body: one manifest; host::install_json (201 created, 200 already stored)
//   POST /v1/call                  {"tool","args"?,"timeoutMs"?}; host::invocation_json (a tool's
//                                  failure is a 200 whose "status" says so, as `tycli call --json`)
//   GET  /v1/tasks/{id}            tasks::task_json
//   GET  /v1/tasks/{id}/tree       [host::tree_json]
//   GET  /v1/audit?since&revision&limit   [host::audit_row_json…]
//   POST /v1/fetch                 the egress proxy (egress.h)
// Errors: {"error":{"code","message","where"?}}, code = taskyon::code_name or
// one of the transport's (server.h); status 400 bad input, 403 refused,
// 404 not found, 409 ambiguous, 429 too many concurrent calls, 500 our store.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "taskyon/host/host.h"
#include "taskyon/http/server.h"
#include "taskyon/invoke/capabilities.h"

namespace taskyon::http {

struct ApiOptions {
  // The host's store file opened once for the egress proxy (POST /v1/fetch,
  // egress.h); required.
  std::shared_ptr<store::Store> egress_store;
  invoke::CapabilityOptions capabilities;    // how the proxy's fetches are decided (a call's: the host's)
  std::size_t max_concurrent_calls = 4;      // /v1 calls and proxy fetches at once; more get 429
};

// Routes /v1/… on `server`. Calls go through the host core (host/host.h) in
// one host session of the JSON API ("v1"); reads and installs use the host's
// store connection (Host::with_store). `host` must outlive the server's run().
// Errc::bad_usage without options.egress_store.
Result<void> mount_api(Server& server, host::Host& host, ApiOptions options);

// The HTTP status for a taskyon error code.
int status_for(Errc code);

}  // namespace taskyon::http
