#include "taskyon/invoke/runtime_record.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "taskyon/native/python.h"
#include "taskyon/sandbox/runtime.h"
#include "taskyon/tasks/scope.h"

namespace taskyon::invoke {

namespace {

// The record of config's JS runtime, located and asked once per process for
// each (runtime, configured path, PATH): every call asks, and locating
// searches PATH with a stat per directory (issue 19: ~17 system calls of
// every warm call). As the pool keeps the executable it found for its
// lifetime, so does this; a runtime not found is asked again next time.
std::optional<json::Value> js_runtime_record(const sandbox::RuntimeConfig& config) {
  static std::mutex mu;
  static std::map<std::tuple<int, std::string, std::string>, json::Value> known;
  const char* path_env = std::getenv("PATH");
  auto key = std::make_tuple(static_cast<int>(config.runtime),
                             config.runtime == sandbox::JsRuntime::deno ? config.deno_path : config.node_path,
                             std::string(path_env ? path_env : ""));
  {
    std::lock_guard lock(mu);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  auto where = sandbox::locate_runtime(config);
  if (!where) return std::nullopt;
  auto version = sandbox::runtime_version(config.runtime, where->path);
  json::Value record = {{"kind", std::string(sandbox::js_runtime_name(config.runtime))},
                        {"version", version ? *version : std::string("unknown")}};
  std::lock_guard lock(mu);
  return known.emplace(std::move(key), std::move(record)).first->second;
}

}  // namespace

void prepare_runtime_record(const sandbox::RuntimeConfig& config) { (void)js_runtime_record(config); }

std::optional<json::Value> runtime_for(const registry::Manifest& tool, const sandbox::RuntimeConfig& config,
                                       const native::Session* natives) {
  switch (tool.execution) {
    case registry::Execution::sandboxed_code: return js_runtime_record(config);
    case registry::Execution::trusted_native: {
      if (tool.native != native::python::kPythonId) return std::nullopt;
      const auto& python = native::python::interpreter();
      if (!python) return std::nullopt;
      const auto isolation = natives ? natives->python_isolation() : native::PythonIsolation::strict;
      return json::Value{
          {"kind", "python"}, {"version", python->version}, {"isolation", std::string(native::isolation_name(isolation))}};
    }
    case registry::Execution::external_service:
      return std::nullopt;
  }
  return std::nullopt;
}

std::string describe_runtime(const json::Value& record) {
  if (!record.is_object()) return "unknown";
  std::string out = fmt::format("{} {}", record.value("kind", "?"), record.value("version", "?"));
  if (record.contains("isolation")) out += fmt::format(" ({})", record.value("isolation", "?"));
  return out;
}

json::Value recorded_runtime(const tasks::Task& result) {
  if (!result.content.is_object() || !result.content.contains("toolResult")) return nullptr;
  const auto& r = result.content["toolResult"];
  return r.contains("runtime") ? r["runtime"] : json::Value(nullptr);
}

bool RuntimeComparison::mismatch() const {
  if (!recorded.is_object() || !now) return false;
  return recorded.value("kind", "") != now->value("kind", "") ||
         recorded.value("isolation", "") != now->value("isolation", "");
}

bool RuntimeComparison::version_differs() const {
  return recorded.is_object() && now && !mismatch() && recorded.value("version", "") != now->value("version", "");
}

Result<RuntimeComparison> compare_runtime(store::Store& store, const sandbox::Pool& pool, const tasks::Task& call,
                                          const native::Session* natives) {
  RuntimeComparison out;
  if (!call.tool_revision) return out;
  std::optional<registry::Manifest> manifest;
  if (auto registered = store.revision(*call.tool_revision)) {
    manifest = std::move(registered->manifest);
  } else if (registered.error().code == Errc::not_found && call.parent_id) {
    auto lineage = store.lineage(*call.parent_id);
    if (!lineage) return std::unexpected(lineage.error());
    auto tool = tasks::pinned_in_lineage(*call.tool_revision, *lineage, store.resolver());
    if (!tool) return std::unexpected(tool.error());
    manifest = std::move(tool->manifest);
  } else {
    return std::unexpected(registered.error());
  }
  out.now = runtime_for(*manifest, pool.config(), natives);
  auto children = store.children(call.id);
  if (!children) return std::unexpected(children.error());
  // Storage order is not run order: a result identical to an earlier one
  // (same value, logs and runtime) keeps its first row. So a result that ran
  // on the runtime chosen now wins over the last row; else the last row.
  bool matched = false;
  for (const auto& c : *children)
    if (c.role == tasks::Role::tool && c.content.contains("toolResult")) {
      out.ran = true;
      json::Value recorded = recorded_runtime(c);
      RuntimeComparison probe{recorded, true, out.now};
      const bool same = recorded.is_object() && out.now && !probe.mismatch();
      if (same || !matched) out.recorded = std::move(recorded);
      matched = matched || same;
    }
  return out;
}

}  // namespace taskyon::invoke
