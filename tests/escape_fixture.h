// The fixture of the escape-corpus tests (../shared/corpora/escape_cases.md),
// shared by tests/escape_node_test.cc and tests/escape_deno_test.cc: canaries
// the hostile tool code must not reach (a secret file, a ~/.bashrc, listeners
// on TCP, UDP, a UNIX path and an abstract socket), checked after each case,
// and a pool on one runtime. Each test file keeps its own `tool()` wrapper
// (how errors are named differs between Node and Deno).
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/hardening/probe.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/sandbox/sandbox.h"
#include "test_util.h"

namespace taskyon::sandbox::escape {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using json::Value;
using taskyon::testing::TempDir;

inline constexpr const char* kEnvCanary = "TASKYON_ESCAPE_CANARY";

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What a tool must never change about a file: mode, owner, times, extended attributes.
inline std::string file_metadata(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "missing";
  std::string out = std::to_string(st.st_mode) + " " + std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid) +
                    " m" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + " c" +
                    std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec);
  char names[4096];
  const ssize_t n = ::llistxattr(path.c_str(), names, sizeof names);
  for (ssize_t i = 0; i < n; i += static_cast<ssize_t>(std::strlen(names + i)) + 1) {
    char value[256];
    const ssize_t v = ::lgetxattr(path.c_str(), names + i, value, sizeof value);
    out += std::string(" ") + (names + i) + "=" + std::string(value, v > 0 ? static_cast<std::size_t>(v) : 0);
  }
  return out;
}

// What a tool must never change about another process: limits and priority.
inline std::string process_limits(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(pid));
  return text + " nice " + std::to_string(nice) + " ioprio " + std::to_string(::syscall(SYS_ioprio_get, 1, pid));
}

inline bool process_gone(int pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

// Processes whose session is `sid` (a sandbox leads its own session).
inline std::vector<int> session_members(int sid) {
  std::vector<int> members;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_file(entry.path() / "stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    // After "pid (comm) ": state ppid pgrp session …
    char state = 0;
    int ppid = 0, pgrp = 0, session = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) == 4 &&
        session == sid && state != 'Z') {
      members.push_back(std::stoi(name));
    }
  }
  return members;
}
// The session of process `pid` (0 when it is gone).
inline int session_of(int pid) {
  const std::string stat = read_file(fs::path("/proc") / std::to_string(pid) / "stat");
  const std::size_t close = stat.rfind(')');
  char state = 0;
  int ppid = 0, pgrp = 0, session = 0;
  if (close == std::string::npos ||
      std::sscanf(stat.c_str() + close + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) != 4)
    return 0;
  return session;
}

// The live processes of the session of a sandbox whose runtime is `pid`, in
// pid order: the runtime alone, or (PID namespace) its init, which leads the
// session, and the runtime.
inline std::vector<int> sandbox_processes(int pid) {
  const int sid = session_of(pid);
  if (sid == 0) return {};
  std::vector<int> members = session_members(sid);
  std::sort(members.begin(), members.end());
  return members;
}

// What sandbox_processes(pid) is when nothing else runs in the sandbox.
inline std::vector<int> only_the_sandbox(int pid) {
  const int sid = session_of(pid);
  std::vector<int> expected = sid == pid || sid == 0 ? std::vector<int>{pid} : std::vector<int>{sid, pid};
  std::sort(expected.begin(), expected.end());
  return expected;
}

class EscapeFixture : public ::testing::Test {
 protected:
  explicit EscapeFixture(JsRuntime runtime = JsRuntime::node) : runtime_(runtime) {}

  void SetUp() override {
    secret_ = "canary-secret-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand());
    secret_file_ = home_.write(".taskyon-canary", secret_ + "\n");
    bashrc_ = home_.write(".bashrc", "# canary bashrc\n");
    secret_mtime_ = fs::last_write_time(secret_file_);
    ::chmod(secret_file_.c_str(), 0600);
    ::setxattr(secret_file_.c_str(), "user.taskyon-canary", "kept", 4, 0);  // where the filesystem has them
    bashrc_mtime_ = fs::last_write_time(bashrc_);
    tmp_probe_ = "/tmp/taskyon-escape-" + std::to_string(::getpid());
    ASSERT_EQ(::setenv(kEnvCanary, secret_.c_str(), 1), 0);

    tcp_ = listener(AF_INET, SOCK_STREAM);
    udp_ = listener(AF_INET, SOCK_DGRAM);
    tcp_port_ = port_of(tcp_);
    udp_port_ = port_of(udp_);
    unix_path_ = (home_ / "canary.sock").string();
    unix_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, unix_path_.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(unix_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
    ASSERT_EQ(::listen(unix_, 8), 0);
    abstract_name_ = "taskyon-escape-" + std::to_string(::getpid());
    abstract_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un abstract_addr{};
    abstract_addr.sun_family = AF_UNIX;
    std::memcpy(abstract_addr.sun_path + 1, abstract_name_.data(), abstract_name_.size());
    ASSERT_EQ(::bind(abstract_, reinterpret_cast<sockaddr*>(&abstract_addr),
                     static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract_name_.size())),
              0);
    ASSERT_EQ(::listen(abstract_, 8), 0);

    canary_pid_ = ::fork();
    ASSERT_GE(canary_pid_, 0);
    if (canary_pid_ == 0) {
      // No capabilities (as an ordinary user's process): then a root host's
      // sandbox is refused only by its own layers, never by commoncap's
      // "less capable caller" rule (setpriority, prlimit).
      __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
      __user_cap_data_struct none[2] = {};
      ::syscall(SYS_capset, &header, none);
      ::signal(SIGWINCH, [](int) { ::_exit(42); });
      ::signal(SIGURG, [](int) { ::_exit(43); });
      for (;;) ::pause();
    }
    home_entries_ = entries(home_.path());
    for (const std::string& path : {secret_file_, bashrc_}) metadata_.push_back(file_metadata(path));
    canary_limits_ = process_limits(canary_pid_);
    host_limits_ = process_limits(::getpid());
  }

  void TearDown() override {
    pool_.reset();  // every sandbox is gone before the canaries are read
    ExpectNoHostEffects();
    ::unsetenv(kEnvCanary);
    ::kill(canary_pid_, SIGKILL);
    ::waitpid(canary_pid_, nullptr, 0);
    for (int fd : {tcp_, udp_, unix_, abstract_}) ::close(fd);
    std::error_code ec;
    fs::remove(tmp_probe_, ec);
  }

  static int listener(int family, int type) {
    const int fd = ::socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    if (type == SOCK_STREAM) {
      EXPECT_EQ(::listen(fd, 8), 0);
    }
    return fd;
  }
  static int port_of(int fd) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    return ntohs(addr.sin_port);
  }
  static std::set<std::string> entries(const fs::path& dir) {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
    return names;
  }
  static bool pending(int listen_fd) {
    const int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) ::close(c);
    return c >= 0;
  }

  // Every canary is as it was.
  void ExpectNoHostEffects() {
    EXPECT_FALSE(pending(tcp_)) << "a connection reached the TCP canary";
    char byte;
    EXPECT_LT(::recv(udp_, &byte, 1, MSG_DONTWAIT), 0) << "a datagram reached the UDP canary";
    EXPECT_FALSE(pending(unix_)) << "a connection reached the UNIX socket canary";
    EXPECT_FALSE(pending(abstract_)) << "a connection reached the abstract socket canary";
    int status = 0;
    EXPECT_EQ(::waitpid(canary_pid_, &status, WNOHANG), 0) << "the canary process ended, status " << status;
    EXPECT_EQ(read_file(secret_file_), secret_ + "\n");
    EXPECT_EQ(read_file(bashrc_), "# canary bashrc\n");
    EXPECT_EQ(fs::last_write_time(secret_file_), secret_mtime_);
    EXPECT_EQ(fs::last_write_time(bashrc_), bashrc_mtime_);
    EXPECT_EQ(entries(home_.path()), home_entries_);
    EXPECT_EQ(file_metadata(secret_file_), metadata_.at(0)) << "the secret file's mode, owner, times or xattrs changed";
    EXPECT_EQ(file_metadata(bashrc_), metadata_.at(1)) << "the .bashrc's mode, owner, times or xattrs changed";
    EXPECT_EQ(process_limits(canary_pid_), canary_limits_) << "the unrelated process's limits or priority changed";
    EXPECT_EQ(process_limits(::getpid()), host_limits_) << "the host's limits or priority changed";
    EXPECT_FALSE(fs::exists(tmp_probe_));
    EXPECT_STREQ(std::getenv(kEnvCanary), secret_.c_str());
  }

  // The canaries' coordinates, for the tool.
  Value canaries() const {
    return Value{{"home", home_.path().string()},
                 {"secret_file", secret_file_},
                 {"bashrc", bashrc_},
                 {"tmp_probe", tmp_probe_},
                 {"tcp_port", tcp_port_},
                 {"udp_port", udp_port_},
                 {"unix_path", unix_path_},
                 {"abstract", abstract_name_},
                 {"canary_pid", canary_pid_},
                 {"host_pid", static_cast<int>(::getpid())},
                 {"env_name", kEnvCanary}};
  }

  Pool& pool(RuntimeConfig config = {}) {
    config.runtime = runtime_;
    if (!pool_) pool_ = std::make_unique<Pool>(std::move(config));
    return *pool_;
  }

  // Runs `code` with the canaries (plus `extra`) as arguments; a failure of
  // the machinery fails the test.
  CallOutcome run(const std::string& revision, const std::string& code, Value extra = Value::object(),
                  std::chrono::milliseconds timeout = 10s) {
    return run_as(revision, code, std::move(extra), [&](CallRequest& r) { r.timeout = timeout; });
  }
  // run(), with the request adjusted first (its session, capabilities, attribution).
  template <typename Adjust>
  CallOutcome run_as(const std::string& revision, const std::string& code, Value extra, Adjust adjust) {
    Value args = canaries();
    for (auto& [key, value] : extra.items()) args[key] = value;
    CallRequest request;
    request.tool = ToolCode{"sha256:escape-" + revision, code};
    request.args = std::move(args);
    adjust(request);
    auto result = pool().call(request);
    if (!result) {
      ADD_FAILURE() << "Pool::call failed: " << result.error().describe();
      CallOutcome failed;
      failed.status = Status::crashed;
      return failed;
    }
    EXPECT_FALSE(leaks_secret(*result)) << "the secret reached the host through the tool's output";
    return std::move(*result);
  }

  bool leaks_secret(const CallOutcome& out) const {
    std::string text = out.value.dump() + out.error;
    for (const auto& log : out.logs) text += log.text;
    return text.find(secret_) != std::string::npos;
  }

  // Every member of `results` is "err:<code>" with a code of `codes`.
  static void ExpectDenied(const CallOutcome& out, const std::set<std::string>& codes) {
    ASSERT_EQ(out.status, Status::ok) << out.error;
    ASSERT_TRUE(out.value.is_object()) << out.value.dump();
    ASSERT_FALSE(out.value.empty());
    for (const auto& [attempt, result] : out.value.items()) {
      const std::string text = result.is_string() ? result.get<std::string>() : result.dump();
      EXPECT_TRUE(text.starts_with("err:") && codes.contains(text.substr(4)))
          << attempt << " was not denied as expected: " << text;
    }
  }

  static const hardening::Support& machine() { return hardening::support(); }

  TempDir home_;
  std::string secret_, secret_file_, bashrc_, tmp_probe_, unix_path_, abstract_name_;
  fs::file_time_type secret_mtime_, bashrc_mtime_;
  std::set<std::string> home_entries_;
  std::vector<std::string> metadata_;
  std::string canary_limits_, host_limits_;
  int tcp_ = -1, udp_ = -1, unix_ = -1, abstract_ = -1;
  int tcp_port_ = 0, udp_port_ = 0;
  pid_t canary_pid_ = -1;
  std::unique_ptr<Pool> pool_;
  JsRuntime runtime_;  // every case runs on this runtime, selected explicitly
};

}  // namespace taskyon::sandbox::escape
