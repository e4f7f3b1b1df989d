// The diagnostics framework (DESIGN §7, issue 6): named checks that prove the
// contracts on the real components at run time, on the user's machine.
//
// A check is named `<suite>.<contract id>.<short name>`, e.g.
// `tool_security_contracts.R2.tampered_revision_detected`, and is a function
// of an Env: a fresh temporary directory of its own (its TASKYON_HOME) with a
// real SQLite store in it, a real sandbox::Pool on demand, and the paths of
// the runtimes and helpers. It ends PASS, FAIL or SKIP with a one-line reason.
// SKIP is only for a platform that lacks something (no Node, no Landlock, no
// Deno), and its reason says how to get it.
//
// Inside a check, expect()/fail_check()/skip_check() end the check early; they
// throw a framework-private exception that the runner (runner.h) turns into
// FAIL or SKIP. Any other exception a check throws is a FAIL with its message:
// nothing thrown by a check ever leaves the runner.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "taskyon/sandbox/pool.h"
#include "taskyon/store/store.h"

namespace taskyon::diagnostics {

inline constexpr std::string_view kSecuritySuite = "tool_security_contracts";

enum class Status { pass, fail, skip };

// "PASS", "FAIL", "SKIP" (people); status_key: "pass", "fail", "skip" (JSON).
std::string_view status_name(Status status);
std::string_view status_key(Status status);

struct Outcome {
  Status status = Status::fail;
  std::string reason;  // one line: what was proven, what broke, or what is missing and how to get it
};

Outcome pass(std::string reason);
Outcome skip(std::string reason);  // platform only; say how to get what is missing

// Ends the check as FAIL with `reason` unless `condition` holds.
void expect(bool condition, std::string_view reason);
[[noreturn]] void fail_check(std::string reason);
[[noreturn]] void skip_check(std::string reason);

// Ends the check when `result` holds an error, naming `what`: SKIP for
// Errc::runtime_missing (the platform lacks the runtime), FAIL otherwise.
// Returns the value.
template <typename T>
T need(Result<T> result, std::string_view what) {
  if (!result) {
    const std::string text = std::string(what) + ": " + result.error().describe() + " [" +
                             std::string(code_name(result.error().code)) + "]";
    if (result.error().code == Errc::runtime_missing)
      skip_check(text + " (scripts/setup.sh installs Node.js; --node PATH picks another)");
    fail_check(text);
  }
  if constexpr (!std::is_void_v<T>) return std::move(*result);
}

// What every check's Env shares: where the runtimes and helpers are.
struct Settings {
  std::string node_path;                 // empty: the first `node` on PATH (sandbox::find_node)
  std::filesystem::path temp_root;       // empty: $TMPDIR, else /tmp
  std::string tycli_path;                // the running tycli, when known (helpers that run it as a user would)
};

// One check's world. Made fresh for each check, destroyed after it: the
// directory with everything in it, the store and every sandbox of the pool.
class Env {
 public:
  Env(std::filesystem::path dir, const Settings& settings);
  ~Env();
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  // This check's own directory (also its TASKYON_HOME): empty when the check starts.
  const std::filesystem::path& dir() const { return dir_; }
  const Settings& settings() const { return settings_; }

  // A real store at dir()/taskyon.db, opened on first use.
  store::Store& store();

  // The Node executable (absolute path) that a sandbox can run; SKIPs the
  // check when there is none.
  const std::string& node();

  // The runtime configuration sandboxes of this check use (node() resolved).
  sandbox::RuntimeConfig runtime_config();

  // A real pool on first use (runtime_config()); SKIPs the check without Node.
  sandbox::Pool& pool();

  // pool().call(request); a machinery Error FAILs the check (runtime_missing SKIPs it).
  sandbox::CallOutcome call(const sandbox::CallRequest& request);

 private:
  std::filesystem::path dir_;
  Settings settings_;
  std::optional<store::Store> store_;
  std::optional<std::string> node_;
  std::unique_ptr<sandbox::Pool> pool_;
};

struct Check {
  std::string contract;     // "R2": an id of DESIGN §7
  std::string short_name;   // "tampered_revision_detected": [a-z0-9_]+
  std::string description;  // one line: what the check proves
  std::function<Outcome(Env&)> run;
  std::string suite = std::string(kSecuritySuite);

  // "<suite>.<contract>.<short_name>".
  std::string name() const;
};

// An ordered set of checks; names are unique.
class Registry {
 public:
  // Adds a check. Errc::bad_usage for an empty contract or short name, a short
  // name outside [a-z0-9_], a missing function, or a name already taken.
  Result<void> add(Check check);
  const std::vector<Check>& checks() const { return checks_; }

 private:
  std::vector<Check> checks_;
};

}  // namespace taskyon::diagnostics
