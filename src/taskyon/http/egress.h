// The egress proxy of `tycli serve` (DESIGN §8, item 6 of issue 13; B8): a
// browser host in strict mode forwards each mediated fetch of a sandbox with
// the revision it runs, and the server decides and performs it with the very
// code a sandbox's fetch uses (invoke::HostCapabilities -> capability::fetch):
// the URL policy, the method class, the grant for (revision, origin, access)
// before any name is resolved, resolution within the timeout, the address
// rules at decision and at connect time, no ambient credentials, no
// redirects, the grant's limits; every decision is written to the audit log
// under that revision, as for a sandbox.
//
// Request (POST /v1/fetch, the sandbox fetch frame's args plus the revision):
//   {"revision":"sha256:…" (a full id the store holds), "url", "method"?,
//    "headers"?:[[name,value]…], "body"?:BASE64|null, "task"?: the browser's call task id}
// Answer 200: {"status","statusText","headers":[[n,v]…],"body":BASE64,"url"}
// (any upstream status, 3xx included, is a 200 answer: the tool reads it).
// Refusals: {"error":{"code","message"}} with the fetch codes of
// capability/fetch.h: denied 403, policy_blocked 403, invalid_request 400,
// too_large 413, timeout 504, network 502, cancelled 503; an unknown
// revision is not_found 404 and changes nothing (no audit row: nothing
// was decided for a revision the store does not hold).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "taskyon/http/server.h"
#include "taskyon/invoke/capabilities.h"
#include "taskyon/store/store.h"

namespace taskyon::http {

struct EgressOptions {
  // The server's store, shared by every request (an HTTP thread uses its own
  // SQLite connection of it, store.h "Threads"). Required.
  std::shared_ptr<store::Store> store;
  invoke::CapabilityOptions capabilities;  // the test-only network admission; never `ask`
  std::chrono::milliseconds deadline{60000};  // caps every request's own timeouts
};

// One proxied request: body is the request JSON above. `client_gone` is
// polled every 50 ms while the fetch runs: once it says the browser host hung
// up, the fetch is aborted (capability/fetch.h: cancelled) and audited so.
Response egress_fetch(const std::string& body, const EgressOptions& options,
                      const std::function<bool()>& client_gone = [] { return false; });

}  // namespace taskyon::http
