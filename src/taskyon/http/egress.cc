#include "taskyon/http/egress.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "taskyon/capability/fetch.h"
#include "taskyon/http/api.h"
#include "taskyon/json/json.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/store/store.h"

namespace taskyon::http {

namespace {

int status_for_fetch(std::string_view code) {
  if (code == capability::kDenied || code == capability::kPolicyBlocked) return 403;
  if (code == capability::kInvalidRequest) return 400;
  if (code == capability::kTooLarge) return 413;
  if (code == capability::kTimeout) return 504;
  if (code == capability::kCancelled) return 503;
  return 502;  // network
}

Response bad(std::string_view message) { return Response::error(400, "invalid_request", message); }

}  // namespace

Response egress_fetch(const std::string& body, const EgressOptions& options,
                      const std::function<bool()>& client_gone) {
  auto request = json::parse(body, {.max_depth = 16, .max_bytes = body.size()});
  if (!request) return Response::error(400, "invalid_json", request.error().describe());
  if (!request->is_object()) return bad("the body must be {\"revision\",\"url\",\"method\"?,\"headers\"?,\"body\"?}");
  for (const auto& [key, _] : request->items())
    if (key != "revision" && key != "url" && key != "method" && key != "headers" && key != "body" && key != "task")
      return bad(fmt::format("unknown member \"{}\" (revision, url, method, headers, body, task)", key));
  if (!request->contains("revision") || !(*request)["revision"].is_string() ||
      !json::is_content_id((*request)["revision"].get_ref<const std::string&>()))
    return bad("revision must be the full id (\"sha256:…\") of the revision the browser host runs");
  const std::string revision = (*request)["revision"].get<std::string>();
  std::string task;
  if (request->contains("task")) {
    if (!(*request)["task"].is_string() || !json::is_content_id((*request)["task"].get_ref<const std::string&>()))
      return bad("task must be a full task id (\"sha256:…\")");
    task = (*request)["task"].get<std::string>();
  }

  // The server's Store: this thread's own connection of it, so concurrent
  // requests' decisions never share a SQLite handle.
  store::Store& st = *options.store;
  // Only revisions the store holds: an unknown one is refused before anything is decided.
  auto held = st.revision(revision);
  if (!held) return Response::error(status_for(held.error().code), code_name(held.error().code), held.error().message);

  json::Value args = *request;
  args.erase("revision");
  args.erase("task");
  tasks::Task call;
  call.id = task;
  invoke::CapabilityOptions capabilities = options.capabilities;
  capabilities.ask = {};  // nobody to ask: an ungranted origin is denied
  sandbox::CancelToken cancel;
  sandbox::CapabilityReply reply;
  {
    ClientWatch watch(client_gone, [&] { cancel.cancel(); });  // a browser host that hung up aborts its fetch
    invoke::HostCapabilities host(st, std::move(call), {}, revision, held->manifest.name, std::move(capabilities));
    reply = host.handle(revision, sandbox::CapabilityOp::fetch, args, cancel,
                        std::chrono::steady_clock::now() + options.deadline);
  }
  if (!reply.ok()) return Response::error(status_for_fetch(*reply.code), *reply.code, reply.message);
  return Response::json(200, reply.value);
}

}  // namespace taskyon::http
