// Runs: calls a browser page executes in its own sandbox while `tycli serve`
// keeps the records (issue 14: the page uses the server's store, so `tycli
// task tree`, `tycli audit` and `tycli sandbox log` show what the browser did;
// docs/serve.md "Runs"). Each run is an invoke::ExternalRun.
//
//   POST /v1/runs                    {"tool","args"?,"parent"?,"timeoutMs"?,
//                                    "runtime":{"kind":"browser","version"}}
//        201 {"run":RUN ID,"task":ID,"tool":{"name","revision"},"settingsRevision",
//             "code","timeoutMs"}: compiled and pinned here; `code` is the
//             pinned revision's, the code the page must run (JavaScript)
//   POST /v1/runs/{run}/requests     {"op","args"}: one capability request of the
//        running tool (storage.get|set|delete|list, createSubtasksResult,
//        resolveInvocation; args as sandbox/pool.h's CapabilityOp), decided
//        here under the run's revision; 200 {"value"} or
//        {"error":{"code","message"}} with 403 denied, 400 invalid_request,
//        413 too_large, 404 not_found, 409 call_ended (the run's deadline passed)
//   POST /v1/runs/{run}/result       {"status","value"?|"error"?,"logs"?:[{"level","text"}],
//                                    "durationMs"?}: stores call, subtasks and
//        result; 200 = POST /v1/call's answer (host::invocation_json)
//   GET  /v1/runs                    [{"run","task","tool","revision","expiresInMs"}…]
//   POST /v1/sandbox-log             {"revision","tool","reason","detail"?}: appends a
//        destruction of a page's sandbox to the store's sandbox log (reason
//        "browser: REASON[: DETAIL]", pid 0); 201 {"seq","at"}
//
// A run lives until its result arrives or its deadline passes: the call's
// timeout (default and maximum as the host's) plus RunsOptions::grace. A run
// past it is stored as `timeout` ("the page reported no result …") when the
// next runs request comes or when the server stops (close()), and a request
// naming it is 404. At most RunsOptions::max_open runs holding max_open_bytes
// of start requests are open at once (429 past either). Fetch is not a run request: the page's strict mode sends
// it to the egress proxy (POST /v1/fetch with the task), which decides it
// with the same code. Errors: {"error":{"code","message","where"?}}.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "taskyon/http/server.h"
#include "taskyon/invoke/capabilities.h"
#include "taskyon/store/store.h"

namespace taskyon::http {

struct RunsOptions {
  // The server's store, opened once and shared by every run and request (an HTTP
  // thread uses its own SQLite connection of it, store.h "Threads"). Required.
  std::shared_ptr<store::Store> store;
  invoke::CapabilityOptions capabilities;            // TEST-ONLY network rules; never `ask`
  std::chrono::milliseconds default_timeout{10000};  // a run's timeout when the page names none, ms
  std::chrono::milliseconds max_timeout{600000};     // a larger timeoutMs is refused, ms
  std::chrono::milliseconds grace{10000};            // after the timeout, for the page to report, ms
  std::size_t max_open = 16;                         // open runs at once; more: 429
  // Their start requests' bodies together, bytes (a run holds its compiled call, arguments
  // included, until its result; 4 MiB of arguments take ~40x that in memory); more: 429.
  std::size_t max_open_bytes = 16u << 20;
};

class Runs {
 public:
  virtual ~Runs() = default;
  // Stores every open run as ended by `reason` (status cancelled) and takes
  // no more. Idempotent.
  virtual void close(std::string_view reason) = 0;
};

// Routes the endpoints above on `server`; the answer owns the open runs.
// Errc::bad_usage without options.store.
Result<std::shared_ptr<Runs>> mount_runs(Server& server, RunsOptions options);

}  // namespace taskyon::http
