// Native functions compiled into the host: the implementations of
// trusted-native tools (DESIGN §3). They run with the host's full authority,
// bypass every sandbox, and are reviewed as application code. Only the id,
// description and parameter schema of a native function ever leave the core;
// its implementation never crosses the protocol or any serialized form (R5).
//
// A native function runs in a Context: the call's timeout and the Session it
// belongs to. The Session holds what the user approved in this session (P2:
// native Python asks before its first run) and session-wide settings. It lives
// in memory only — one tycli process, or one object a server keeps per
// session next to its sandbox::Pool — and is never stored.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"

namespace taskyon::native {

// How executePython runs the interpreter (docs/sandbox.md, "Native Python").
enum class PythonIsolation {
  strict,  // the default: the sandbox kernel layers (+ a minimal-root bubblewrap where user namespaces are
           // allowed); refuses to run when a layer it depends on is missing
  host,    // an explicit choice: the CLI's own OS permissions (the user's authority), isolated mode,
           // timeout, minimal environment; announced by a warning line
};

// "host" / "strict".
std::string_view isolation_name(PythonIsolation isolation);

// Approvals and settings of one session. Thread-safe; never persisted.
class Session {
 public:
  // Asks the user a yes/no question; true means yes.
  using Ask = std::function<bool(std::string_view question)>;
  // Tells the user one line (tycli: `tycli: warning: …` on stderr).
  using Warn = std::function<void(std::string_view line)>;

  struct Settings {
    std::set<std::string> preapproved;  // native ids approved up front (tycli --approve-python)
    Ask ask;                            // empty: no one can be asked (no terminal)
    PythonIsolation python_isolation = PythonIsolation::strict;
    Warn warn;                          // empty: warnings are dropped
    // An executable with tycli's internal `__python-contain` entry, used by
    // strict isolation inside bubblewrap; empty: this process's own
    // executable (/proc/self/exe), which is right when the host is tycli.
    std::string helper;
  };

  Session() = default;
  explicit Session(Settings settings) : settings_(std::move(settings)) {}

  // Ok when `id` is approved in this session: up front, or now by asking
  // `question` (once per session: the answer, yes or no, is remembered).
  // Errc::bad_usage when it is not approved, with `how_to_approve` in the
  // message; the caller turns it into a tool error.
  Result<void> approve(const std::string& id, std::string_view question, std::string_view how_to_approve);

  PythonIsolation python_isolation() const { return settings_.python_isolation; }
  bool preapproved(const std::string& id) const { return settings_.preapproved.contains(id); }

  // Tells the user `line` through Settings::warn, at most once per `key` in
  // this session.
  void warn_once(const std::string& key, std::string_view line);
  const std::string& helper() const { return settings_.helper; }

 private:
  Settings settings_;
  std::mutex mu_;
  std::map<std::string, bool> answers_;  // id -> the user's answer in this session
  std::set<std::string> warned_;         // warn_once keys already told
};

// A yes/no prompt on the terminal (question on stderr, answer from stdin; "y"
// or "yes" is yes, anything else no), or an empty Ask when stdin or stderr is
// not a terminal.
Session::Ask ask_on_terminal();

struct Context {
  std::chrono::milliseconds timeout{10000};  // the call's wall-clock limit
  Session* session = nullptr;                // null: nothing is approved and no one can be asked
  // The revision's modules as store::code_modules gives them, read and
  // re-hashed from the store ({NAME: {"main": PATH, "files": {PATH: TEXT}}});
  // null: it names none. Only executePython's revisions have them (its
  // pure-Python wheels, issue 17).
  std::shared_ptr<const json::Value> modules = nullptr;
};

struct NativeFunction {
  std::string id;           // stable native id, e.g. "taskyon.sha256"
  std::string description;  // what it does, for the manifest
  json::Value parameters;   // JSON Schema of its arguments (type object)
  // The implementation. A returned Error is a tool error (the call ran and failed).
  std::function<Result<json::Value>(const json::Value& args, const Context& context)> run;
};

// The native function with this id, or nullptr: this host has no such
// function, or not on this machine (see unavailable()).
const NativeFunction* find(std::string_view id);

// Every native function this host offers on this machine, sorted by id.
// executePython is among them only when a python3 interpreter is detected (P1).
const std::vector<NativeFunction>& all();

// Why a native function this host knows is not offered on this machine, e.g.
// "P1: no python3 interpreter was detected …"; nullopt when it is offered or
// when the id is unknown to this host.
std::optional<std::string> unavailable(std::string_view id);

// A manifest for a native function (execution "trusted-native"), named `name`.
json::Value manifest_for(const NativeFunction& function, std::string_view name);

}  // namespace taskyon::native
