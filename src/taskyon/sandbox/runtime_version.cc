// runtime_version(): what a JS runtime executable says it is, asked once per
// path (runtime.h).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "taskyon/base/spawn.h"
#include "taskyon/sandbox/runtime.h"

namespace taskyon::sandbox {
namespace {

constexpr std::chrono::milliseconds kVersionTimeout{10000};
constexpr std::size_t kMaxVersionOutput = 64u << 10;

// Runs `argv` with `env`, stdin /dev/null, stderr discarded; its stdout (at
// most kMaxVersionOutput bytes) when it exits 0 within kVersionTimeout.
Result<std::string> run_for_output(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0)
    return fail(Errc::internal, fmt::format("pipe failed: {}", std::strerror(errno)), argv[0]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = 0;
  const SpawnAttributes attr;
  const int spawned = ::posix_spawn(&pid, argv[0].c_str(), &actions, attr.get(), args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(out[0]);
    return fail(Errc::runtime_missing, fmt::format("cannot run {}: {}", argv[0], std::strerror(spawned)), argv[0]);
  }
  std::string text;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + kVersionTimeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    char buf[4096];
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (text.size() < kMaxVersionOutput) text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return fail(Errc::runtime_missing, fmt::format("{} --version gave no answer within 10 s", argv[0]), argv[0]);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fail(Errc::runtime_missing, fmt::format("{} --version failed", argv[0]), argv[0]);
  return text;
}

Result<std::string> ask_version(JsRuntime runtime, const std::string& executable) {
  auto out = run_for_output({executable, "--version"},
                            runtime == JsRuntime::deno ? std::vector<std::string>{"DENO_NO_UPDATE_CHECK=1", "NO_COLOR=1"}
                                                       : std::vector<std::string>{"NO_COLOR=1"});
  if (!out) return out;
  std::string first = out->substr(0, out->find('\n'));
  while (!first.empty() && (first.back() == '\r' || first.back() == ' ')) first.pop_back();
  // node: "v22.12.0"; deno: "deno 2.1.4 (stable, release, x86_64-unknown-linux-gnu)".
  if (runtime == JsRuntime::deno) {
    if (!first.starts_with("deno ")) first.clear();
    else first = first.substr(5, first.find(' ', 5) == std::string::npos ? std::string::npos : first.find(' ', 5) - 5);
  } else if (!first.starts_with("v")) {
    first.clear();
  }
  if (first.empty() || first.size() > 64)
    return fail(Errc::runtime_missing,
                fmt::format("{} --version did not print a {} version", executable, js_runtime_name(runtime)),
                executable);
  return first;
}

}  // namespace

Result<std::string> runtime_version(JsRuntime runtime, const std::string& executable) {
  static std::mutex m;
  static std::map<std::pair<int, std::string>, Result<std::string>> cache;
  const auto key = std::make_pair(static_cast<int>(runtime), executable);
  {
    std::lock_guard lock(m);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  auto version = ask_version(runtime, executable);  // outside the lock: it may take a while
  std::lock_guard lock(m);
  return cache.emplace(key, std::move(version)).first->second;
}

}  // namespace taskyon::sandbox
