#include "taskyon/diagnostics/check.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "taskyon/diagnostics/groups.h"
#include "taskyon/sandbox/sandbox.h"

namespace taskyon::diagnostics {

std::string_view status_name(Status status) {
  switch (status) {
    case Status::pass: return "PASS";
    case Status::fail: return "FAIL";
    case Status::skip: return "SKIP";
  }
  return "FAIL";
}

std::string_view status_key(Status status) {
  switch (status) {
    case Status::pass: return "pass";
    case Status::fail: return "fail";
    case Status::skip: return "skip";
  }
  return "fail";
}

Outcome pass(std::string reason) { return {Status::pass, std::move(reason)}; }
Outcome skip(std::string reason) { return {Status::skip, std::move(reason)}; }

void expect(bool condition, std::string_view reason) {
  if (!condition) fail_check(std::string(reason));
}
void fail_check(std::string reason) { throw Ended{{Status::fail, std::move(reason)}}; }
void skip_check(std::string reason) { throw Ended{{Status::skip, std::move(reason)}}; }

Env::Env(std::filesystem::path dir, const Settings& settings) : dir_(std::move(dir)), settings_(settings) {}

Env::~Env() = default;  // the pool first (members in reverse order): sandboxes, then the store

store::Store& Env::store() {
  if (!store_) store_.emplace(need(store::Store::open((dir_ / "taskyon.db").string()), "cannot open the store"));
  return *store_;
}

const std::string& Env::node() {
  if (!node_) {
    auto found = sandbox::find_node(settings_.node_path);
    if (!found) skip_check("no Node.js runtime: " + found.error().message + " (scripts/setup.sh installs it)");
    // A sandbox runs only an ELF executable (not a wrapper script such as yarn's shim).
    need(sandbox::node_policy(*found), "Node.js cannot be sandboxed");
    node_ = *found;
  }
  return *node_;
}

sandbox::RuntimeConfig Env::runtime_config() {
  sandbox::RuntimeConfig config;
  config.node_path = node();
  return config;
}

sandbox::Pool& Env::pool() {
  if (!pool_) pool_ = std::make_unique<sandbox::Pool>(runtime_config());
  return *pool_;
}

sandbox::CallOutcome Env::call(const sandbox::CallRequest& request) {
  auto out = pool().call(request);
  if (!out && out.error().code == Errc::runtime_missing)
    skip_check("the sandbox runtime is missing: " + out.error().message);
  return need(std::move(out), "the sandbox machinery failed");
}

std::string Check::name() const { return suite + "." + contract + "." + short_name; }

Result<void> Registry::add(Check check) {
  if (check.contract.empty() || check.short_name.empty() || check.suite.empty())
    return fail(Errc::bad_usage, "a check needs a suite, a contract id and a short name", check.name());
  if (check.short_name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
    return fail(Errc::bad_usage, "a check's short name is [a-z0-9_]+", check.name());
  if (!check.run) return fail(Errc::bad_usage, "a check needs a function", check.name());
  const std::string name = check.name();
  for (const auto& c : checks_) {
    if (c.name() == name) return fail(Errc::bad_usage, "two checks have the same name", name);
  }
  checks_.push_back(std::move(check));
  return {};
}

}  // namespace taskyon::diagnostics
