// P1, P2: native Python (native/python.h) is offered only where a python3
// answers, and runs only after the session approved it. P3: the CLI never
// loads Pyodide.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "taskyon/diagnostics/groups.h"
#include "taskyon/native/native.h"
#include "taskyon/native/python.h"
#include "taskyon/sandbox/guest.h"
#include "taskyon/sandbox/sandbox.h"

namespace taskyon::diagnostics {
namespace {

// Spelled in two parts so that this file's own bytes never match the search.
const std::string kNeedle = std::string("pyo") + "dide";

bool mentions(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find(kNeedle) != std::string::npos;
}

// Every piece of guest code compiled into the host (src/guest/), by name.
// A new runtime's harness is added here.
std::vector<std::pair<std::string, std::string_view>> embedded_guest_code() {
  return {{"src/guest/node/bootstrap.js", guest::node_bootstrap()}, {"src/guest/deno/harness.js", guest::deno_harness()}};
}

Outcome never_loads_pyodide(Env&) {
  for (const auto& [name, code] : embedded_guest_code()) {
    expect(!code.empty(), name + " is empty in this build");
    expect(!mentions(code), "the embedded guest code " + name + " mentions Pyodide");
  }
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) expect(!mentions(line), "this process maps a Pyodide file: " + line);
  // What a Node sandbox may read: nothing of Pyodide.
  if (auto node = sandbox::find_node(""); node) {
    if (auto policy = sandbox::node_policy(*node); policy) {
      for (const auto& path : (*policy)->grants().read_execute) expect(!mentions(path), "a sandbox may run " + path);
      for (const auto& path : (*policy)->grants().read) expect(!mentions(path), "a sandbox may read " + path);
    }
  }
  return pass("no embedded guest code, mapped file or sandbox grant refers to Pyodide");
}

namespace fs = std::filesystem;
namespace python = taskyon::native::python;

Outcome python_offered_only_when_detected(Env& env) {
  const fs::path empty = env.dir() / "empty-bin";
  fs::create_directories(empty);
  auto none = python::detect_python(empty.string());
  expect(!none && none.error().code == Errc::runtime_missing, "a python3 was detected on a PATH without one");
  // A python3 that does not answer as an interpreter is not one.
  const fs::path fake = env.dir() / "fake-bin";
  fs::create_directories(fake);
  std::ofstream(fake / "python3") << "#!/bin/sh\nexit 0\n";
  fs::permissions(fake / "python3", fs::perms::owner_all);
  auto silent = python::detect_python(fake.string());
  expect(!silent, "a python3 that does not answer was detected as " + (silent ? silent->executable : ""));
  // This host offers executePython exactly when its own detection found one.
  const std::string id(python::kPythonId);
  const bool detected = python::interpreter().has_value();
  const bool offered = native::find(id) != nullptr;
  bool listed = false;
  for (const auto& f : native::all()) listed = listed || f.id == id;
  expect(offered == detected && listed == detected,
         std::string("executePython is ") + (offered ? "" : "not ") + "offered while python3 is " +
             (detected ? "" : "not ") + "detected");
  expect(native::unavailable(id).has_value() == !detected, "unavailable() disagrees with the detection");
  return pass(detected ? "offered with the detected " + python::interpreter()->executable +
                             "; a PATH without a python3 that answers detects none"
                       : "not offered (no python3 here), and a PATH without one detects none");
}

Outcome python_needs_approval(Env& env) {
  const auto& found = python::interpreter();
  if (!found) skip_check("no python3 interpreter on PATH (install python3): " + found.error().message);
  const native::NativeFunction* fn = native::find(python::kPythonId);
  expect(fn != nullptr, "python3 is detected but executePython is not offered");
  const fs::path marker = env.dir() / "python-ran";
  const json::Value args = {{"code", "open(" + json::Value(marker.string()).dump() + ", 'w').write('ran')"}};
  auto refused = [&](native::Session* session, std::string_view who) {
    auto r = fn->run(args, native::Context{std::chrono::milliseconds(10000), session});
    expect(!r.has_value(), std::string("executePython ran ") + std::string(who));
    expect(!fs::exists(marker), std::string("the code ran ") + std::string(who));
    return r.error().message;
  };
  refused(nullptr, "without a session");
  // Host mode: the approval is checked the same in both modes, and only host
  // mode can leave the marker (strict writes nothing).
  native::Session::Settings host;
  host.python_isolation = native::PythonIsolation::host;
  native::Session unasked(host);  // no terminal, no --approve-python
  const std::string said = refused(&unasked, "in a session that approved nothing and cannot ask");
  expect(said.find("--approve-python") != std::string::npos, "the refusal does not say how to approve: " + said);
  int asked = 0;
  native::Session::Settings no = host;
  no.ask = [&asked](std::string_view) { ++asked; return false; };
  native::Session declining(no);
  refused(&declining, "after the user declined");
  refused(&declining, "on the second call after the user declined");
  expect(asked == 1, "the user was asked " + std::to_string(asked) + " times in one session");
  native::Session::Settings yes = host;
  yes.preapproved = {std::string(python::kPythonId)};
  native::Session approved(yes);
  auto ran = fn->run(args, native::Context{std::chrono::milliseconds(10000), &approved});
  expect(ran.has_value(), "an approved session could not run: " + (ran ? "" : ran.error().message));
  expect(fs::exists(marker), "the approved run did not run the code: " + ran->dump());
  return pass("without approval (no session, nothing approved, or declined) the code never runs; approved, it does");
}

}  // namespace

void add_python_checks(Registry& r) {
  add(r, {"P1", "python_offered_only_when_detected", "executePython is offered exactly when a python3 answers",
          python_offered_only_when_detected});
  add(r, {"P2", "python_needs_session_approval", "executePython runs only after the session approved it",
          python_needs_approval});
  add(r, {"P3", "never_loads_pyodide", "no embedded guest code, mapping or sandbox grant refers to Pyodide",
          never_loads_pyodide});
}

}  // namespace taskyon::diagnostics
