// Helpers the check groups share (groups.h).
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "taskyon/diagnostics/groups.h"

namespace taskyon::diagnostics {

void add(Registry& r, Check check) {
  if (auto added = r.add(std::move(check)); !added) {
    std::fprintf(stderr, "taskyon diagnostics: bad check registration: %s\n", added.error().describe().c_str());
    std::abort();
  }
}

json::Value js_tool(const std::string& name, const std::string& code) {
  return {{"name", name},
          {"description", "diagnostics tool " + name},
          {"parameters", {{"type", "object"}, {"properties", {{"input", {{"type", "string"}}}}}}},
          {"execution", "sandboxed-code"},
          {"runtime", "javascript"},
          {"code", code}};
}

registry::Manifest js_manifest(const std::string& name, const std::string& code) {
  return need(registry::parse_manifest(js_tool(name, code)), "the diagnostics manifest is invalid");
}

std::string install_js(Env& env, const std::string& name, const std::string& code, store::Activate activate) {
  return need(env.store().install(js_manifest(name, code), activate), "install " + name).id;
}

bool process_gone(int pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

bool destroyed_for(const sandbox::Pool& pool, const std::string& revision, std::string_view reason) {
  for (const auto& d : pool.destructions()) {
    if (d.revision == revision && d.reason == reason) return true;
  }
  return false;
}

std::int64_t query_int(store::Store& store, const std::string& sql) {
  auto stmt = need(store.database().prepare(sql), "cannot prepare " + sql);
  expect(need(stmt.step(), "cannot run " + sql), "no row from " + sql);
  return stmt.integer(0);
}

sandbox::CallRequest request(std::string revision, std::string code, json::Value args,
                             std::chrono::milliseconds timeout, sandbox::Mode mode) {
  sandbox::CallRequest r;
  r.tool = sandbox::ToolCode{std::move(revision), std::move(code)};
  r.args = std::move(args);
  r.timeout = timeout;
  r.mode = mode;
  return r;
}

json::Value ok_value(const sandbox::CallOutcome& outcome, std::string_view what) {
  if (outcome.status != sandbox::Status::ok)
    fail_check(std::string(what) + " ended " + std::string(sandbox::status_name(outcome.status)) + ": " +
               outcome.error);
  return outcome.value;
}

}  // namespace taskyon::diagnostics
