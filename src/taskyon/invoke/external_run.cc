#include "taskyon/invoke/external_run.h"

#include <fmt/format.h>

#include "taskyon/invoke/record.h"
#include "taskyon/tasks/compiler.h"

namespace taskyon::invoke {

Result<json::Value> browser_runtime(std::string_view version) {
  constexpr std::size_t kMaxVersion = 64;
  const bool fits = !version.empty() && version.size() <= kMaxVersion &&
                    version.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 ._/()+-") ==
                        std::string_view::npos;
  if (!fits)
    return fail(Errc::bad_usage,
                fmt::format("the runtime's version is 1..{} bytes of letters, digits, space and ._/()+- "
                            "(e.g. \"Chromium 156.0.8078.73\")",
                            kMaxVersion),
                "/runtime/version");
  return json::Value{{"kind", "browser"}, {"version", std::string(version)}};
}

ExternalRun::ExternalRun(std::shared_ptr<store::Store> store, tasks::Task call, tasks::ResolvedTool tool,
                         std::vector<tasks::Task> lineage, json::Value runtime, CapabilityOptions options)
    : store_(std::move(store)), call_(std::move(call)), tool_(std::move(tool)), runtime_(std::move(runtime)) {
  options.ask = {};  // nobody to ask: an ungranted request is denied, as in the long-lived host
  capabilities_ = std::make_unique<HostCapabilities>(*store_, call_, std::move(lineage), tool_.revision,
                                                     tool_.manifest.name, std::move(options));
}

ExternalRun::~ExternalRun() = default;

Result<std::unique_ptr<ExternalRun>> ExternalRun::start(std::shared_ptr<store::Store> store, const ExternalCall& call,
                                                        CapabilityOptions options) {
  std::vector<tasks::Task> lineage;
  if (call.parent) {
    auto found = store->lineage(*call.parent);  // re-hashed on read (T4)
    if (!found) return std::unexpected(found.error());
    lineage = std::move(*found);
  }
  auto compiled = tasks::compile(tasks::function_call(call.tool, call.arguments), {lineage, store->resolver()});
  if (!compiled) return std::unexpected(compiled.error());
  tasks::Task task = std::move(compiled->task);  // parented to the lineage's last task
  auto tool = pinned_tool(*store, task, lineage, true);
  if (!tool) return std::unexpected(tool.error());
  if (tool->manifest.execution != registry::Execution::sandboxed_code)
    return fail(Errc::bad_usage,
                fmt::format("{} is {}: it runs in this host, never in a page's sandbox (POST /v1/call)",
                            tool->manifest.name, registry::execution_name(tool->manifest.execution)),
                "/tool");
  return std::unique_ptr<ExternalRun>(new ExternalRun(std::move(store), std::move(task), std::move(*tool),
                                                      std::move(lineage), call.runtime, std::move(options)));
}

sandbox::CapabilityReply ExternalRun::request(sandbox::CapabilityOp op, const json::Value& args) {
  if (finished_) return sandbox::CapabilityReply::failure("call_ended", "the call ended: its result is stored");
  if (op == sandbox::CapabilityOp::fetch)
    return sandbox::CapabilityReply::failure(
        "invalid_request", "a page's fetch goes to the egress proxy (POST /v1/fetch with this task), not here");
  // No deadline or cancellation reaches these operations: they are local to the store.
  return capabilities_->handle(tool_.revision, op, args, sandbox::CancelToken{}, std::chrono::steady_clock::time_point::max());
}

Result<Invocation> ExternalRun::finish(sandbox::CallOutcome outcome) {
  if (finished_) return fail(Errc::bad_usage, "this run's result is stored already", call_.id);
  finished_ = true;
  Invocation inv{call_, {}, capabilities_->subtasks(), tool_, std::move(outcome)};
  capabilities_.reset();  // writes its "N more" audit row, if any, before the records
  if (auto stored = store_invocation(*store_, inv, runtime_); !stored) return std::unexpected(stored.error());
  return inv;
}

}  // namespace taskyon::invoke
