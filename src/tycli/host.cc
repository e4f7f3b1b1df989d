// What `call` and `run` share about hosting calls: capability options from the
// global flags, the --ask prompt, and the sandbox destruction log.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "cli.h"
#include "signals.h"
#include "taskyon/base/escape.h"
#include "taskyon/sandbox/runtime.h"
#include "taskyon/sandbox/workdir.h"
#include "taskyon/store/sandbox_log.h"

namespace tycli {

namespace capability = taskyon::capability;
using taskyon::Errc;

namespace {

// The question on the terminal (stderr for the question, the tty for the
// answer): once (this call, nothing stored), always (a grant), or no.
// One question at a time: two calls' requests may ask at once (each call's
// capabilities hold only their own lock), and the terminal is one.
taskyon::invoke::GrantAnswer ask_on_terminal(const taskyon::invoke::GrantQuestion& q) {
  static std::mutex terminal;
  const std::lock_guard lock(terminal);
  std::cerr << fmt::format(
      "tycli: tool \"{}\" (revision {}) asks for {} access to {}.\n"
      "       once: allow it for this call only (nothing is stored)\n"
      "       always: record a grant for exactly this revision, origin and access class\n"
      "       Allow it? [o]nce / [a]lways / [N]o ",
      q.tool, q.revision, capability::access_name(q.access), q.origin);
  std::string answer;
  if (!std::getline(std::cin, answer)) return taskyon::invoke::GrantAnswer::no;
  if (answer == "o" || answer == "O" || answer == "once") return taskyon::invoke::GrantAnswer::once;
  if (answer == "a" || answer == "A" || answer == "always") return taskyon::invoke::GrantAnswer::always;
  return taskyon::invoke::GrantAnswer::no;
}

}  // namespace

taskyon::Result<void> apply_config_file(long long& timeout_ms, bool timeout_given, std::string& python_isolation) {
  auto choice = taskyon::sandbox::read_runtime_choice(taskyon::sandbox::config_file_path());
  if (!choice) return std::unexpected(choice.error());
  if (choice->timeout_ms && !timeout_given) timeout_ms = *choice->timeout_ms;
  if (python_isolation.empty()) python_isolation = choice->python_isolation;
  return {};
}

void warn_test_only(std::string_view flag, std::string_view value) {
  std::cerr << fmt::format("tycli: warning: {} {} is for tests only: it {} (never use it outside a test)\n", flag,
                           taskyon::escape_terminal(value),
                           flag == "--fetch-ca-file" ? "replaces the system's trust anchors for every fetch"
                                                     : "admits fetches to addresses the policy blocks (M9)");
}

taskyon::Result<taskyon::invoke::CapabilityOptions> capability_options(const Globals& g) {
  taskyon::invoke::CapabilityOptions options;
  for (const auto& text : g.fetch_allow_cidr) {
    auto cidr = capability::Cidr::parse(text);
    if (!cidr)
      return taskyon::fail(Errc::bad_usage,
                           fmt::format("--fetch-allow-cidr: \"{}\" is not an address block like 127.0.0.1/32", text),
                           "--fetch-allow-cidr");
    options.network.allow.push_back(*cidr);
  }
  if (!g.fetch_ca_file.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(g.fetch_ca_file, ec) || ::access(g.fetch_ca_file.c_str(), R_OK) != 0)
      return taskyon::fail(Errc::bad_usage, fmt::format("--fetch-ca-file: cannot read {}", g.fetch_ca_file),
                           "--fetch-ca-file");
    options.network.ca_file = std::filesystem::absolute(g.fetch_ca_file, ec).string();
  }
  if (g.ask && ::isatty(STDIN_FILENO) && ::isatty(STDERR_FILENO)) {
    options.ask = ask_on_terminal;
    options.asked_by = os_user_name() + " (asked)";
  }
  return options;
}

taskyon::Result<taskyon::sandbox::RuntimeConfig> runtime_config(const std::string& js_runtime,
                                                                long long memory_budget_mib) {
  taskyon::sandbox::RuntimeConfig runtime;
  if (auto selected = taskyon::sandbox::select_runtime(runtime, js_runtime, taskyon::sandbox::config_file_path());
      !selected)
    return std::unexpected(selected.error());
  if (auto budget = apply_memory_budget(runtime, memory_budget_mib); !budget) return std::unexpected(budget.error());
  return runtime;
}

struct LoggedPool::Pending {
  std::mutex mu;
  std::vector<taskyon::sandbox::Destruction> records;
};

LoggedPool::LoggedPool(taskyon::store::Store& store, taskyon::sandbox::RuntimeConfig config)
    : store_(store), pending_(std::make_shared<Pending>()),
      pool_(std::make_unique<taskyon::sandbox::Pool>(std::move(config))) {
  pool_->on_destruction([pending = pending_](const taskyon::sandbox::Destruction& d) {
    std::lock_guard lock(pending->mu);
    pending->records.push_back(d);
  });
}

LoggedPool::~LoggedPool() {
  pool_.reset();
  flush();
}

void LoggedPool::flush() {
  std::vector<taskyon::sandbox::Destruction> records;
  {
    std::lock_guard lock(pending_->mu);
    records.swap(pending_->records);
  }
  for (const auto& d : records) {
    if (auto r = taskyon::store::record_destruction(store_, d.revision, d.name, d.reason, d.pid); !r)
      std::cerr << "tycli: warning: the sandbox log could not be written: " << r.error().message << "\n";
  }
}

int interrupted(int signal, const taskyon::sandbox::Pool& pool) {
  std::size_t destroyed = 0;
  for (const auto& d : pool.destructions()) destroyed += d.reason == "interrupted" ? 1 : 0;
  std::cerr << fmt::format("tycli: interrupted by {}: the running call was stored as cancelled, {} sandbox(es) "
                           "destroyed\n",
                           Interruption::name(signal), destroyed);
  return Interruption::exit_code(signal);
}

void sweep_stale_workdirs() {
  const std::string parent = taskyon::sandbox::workdir_parent();
  const auto sweep = taskyon::sandbox::sweep_stale_workdirs(parent);
  if (sweep.removed > 0)
    std::cerr << fmt::format("tycli: removed {} stale sandbox work director{} in {} left by tycli processes that are "
                             "gone\n",
                             sweep.removed, sweep.removed == 1 ? "y" : "ies", parent);
  if (sweep.failed > 0)
    std::cerr << fmt::format("tycli: warning: {} stale sandbox work director{} in {} could not be removed\n",
                             sweep.failed, sweep.failed == 1 ? "y" : "ies", parent);
}

}  // namespace tycli
