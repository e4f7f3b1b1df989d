// Internal to diagnostics/: one function per contract group adds that
// group's checks (checks_*.cc), and helpers the checks share.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/diagnostics/check.h"
#include "taskyon/json/json.h"
#include "taskyon/registry/manifest.h"

namespace taskyon::diagnostics {

// Thrown by expect(), fail_check() and skip_check(); caught by run() only.
struct Ended {
  Outcome outcome;
};

void add_registry_checks(Registry& r);  // R*  checks_registry.cc
void add_task_checks(Registry& r);      // T*  checks_tasks.cc
void add_sandbox_checks(Registry& r);   // S*, N*  checks_sandbox.cc
void add_policy_checks(Registry& r);    // M*  checks_policy.cc
void add_python_checks(Registry& r);    // P*  checks_python.cc
void add_capability_checks(Registry& r);  // M1-M3, M6 (connect time), M8-M17, S7  checks_capabilities.cc
void add_lifecycle_checks(Registry& r);   // S3, S5, N2, N4  checks_lifecycle.cc
void add_serve_checks(Registry& r);       // H1-H2 (DESIGN §8)    checks_serve.cc
void add_host_checks(Registry& r);        // H3-H6 (DESIGN §8)  checks_host.cc

// Registers a check; a registration the Registry refuses is our bug: it is
// printed and the process aborts (tests/diagnostics_test.cc loads builtin()).
void add(Registry& r, Check check);

// A sandboxed-code manifest with one string parameter "input".
json::Value js_tool(const std::string& name, const std::string& code);
registry::Manifest js_manifest(const std::string& name, const std::string& code);

// Installs js_manifest(name, code) into the check's store; its revision id.
std::string install_js(Env& env, const std::string& name, const std::string& code,
                       store::Activate activate = store::Activate::if_unbound);

// No process has `pid` any more (kill(pid, 0) fails with ESRCH).
bool process_gone(int pid);

// `pool` destroyed a sandbox of `revision` for `reason`.
bool destroyed_for(const sandbox::Pool& pool, const std::string& revision, std::string_view reason);

// COUNT(*) or another single integer of a query on the check's store.
std::int64_t query_int(store::Store& store, const std::string& sql);

// A sandbox::CallRequest for `revision` running `code`.
sandbox::CallRequest request(std::string revision, std::string code, json::Value args = json::Value::object(),
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(10000),
                             sandbox::Mode mode = sandbox::Mode::retained);

// The value of an ok outcome; FAILs the check with the outcome otherwise.
json::Value ok_value(const sandbox::CallOutcome& outcome, std::string_view what);

}  // namespace taskyon::diagnostics
