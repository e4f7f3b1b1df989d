#include "taskyon/invoke/invoke.h"

#include <deque>
#include <mutex>

#include <fmt/format.h>

#include "taskyon/external/mcp.h"
#include "taskyon/invoke/record.h"
#include "taskyon/invoke/runtime_record.h"
#include "taskyon/native/native.h"
#include "taskyon/store/modules.h"

namespace taskyon::invoke {
namespace {

// Runs a trusted-native tool in the host: host authority, no sandbox (R6).
sandbox::CallOutcome run_native(const native::NativeFunction& fn, const json::Value& args,
                                const native::Context& context) {
  const auto started = std::chrono::steady_clock::now();
  sandbox::CallOutcome out;
  try {
    auto value = fn.run(args, context);
    if (value) {
      out.value = std::move(*value);
    } else {
      out.status = sandbox::Status::tool_error;
      out.error = value.error().describe();
    }
  } catch (const std::exception& e) {
    out.status = sandbox::Status::tool_error;
    out.error = std::string("native function failed: ") + e.what();
  }
  out.duration = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  return out;
}

// An HTTPS JSON endpoint (DESIGN §3, external service): the arguments are
// POSTed as JSON through the same mediated fetch, policy, grant (write on the
// endpoint's origin for this revision) and audit as sandboxed code's fetch;
// a 2xx JSON response is the result, anything else a tool error.
sandbox::CallOutcome call_https_service(const std::string& revision, const registry::Manifest& m,
                                        const json::Value& args, const Options& options,
                                        sandbox::Capabilities* capabilities) {
  const auto started = std::chrono::steady_clock::now();
  sandbox::CallOutcome out;
  out.status = sandbox::Status::tool_error;
  const json::Value request = {
      {"url", m.service["https"]["url"]},
      {"method", "POST"},
      {"headers", json::Value::array({json::Value::array({"content-type", "application/json"}),
                                      json::Value::array({"accept", "application/json"})})},
      {"body", base64_encode(args.dump())}};
  auto reply = capabilities->handle(revision, sandbox::CapabilityOp::fetch, request, options.cancel,
                                    started + options.timeout);
  out.duration = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  if (!reply.ok()) {
    out.status = *reply.code == "timeout" ? sandbox::Status::timeout
                 : *reply.code == "cancelled" ? sandbox::Status::cancelled
                                              : sandbox::Status::tool_error;
    out.error = fmt::format("{}: {}", *reply.code, reply.message);
    return out;
  }
  const int status = reply.value["status"].get<int>();
  const std::string body = base64_decode(reply.value["body"].get<std::string>()).value_or("");
  if (status < 200 || status > 299) {
    out.error = fmt::format("the endpoint answered HTTP {}: {}", status, body.substr(0, 300));
    return out;
  }
  auto value = json::parse(body);
  if (!value) {
    out.error = "the endpoint's answer is not JSON: " + value.error().message;
    return out;
  }
  out.status = sandbox::Status::ok;
  out.value = std::move(*value);
  return out;
}

// The modules a revision's code may require (store::code_modules), read and
// re-hashed from the store on the revision's first call in this process, then
// kept (a revision's modules never change: they are part of its id). At most
// kKeptRevisions are kept; past it the oldest is dropped and read again if
// needed.
Result<std::shared_ptr<const json::Value>> revision_modules(store::Store& store, const tasks::ResolvedTool& tool) {
  if (!tool.manifest.modules.is_object()) return nullptr;
  constexpr std::size_t kKeptRevisions = 32;
  static std::mutex mu;
  static std::deque<std::pair<std::string, std::shared_ptr<const json::Value>>> kept;
  {
    std::lock_guard lock(mu);
    for (const auto& [revision, modules] : kept)
      if (revision == tool.revision) return modules;
  }
  auto modules = store::code_modules(store, tool.manifest.modules, tool.manifest.code, store::module_kind(tool.manifest));
  if (!modules) return std::unexpected(modules.error());
  auto shared = std::make_shared<const json::Value>(std::move(*modules));
  std::lock_guard lock(mu);
  kept.emplace_back(tool.revision, shared);
  if (kept.size() > kKeptRevisions) kept.pop_front();
  return shared;
}

// Dispatches on the execution class (DESIGN §3).
Result<sandbox::CallOutcome> execute(store::Store& store, const tasks::ResolvedTool& tool, const json::Value& args,
                                     sandbox::Pool& pool, const Options& options, sandbox::Capabilities* capabilities,
                                     const std::string& call_id) {
  const auto& m = tool.manifest;
  switch (m.execution) {
    case registry::Execution::sandboxed_code: {
      auto modules = revision_modules(store, tool);
      if (!modules) return std::unexpected(modules.error());
      sandbox::CallRequest request;
      request.tool = {tool.revision, m.code, m.name, std::move(*modules)};
      request.args = args;
      request.timeout = options.timeout;
      request.mode = options.mode;
      request.capabilities = capabilities;
      request.cancel = options.cancel;
      request.attribution = call_id;
      request.session = options.session;
      request.on_log = options.on_log;
      request.on_progress = options.on_progress;
      request.refill_later = options.refill_later;
      return pool.call(request);
    }
    case registry::Execution::trusted_native: {
      const auto* fn = native::find(m.native);
      if (!fn) {
        // P1: a native this host has but does not offer on this machine (executePython without python3).
        if (auto why = native::unavailable(m.native)) return fail(Errc::runtime_missing, *why, tool.revision);
        return fail(Errc::not_found, fmt::format("R5: this host has no native function \"{}\"", m.native), tool.revision);
      }
      // executePython's wheels (issue 17): read and re-hashed as sandboxed code's modules are.
      auto modules = revision_modules(store, tool);
      if (!modules) return std::unexpected(modules.error());
      return run_native(*fn, args, {options.timeout, options.natives, std::move(*modules)});
    }
    case registry::Execution::external_service: {
      if (m.service.contains("mcp")) {
        const auto& mcp = m.service["mcp"];
        const external::McpServer server{mcp["command"].get<std::vector<std::string>>(), mcp.value("cwd", "")};
        const external::CallEvents events{options.on_progress};  // notifications/progress, shown live
        if (options.mcp_clients)
          return options.mcp_clients->call_tool(server, mcp["tool"].get<std::string>(), args,
                                                mcp.value("outputSchema", json::Value()), options.timeout,
                                                options.cancel, events);
        return external::call_tool(server, mcp["tool"].get<std::string>(), args,
                                   mcp.value("outputSchema", json::Value()), options.timeout, events);
      }
      return call_https_service(tool.revision, m, args, options, capabilities);
    }
  }
  return fail(Errc::internal, "unhandled execution class");
}

}  // namespace

Result<Invocation> run_call(store::Store& store, sandbox::Pool& pool, const tasks::Task& call, const Options& options,
                            std::optional<tasks::ResolvedTool> resolved) {
  std::vector<tasks::Task> none;
  return run_call(store, pool, call, options, none, nullptr, std::move(resolved));
}

Result<Invocation> run_call(store::Store& store, sandbox::Pool& pool, const tasks::Task& call, const Options& options,
                            std::vector<tasks::Task>& parent_lineage, const tasks::Definitions* definitions,
                            std::optional<tasks::ResolvedTool> resolved) {
  auto kind = tasks::content_kind(call.content);
  if (!kind) return std::unexpected(kind.error());
  if (*kind != "functionCall") return fail(Errc::invalid_task, "this task is not a function call", call.id);
  if (!call.tool_revision) return fail(Errc::invalid_task, "this function call is not pinned to a tool revision", call.id);

  const bool lent = call.parent_id && !parent_lineage.empty() && parent_lineage.back().id == *call.parent_id;
  std::vector<tasks::Task> lineage = lent ? std::move(parent_lineage) : std::vector<tasks::Task>();
  parent_lineage.clear();
  auto tool = pinned_tool(store, call, lineage, lent, lent ? definitions : nullptr, std::move(resolved));
  if (!tool) return std::unexpected(tool.error());
  HostCapabilities capabilities(store, call, std::move(lineage), tool->revision, tool->manifest.name,
                                options.capabilities);
  capabilities.lend_callers_connection();  // this thread only waits until the call's requests have ended
  // Which runtime produces the result (runtime_record.h): asked before the
  // call, so a runtime that cannot say is never blamed on the tool.
  const auto runtime = runtime_for(tool->manifest, pool.config(), options.natives);
  auto outcome = execute(store, *tool, call.content["functionCall"]["arguments"], pool, options, &capabilities, call.id);
  if (!outcome) return std::unexpected(outcome.error());
  if (lent) parent_lineage = capabilities.take_lineage();

  Invocation inv{call, {}, capabilities.subtasks(), std::move(*tool), std::move(*outcome)};
  if (auto stored = store_invocation(store, inv, runtime); !stored) return std::unexpected(stored.error());
  return inv;
}

Result<store::Binding> activate(store::Store& store, sandbox::Pool& pool, std::string_view name,
                                std::string_view revision_ref) {
  auto binding = store.activate(name, revision_ref);
  if (!binding) return binding;
  pool.retire_superseded(binding->name, binding->revision);
  return binding;
}

}  // namespace taskyon::invoke
