// The hardening layers of sandbox children (src/taskyon/hardening), one unit
// at a time: each test prepares one layer on the host, applies it in a forked
// child of the test, tries to cross it there, and asserts both the denial
// inside and the absence of any effect outside (canary files, listeners, an
// unrelated process). Contain.* then runs a real program under every layer.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "taskyon/hardening/contain.h"
#include "taskyon/hardening/landlock.h"
#include "taskyon/hardening/namespaces.h"
#include "taskyon/hardening/probe.h"
#include "taskyon/hardening/rlimits.h"
#include "taskyon/hardening/runtime_files.h"
#include "taskyon/hardening/seccomp.h"
#include "test_util.h"

namespace taskyon::hardening {
namespace {

namespace fs = std::filesystem;
using taskyon::testing::TempDir;

// --- Running a check in a forked child --------------------------------------

// Where a child reports the first check that failed (a pipe to the test).
int g_report_fd = -1;

// In a child: the first failed check is written to the test and ends the child.
// snprintf and write only: the test process may have had threads at fork.
#define CHILD_EXPECT(cond)                                                                          \
  do {                                                                                              \
    if (!(cond)) {                                                                                  \
      char line_[256];                                                                              \
      const int saved_ = errno;                                                                     \
      const int n_ = std::snprintf(line_, sizeof line_, "line %d: %s (errno %d: %s)", __LINE__, #cond, \
                                   saved_, strerrorname_np(saved_) ? strerrorname_np(saved_) : "0");     \
      if (n_ > 0) (void)!::write(g_report_fd, line_, static_cast<std::size_t>(n_));                 \
      ::_exit(1);                                                                                   \
    }                                                                                               \
  } while (0)

// `call` fails with exactly `err`.
#define CHILD_EXPECT_ERRNO(call, err) \
  do {                                \
    errno = 0;                        \
    const long r_ = (call);           \
    CHILD_EXPECT(r_ == -1 && errno == (err)); \
  } while (0)

struct ChildResult {
  int status = 0;
  std::string failure;  // what CHILD_EXPECT reported
  bool passed() const { return failure.empty() && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
  std::string describe() const {
    if (!failure.empty()) return failure;
    if (WIFEXITED(status)) return "child exited with " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "child killed by signal " + std::to_string(WTERMSIG(status));
    return "child status " + std::to_string(status);
  }
};

// Forks; the child runs `body` and exits 0 when it returns.
template <typename Body>
ChildResult in_child(Body&& body) {
  int report[2];
  EXPECT_EQ(::pipe2(report, O_CLOEXEC), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(report[0]);
    g_report_fd = report[1];
    body();
    ::_exit(0);
  }
  ::close(report[1]);
  ChildResult result;
  char buf[512];
  ssize_t n;
  while ((n = ::read(report[0], buf, sizeof buf)) > 0) result.failure.append(buf, static_cast<std::size_t>(n));
  ::close(report[0]);
  EXPECT_EQ(::waitpid(pid, &result.status, 0), pid);
  return result;
}

// --- Canaries on the host side ----------------------------------------------

// A TCP listener on 127.0.0.1 (an ephemeral port); pending() tells whether a
// connection arrived.
class TcpCanary {
 public:
  TcpCanary() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    socklen_t len = sizeof addr_;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr_), &len);
  }
  ~TcpCanary() { ::close(fd_); }
  const sockaddr_in& addr() const { return addr_; }
  bool pending() const {
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) ::close(c);
    return c >= 0;
  }

 private:
  int fd_ = -1;
  sockaddr_in addr_{};
};

// A UDP socket on 127.0.0.1; received() tells whether a datagram arrived.
class UdpCanary {
 public:
  UdpCanary() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr_;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr_), &len);
  }
  ~UdpCanary() { ::close(fd_); }
  const sockaddr_in& addr() const { return addr_; }
  bool received() const {
    char byte;
    return ::recv(fd_, &byte, 1, MSG_DONTWAIT) >= 0;
  }

 private:
  int fd_ = -1;
  sockaddr_in addr_{};
};

// A listening UNIX socket in the abstract namespace ("\0taskyon-canary-<pid>").
class AbstractCanary {
 public:
  AbstractCanary() {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const std::string name = "taskyon-canary-" + std::to_string(::getpid());
    addr_.sun_family = AF_UNIX;
    std::memcpy(addr_.sun_path + 1, name.data(), name.size());
    len_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr_), len_), 0) << std::strerror(errno);
    EXPECT_EQ(::listen(fd_, 8), 0);
  }
  ~AbstractCanary() { ::close(fd_); }
  const sockaddr_un& addr() const { return addr_; }
  socklen_t len() const { return len_; }
  bool pending() const {
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) ::close(c);
    return c >= 0;
  }

 private:
  int fd_ = -1;
  sockaddr_un addr_{};
  socklen_t len_ = 0;
};

// An unrelated process of the test's user: it only waits to be killed.
class ProcessCanary {
 public:
  ProcessCanary() {
    pid_ = ::fork();
    if (pid_ == 0) {
      for (;;) ::pause();
    }
  }
  ~ProcessCanary() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  bool alive() const { return ::waitpid(pid_, nullptr, WNOHANG) == 0 && ::kill(pid_, 0) == 0; }

 private:
  pid_t pid_ = -1;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const Support& machine() { return support(); }

// --- Landlock ------------------------------------------------------------------

class LandlockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (machine().landlock_abi < 1) GTEST_SKIP() << "this kernel has no Landlock";
    allowed_ = dir_.write("allowed.txt", "allowed");
    secret_ = dir_.write("secret.txt", "secret-5d1c");
    auto ruleset = landlock::Ruleset::build({.read_execute = {}, .read = {allowed_}}, machine().landlock_abi);
    ASSERT_TRUE(ruleset.has_value()) << ruleset.error().describe();
    ruleset_.emplace(std::move(*ruleset));
  }

  // In the child: no_new_privs, then the ruleset.
  void restrict() const {
    CHILD_EXPECT(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
    CHILD_EXPECT(landlock::restrict_self(*ruleset_));
  }

  TempDir dir_;
  std::string allowed_, secret_;
  std::optional<landlock::Ruleset> ruleset_;
};

TEST_F(LandlockTest, ReadsOnlyGrantedFiles) {
  const std::string dir = dir_.path().string();
  auto result = in_child([&] {
    restrict();
    const int fd = ::open(allowed_.c_str(), O_RDONLY | O_CLOEXEC);
    CHILD_EXPECT(fd >= 0);
    char buf[16];
    CHILD_EXPECT(::read(fd, buf, sizeof buf) == 7);
    CHILD_EXPECT_ERRNO(::open(secret_.c_str(), O_RDONLY | O_CLOEXEC), EACCES);
    CHILD_EXPECT_ERRNO(::open("/etc/passwd", O_RDONLY | O_CLOEXEC), EACCES);
    CHILD_EXPECT_ERRNO(::open("/proc/self/environ", O_RDONLY | O_CLOEXEC), EACCES);
    CHILD_EXPECT_ERRNO(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC), EACCES);  // listing
    char* const argv[] = {const_cast<char*>("true"), nullptr};
    CHILD_EXPECT_ERRNO(::execve("/bin/true", argv, argv + 1), EACCES);  // not granted execute
  });
  EXPECT_TRUE(result.passed()) << result.describe();
}

TEST_F(LandlockTest, WritesNowhere) {
  const std::string created = (dir_ / "created").string(), renamed = (dir_ / "renamed").string();
  const auto secret_time = fs::last_write_time(secret_);
  auto result = in_child([&] {
    restrict();
    CHILD_EXPECT_ERRNO(::open(allowed_.c_str(), O_WRONLY | O_CLOEXEC), EACCES);  // granted read only
    CHILD_EXPECT_ERRNO(::open(secret_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC), EACCES);
    CHILD_EXPECT_ERRNO(::open(created.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600), EACCES);
    CHILD_EXPECT_ERRNO(::open("/tmp/taskyon-landlock-probe", O_WRONLY | O_CREAT | O_CLOEXEC, 0600), EACCES);
    CHILD_EXPECT_ERRNO(::mkdir(created.c_str(), 0700), EACCES);
    CHILD_EXPECT_ERRNO(::mkfifo(created.c_str(), 0600), EACCES);
    CHILD_EXPECT_ERRNO(::symlink(secret_.c_str(), created.c_str()), EACCES);
    CHILD_EXPECT_ERRNO(::unlink(secret_.c_str()), EACCES);
    CHILD_EXPECT(::rename(secret_.c_str(), renamed.c_str()) == -1 && (errno == EACCES || errno == EXDEV));
    if (machine().landlock_abi >= 3) CHILD_EXPECT_ERRNO(::truncate(allowed_.c_str(), 0), EACCES);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  EXPECT_FALSE(fs::exists(dir_ / "created"));
  EXPECT_FALSE(fs::exists(dir_ / "renamed"));
  EXPECT_FALSE(fs::exists("/tmp/taskyon-landlock-probe"));
  EXPECT_EQ(read_file(secret_), "secret-5d1c");
  EXPECT_EQ(read_file(allowed_), "allowed");
  EXPECT_EQ(fs::last_write_time(secret_), secret_time);
}

TEST_F(LandlockTest, DeniesTcpBindAndConnect) {
  if (machine().landlock_abi < 4) GTEST_SKIP() << "TCP rules need Landlock ABI 4";
  TcpCanary tcp;
  auto result = in_child([&] {
    restrict();
    const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHILD_EXPECT(s >= 0);  // Landlock rules ports, not sockets
    CHILD_EXPECT_ERRNO(::connect(s, reinterpret_cast<const sockaddr*>(&tcp.addr()), sizeof(sockaddr_in)), EACCES);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    any.sin_port = htons(0);
    CHILD_EXPECT_ERRNO(::bind(s, reinterpret_cast<sockaddr*>(&any), sizeof any), EACCES);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  EXPECT_FALSE(tcp.pending());
}

TEST_F(LandlockTest, ScopesSignals) {
  if (machine().landlock_abi < 6) GTEST_SKIP() << "the signal scope needs Landlock ABI 6";
  ProcessCanary canary;
  auto result = in_child([&] {
    restrict();
    CHILD_EXPECT_ERRNO(::kill(::getppid(), 0), EPERM);  // the host
    CHILD_EXPECT_ERRNO(::kill(canary.pid(), SIGKILL), EPERM);
    CHILD_EXPECT(::kill(::getpid(), 0) == 0);  // itself: same domain
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  EXPECT_TRUE(canary.alive());
}

TEST_F(LandlockTest, ScopesAbstractUnixSockets) {
  if (machine().landlock_abi < 6) GTEST_SKIP() << "the abstract-socket scope needs Landlock ABI 6";
  AbstractCanary abstract;
  auto result = in_child([&] {
    restrict();
    const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHILD_EXPECT(s >= 0);
    CHILD_EXPECT_ERRNO(::connect(s, reinterpret_cast<const sockaddr*>(&abstract.addr()), abstract.len()), EPERM);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  EXPECT_FALSE(abstract.pending());
}

// A file's metadata as the host sees it: mode, owner, times, extended attributes.
struct Metadata {
  struct stat st {};
  std::string xattrs;  // "name=value;" for every attribute
  bool operator==(const Metadata& o) const {
    return st.st_mode == o.st.st_mode && st.st_uid == o.st.st_uid && st.st_gid == o.st.st_gid &&
           st.st_mtim.tv_sec == o.st.st_mtim.tv_sec && st.st_mtim.tv_nsec == o.st.st_mtim.tv_nsec &&
           st.st_atim.tv_sec == o.st.st_atim.tv_sec && st.st_atim.tv_nsec == o.st.st_atim.tv_nsec &&
           xattrs == o.xattrs;
  }
};

Metadata metadata_of(const std::string& path) {
  Metadata m;
  EXPECT_EQ(::lstat(path.c_str(), &m.st), 0) << path;
  char names[4096];
  const ssize_t n = ::llistxattr(path.c_str(), names, sizeof names);
  for (ssize_t i = 0; i < n; i += static_cast<ssize_t>(std::strlen(names + i)) + 1) {
    char value[256];
    const ssize_t v = ::lgetxattr(path.c_str(), names + i, value, sizeof value);
    m.xattrs += std::string(names + i) + "=" + std::string(value, v > 0 ? static_cast<std::size_t>(v) : 0) + ";";
  }
  return m;
}

std::string describe(const Metadata& m) {
  return fmt::format("mode {:o} uid {} gid {} mtime {}.{} xattrs [{}]", m.st.st_mode, m.st.st_uid, m.st.st_gid,
                     m.st.st_mtim.tv_sec, m.st.st_mtim.tv_nsec, m.xattrs);
}

// --- Namespaces ----------------------------------------------------------------

class NamespacesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!machine().user_namespaces) GTEST_SKIP() << machine().namespaces_error;
  }
  // In the child: the namespace and identity steps of contain() (the new root
  // left out). The child is forked plainly, not cloned into a PID namespace,
  // so a user namespace the clone would have made is unshared here.
  static void enter(const namespaces::Plan& cloned) {
    namespaces::Plan plan = cloned;
    plan.flags |= plan.clone_flags & CLONE_NEWUSER;
    plan.clone_flags = 0;
    const int proc_self = namespaces::open_proc_self();
    CHILD_EXPECT(proc_self >= 0);
    CHILD_EXPECT(namespaces::unshare_mount_first(plan));
    CHILD_EXPECT(namespaces::drop_ids(plan));
    CHILD_EXPECT(namespaces::unshare_all(plan));
    CHILD_EXPECT(namespaces::write_id_maps(plan, proc_self));
    CHILD_EXPECT(namespaces::set_hostname());
  }
};

TEST_F(NamespacesTest, HaveNoNetwork) {
  TcpCanary tcp;
  UdpCanary udp;
  const auto plan = namespaces::plan_namespaces();
  auto result = in_child([&] {
    enter(plan);
    const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHILD_EXPECT(s >= 0);
    CHILD_EXPECT_ERRNO(::connect(s, reinterpret_cast<const sockaddr*>(&tcp.addr()), sizeof(sockaddr_in)), ENETUNREACH);
    const int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    CHILD_EXPECT(u >= 0);
    CHILD_EXPECT_ERRNO(::sendto(u, "x", 1, 0, reinterpret_cast<const sockaddr*>(&udp.addr()), sizeof(sockaddr_in)),
                       ENETUNREACH);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  EXPECT_FALSE(tcp.pending());
  EXPECT_FALSE(udp.received());
}

TEST_F(NamespacesTest, HideTheHostsAbstractSockets) {
  AbstractCanary abstract;
  const auto plan = namespaces::plan_namespaces();
  auto result = in_child([&] {
    enter(plan);
    const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHILD_EXPECT(s >= 0);
    CHILD_EXPECT_ERRNO(::connect(s, reinterpret_cast<const sockaddr*>(&abstract.addr()), abstract.len()),
                       ECONNREFUSED);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  EXPECT_FALSE(abstract.pending());
}

TEST_F(NamespacesTest, MapTheSandboxIdsAndName) {
  const auto plan = namespaces::plan_namespaces();
  char host_name[256] = {};
  ASSERT_EQ(::gethostname(host_name, sizeof host_name), 0);
  auto result = in_child([&] {
    enter(plan);
    CHILD_EXPECT(::getuid() == namespaces::kSandboxId && ::geteuid() == namespaces::kSandboxId);
    CHILD_EXPECT(::getgid() == namespaces::kSandboxId);
    struct utsname uts {};
    CHILD_EXPECT(::uname(&uts) == 0);
    CHILD_EXPECT(namespaces::kSandboxHostname == uts.nodename);
    CHILD_EXPECT(::setuid(0) == -1);  // no root inside
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  char after[256] = {};
  ASSERT_EQ(::gethostname(after, sizeof after), 0);
  EXPECT_STREQ(after, host_name);  // the host's own name is untouched
}

// The canary of the sandbox-uid tests: a file of the host's user (root here),
// mode 0644, with an extended attribute when the filesystem has them, in a
// directory anyone may enter (so only the owner check can refuse).
struct OwnedCanary {
  TempDir dir;
  std::string path;
  OwnedCanary() {
    ::chmod(dir.path().c_str(), 0755);
    path = dir.write("owned.txt", "owned-40c2\n");
    ::chmod(path.c_str(), 0644);
    ::setxattr(path.c_str(), "user.kept", "1", 1, 0);
  }
};

// Owner-checked calls on `path`; `changed` counts the ones that worked.
void try_owner_calls(const char* path, int* changed) {
  const struct timespec zero[2] = {{0, 0}, {0, 0}};
  *changed = 0;
  if (::chmod(path, 04777) == 0) ++*changed;
  if (::chown(path, static_cast<uid_t>(::getuid()), static_cast<gid_t>(::getgid())) == 0) ++*changed;
  if (::utimensat(AT_FDCWD, path, zero, 0) == 0) ++*changed;
  if (::setxattr(path, "user.planted", "x", 1, 0) == 0) ++*changed;
  if (::removexattr(path, "user.kept") == 0) ++*changed;
}

TEST_F(NamespacesTest, TheSandboxUidOwnsNoneOfTheHostsFiles) {
  if (!namespaces::host_is_root() || !machine().sandbox_uid) GTEST_SKIP() << "the sandbox uid needs a root host";
  OwnedCanary canary;
  const Metadata before = metadata_of(canary.path);
  const auto plan = namespaces::plan_namespaces();
  ASSERT_TRUE(plan.drop_ids);
  auto result = in_child([&] {
    enter(plan);
    int changed = -1;
    try_owner_calls(canary.path.c_str(), &changed);  // no seccomp here: only the owner check stands
    CHILD_EXPECT(changed == 0);
    CHILD_EXPECT(::getuid() == namespaces::kSandboxId);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  const Metadata after = metadata_of(canary.path);
  EXPECT_TRUE(after == before) << describe(before) << " became " << describe(after);
}

TEST_F(NamespacesTest, WithoutTheSandboxUidTheOwnerCheckPasses) {
  // Control: a root host's sandbox mapped to its own uid owns the host's files.
  if (!namespaces::host_is_root()) GTEST_SKIP() << "the control needs a root host";
  OwnedCanary canary;
  const Metadata before = metadata_of(canary.path);
  const auto plan = namespaces::plan_namespaces({.drop_ids = false});
  auto result = in_child([&] {
    enter(plan);
    int changed = -1;
    try_owner_calls(canary.path.c_str(), &changed);
    CHILD_EXPECT(changed > 0);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  EXPECT_FALSE(metadata_of(canary.path) == before);
}

// --- seccomp -------------------------------------------------------------------

class SeccompTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!machine().seccomp) GTEST_SKIP() << "this kernel has no seccomp filters";
    exec_fd_ = ::open("/bin/sh", O_PATH | O_CLOEXEC);
    ASSERT_GE(exec_fd_, 0);
    auto filter = seccomp::Filter::build(allowed());
    ASSERT_TRUE(filter.has_value()) << filter.error().describe();
    filter_.emplace(std::move(*filter));
  }
  void TearDown() override {
    if (exec_fd_ >= 0) ::close(exec_fd_);
  }

  seccomp::AllowedExec allowed() {
    return {.fd = exec_fd_, .path = empty_, .argv = argv_, .envp = envp_, .flags = AT_EMPTY_PATH};
  }

  void load() const {
    CHILD_EXPECT(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
    CHILD_EXPECT(seccomp::load(*filter_));
  }

  // The prepared exec: `sh -c <command_>`. The filter checks pointers, not
  // contents, so each attempt below writes its own exit code into command_:
  // an attempt that got through would end the child with that code.
  void command(int code) { std::snprintf(command_, sizeof command_, "exit %d", code); }

  int exec_fd_ = -1;
  char empty_[1] = {'\0'};
  char arg0_[3] = "sh", arg1_[3] = "-c", command_[16] = "exit 42";
  char* argv_[4] = {arg0_, arg1_, command_, nullptr};
  char* envp_[1] = {nullptr};
  std::optional<seccomp::Filter> filter_;
};

TEST_F(SeccompTest, DeniesSocketsOfEveryFamily) {
  auto result = in_child([&] {
    load();
    for (int family : {AF_INET, AF_INET6, AF_UNIX, AF_NETLINK, AF_PACKET, AF_VSOCK}) {
      CHILD_EXPECT_ERRNO(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), EACCES);
      CHILD_EXPECT_ERRNO(::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0), EACCES);
    }
    int pair[2];
    CHILD_EXPECT_ERRNO(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), EACCES);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
}

void* thread_body(void* arg) { return arg; }

TEST_F(SeccompTest, DeniesNewProcessesButNotThreads) {
  auto result = in_child([&] {
    load();
    CHILD_EXPECT_ERRNO(::fork(), EPERM);
#ifdef SYS_fork  // x86-64; aarch64 has only clone and clone3
    CHILD_EXPECT_ERRNO(::syscall(SYS_fork), EPERM);
    {
      errno = 0;
      const long r = ::syscall(SYS_vfork);
      if (r == 0) ::_exit(99);  // it must not have worked; leave at once if it did
      CHILD_EXPECT(r == -1 && errno == EPERM);
    }
#endif
    {
      errno = 0;
      const long r = ::syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
      if (r == 0) ::_exit(99);
      CHILD_EXPECT(r == -1 && errno == EPERM);
    }
    {
      errno = 0;  // a "thread" that asks for a new network namespace
      const long r = ::syscall(SYS_clone, CLONE_THREAD | CLONE_SIGHAND | CLONE_VM | CLONE_NEWNET, 0, 0, 0, 0);
      CHILD_EXPECT(r == -1 && errno == EPERM);
    }
    CHILD_EXPECT_ERRNO(::syscall(SYS_clone3, nullptr, 0), ENOSYS);
    pthread_t thread;  // the C library falls back from clone3 to clone
    CHILD_EXPECT(::pthread_create(&thread, nullptr, thread_body, nullptr) == 0);
    CHILD_EXPECT(::pthread_join(thread, nullptr) == 0);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
}

TEST_F(SeccompTest, ExecsOnlyThePreparedCall) {
  auto result = in_child([&] {
    load();
    command(1);
    CHILD_EXPECT_ERRNO(::execve("/bin/sh", argv_, envp_), EPERM);
    command(2);
    CHILD_EXPECT_ERRNO(::syscall(SYS_execveat, AT_FDCWD, "/bin/sh", argv_, envp_, 0), EPERM);
    command(3);
    char* other_argv[4] = {arg0_, arg1_, command_, nullptr};  // same strings, another array
    CHILD_EXPECT_ERRNO(::syscall(SYS_execveat, exec_fd_, empty_, other_argv, envp_, AT_EMPTY_PATH), EPERM);
    command(4);
    char other_empty[1] = {'\0'};
    CHILD_EXPECT_ERRNO(::syscall(SYS_execveat, exec_fd_, other_empty, argv_, envp_, AT_EMPTY_PATH), EPERM);
    command(5);
    const int other_fd = ::dup(exec_fd_);
    CHILD_EXPECT_ERRNO(::syscall(SYS_execveat, other_fd, empty_, argv_, envp_, AT_EMPTY_PATH), EPERM);
    command(6);
    char* other_envp[1] = {nullptr};
    CHILD_EXPECT_ERRNO(::syscall(SYS_execveat, exec_fd_, empty_, argv_, other_envp, AT_EMPTY_PATH), EPERM);
    command(7);
    CHILD_EXPECT_ERRNO(::syscall(SYS_execveat, exec_fd_, empty_, argv_, envp_, 0), EPERM);
    command(42);
    ::syscall(SYS_execveat, exec_fd_, empty_, argv_, envp_, AT_EMPTY_PATH);  // the one that works
    CHILD_EXPECT(false);
  });
  ASSERT_TRUE(result.failure.empty()) << result.failure;
  ASSERT_TRUE(WIFEXITED(result.status)) << result.describe();
  EXPECT_EQ(WEXITSTATUS(result.status), 42);  // only the prepared call ran: sh -c 'exit 42'
}

TEST_F(SeccompTest, DeniesTheKernelAttackSurface) {
  auto result = in_child([&] {
    load();
    io_uring_params params{};
    CHILD_EXPECT_ERRNO(::syscall(SYS_io_uring_setup, 1, &params), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_io_uring_enter, 0, 1, 0, 0, nullptr, 0), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_io_uring_register, 0, 0, nullptr, 0), EPERM);
    CHILD_EXPECT_ERRNO(::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr), EPERM);
    char buf[8];
    iovec local{buf, sizeof buf}, remote{buf, sizeof buf};
    CHILD_EXPECT_ERRNO(::process_vm_readv(::getppid(), &local, 1, &remote, 1, 0), EPERM);
    CHILD_EXPECT_ERRNO(::process_vm_writev(::getppid(), &local, 1, &remote, 1, 0), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_pidfd_getfd, 0, 0, 0), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_kcmp, ::getpid(), ::getppid(), 0, 0, 0), EPERM);
    CHILD_EXPECT_ERRNO(::unshare(CLONE_NEWUSER), EPERM);
    CHILD_EXPECT_ERRNO(::setns(0, CLONE_NEWNET), EPERM);
    CHILD_EXPECT_ERRNO(::mount("none", "/tmp", "tmpfs", 0, nullptr), EPERM);
    CHILD_EXPECT_ERRNO(::umount2("/tmp", MNT_DETACH), EPERM);
    CHILD_EXPECT_ERRNO(::chroot("/"), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_pivot_root, "/", "/"), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_fsopen, "tmpfs", 0), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_open_tree, AT_FDCWD, "/", 0), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(467 /* open_tree_attr, by number */, AT_FDCWD, "/", 0, nullptr, 0), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_open_by_handle_at, AT_FDCWD, nullptr, 0), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_bpf, 0, nullptr, 0), EPERM);
    perf_event_attr attr{};
    attr.size = sizeof attr;
    CHILD_EXPECT_ERRNO(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_userfaultfd, 0), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_keyctl, 0, 0, 0, 0, 0), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_add_key, "user", "k", "v", 1, 0), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_request_key, "user", "k", nullptr, 0), EPERM);
    // An x32 syscall number (the same socket(2) through another ABI) kills the process.
    ::syscall(0x40000000 | SYS_socket, AF_INET, SOCK_STREAM, 0);
    CHILD_EXPECT(false);
  });
  ASSERT_TRUE(result.failure.empty()) << result.failure;
  EXPECT_TRUE(WIFSIGNALED(result.status) && WTERMSIG(result.status) == SIGSYS) << result.describe();
}

// Every call of the file-metadata family on `path` fails with `err`; used by
// the seccomp test (EPERM) and, with the layer off, by its control.
void try_metadata_changes(const char* path, int err) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  CHILD_EXPECT(fd >= 0);
  CHILD_EXPECT_ERRNO(::chmod(path, 04777), err);
  CHILD_EXPECT_ERRNO(::fchmod(fd, 04777), err);
  CHILD_EXPECT_ERRNO(::fchmodat(AT_FDCWD, path, 04777, 0), err);
  CHILD_EXPECT_ERRNO(::syscall(452 /* fchmodat2 */, AT_FDCWD, path, 04777, 0), err);
  CHILD_EXPECT_ERRNO(::chown(path, 0, 0), err);
  CHILD_EXPECT_ERRNO(::fchown(fd, 0, 0), err);
  CHILD_EXPECT_ERRNO(::lchown(path, 0, 0), err);
  CHILD_EXPECT_ERRNO(::fchownat(AT_FDCWD, path, 0, 0, 0), err);
  const struct timespec zero[2] = {{0, 0}, {0, 0}};
  const struct timeval tv_zero[2] = {{0, 0}, {0, 0}};
#ifdef SYS_utime  // x86-64; aarch64 has only utimensat
  CHILD_EXPECT_ERRNO(::syscall(SYS_utime, path, nullptr), err);
#endif
  CHILD_EXPECT_ERRNO(::utimes(path, tv_zero), err);
  CHILD_EXPECT_ERRNO(::utimensat(AT_FDCWD, path, zero, 0), err);
  CHILD_EXPECT_ERRNO(::futimens(fd, zero), err);
#ifdef SYS_futimesat
  CHILD_EXPECT_ERRNO(::syscall(SYS_futimesat, AT_FDCWD, path, tv_zero), err);
#endif
  CHILD_EXPECT_ERRNO(::setxattr(path, "user.taskyon", "x", 1, 0), err);
  CHILD_EXPECT_ERRNO(::lsetxattr(path, "user.taskyon", "x", 1, 0), err);
  CHILD_EXPECT_ERRNO(::fsetxattr(fd, "user.taskyon", "x", 1, 0), err);
  CHILD_EXPECT_ERRNO(::syscall(463 /* setxattrat */, AT_FDCWD, path, 0, "user.taskyon", nullptr, 0), err);
  CHILD_EXPECT_ERRNO(::removexattr(path, "user.kept"), err);
  CHILD_EXPECT_ERRNO(::lremovexattr(path, "user.kept"), err);
  CHILD_EXPECT_ERRNO(::fremovexattr(fd, "user.kept"), err);
  CHILD_EXPECT_ERRNO(::syscall(466 /* removexattrat */, AT_FDCWD, path, 0, "user.kept"), err);
  long flags = 0;
  CHILD_EXPECT_ERRNO(::ioctl(fd, 0x40086602 /* FS_IOC_SETFLAGS */, &flags), err);
  char fsx[28] = {};
  CHILD_EXPECT_ERRNO(::ioctl(fd, 0x401c5820 /* FS_IOC_FSSETXATTR */, fsx), err);
}

TEST_F(SeccompTest, DeniesEveryChangeOfFileMetadata) {
  TempDir dir;
  const std::string canary = dir.write("canary.txt", "canary-7e21\n");
  ASSERT_EQ(::chmod(canary.c_str(), 0644), 0);
  const bool xattrs = ::setxattr(canary.c_str(), "user.kept", "1", 1, 0) == 0;  // not every filesystem has them
  const Metadata before = metadata_of(canary);
  auto result = in_child([&] {
    load();
    try_metadata_changes(canary.c_str(), EPERM);
    // Denied by number whatever the kernel (6.17 added file_setattr): inode flags by path,
    // and the generation number by ioctl.
    char file_attr[24] = {};
    CHILD_EXPECT_ERRNO(::syscall(469 /* file_setattr */, AT_FDCWD, canary.c_str(), file_attr, sizeof file_attr, 0), EPERM);
    const int fd = ::open(canary.c_str(), O_RDONLY | O_CLOEXEC);
    long version = 7;
    CHILD_EXPECT_ERRNO(::ioctl(fd, 0x40087602 /* FS_IOC_SETVERSION */, &version), EPERM);
    CHILD_EXPECT_ERRNO(::ioctl(fd, 0x40047602 /* FS_IOC32_SETVERSION */, &version), EPERM);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  const Metadata after = metadata_of(canary);
  EXPECT_TRUE(after == before) << describe(before) << " became " << describe(after);
  if (xattrs) {
    EXPECT_EQ(after.xattrs, "user.kept=1;");
  }
  EXPECT_EQ(read_file(canary), "canary-7e21\n");
}

TEST_F(SeccompTest, WithoutTheFilterTheSameCallsChangeTheCanary) {
  // Control: the owner of the file changes its mode and times freely.
  TempDir dir;
  const std::string canary = dir.write("canary.txt", "canary-7e21\n");
  ASSERT_EQ(::chmod(canary.c_str(), 0644), 0);
  const Metadata before = metadata_of(canary);
  auto result = in_child([&] {
    CHILD_EXPECT(::chmod(canary.c_str(), 0600) == 0);
    const struct timespec zero[2] = {{0, 0}, {0, 0}};
    CHILD_EXPECT(::utimensat(AT_FDCWD, canary.c_str(), zero, 0) == 0);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  EXPECT_FALSE(metadata_of(canary) == before);
}

// The limits and scheduling of `pid` as /proc shows them.
std::string process_state(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::string stat = read_file(dir + "/stat");
  const std::size_t close = stat.rfind(')');
  // After "pid (comm) ": fields 3..; priority and nice are fields 18 and 19.
  std::istringstream fields(stat.substr(close + 2));
  std::vector<std::string> f;
  for (std::string w; fields >> w;) f.push_back(w);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  ::sched_getaffinity(pid, sizeof cpus, &cpus);
  return read_file(dir + "/limits") + " nice " + (f.size() > 16 ? f[16] : "?") +
         " policy " + std::to_string(::sched_getscheduler(pid)) + " cpus " + std::to_string(CPU_COUNT(&cpus)) +
         " ioprio " + std::to_string(::syscall(SYS_ioprio_get, 1, pid));
}

TEST_F(SeccompTest, DeniesChangingOtherProcessesLimitsAndScheduling) {
  ProcessCanary canary;
  const std::string before = process_state(canary.pid());
  const std::string host_before = process_state(::getpid());
  auto result = in_child([&] {
    load();
    const pid_t other = canary.pid(), host = ::getppid();
    struct rlimit none {0, 0}, got {};
    for (pid_t target : {other, host, pid_t{1}, pid_t{-1}}) {
      CHILD_EXPECT_ERRNO(::prlimit(target, RLIMIT_NOFILE, &none, nullptr), EPERM);
      CHILD_EXPECT_ERRNO(::prlimit(target, RLIMIT_FSIZE, &none, nullptr), EPERM);
      CHILD_EXPECT_ERRNO(::setpriority(PRIO_PROCESS, static_cast<id_t>(target), 19), EPERM);
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(0, &one);
      CHILD_EXPECT_ERRNO(::sched_setaffinity(target, sizeof one, &one), EPERM);
      struct sched_param param {};
      CHILD_EXPECT_ERRNO(::sched_setscheduler(target, SCHED_IDLE, &param), EPERM);
      CHILD_EXPECT_ERRNO(::sched_setparam(target, &param), EPERM);
      char attr[56] = {};
      attr[0] = 56;
      CHILD_EXPECT_ERRNO(::syscall(SYS_sched_setattr, target, attr, 0), EPERM);
      CHILD_EXPECT_ERRNO(::syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, target, 7 << 13), EPERM);
      unsigned long mask = 1;
      CHILD_EXPECT_ERRNO(::syscall(SYS_migrate_pages, target, 64, &mask, &mask), EPERM);
      CHILD_EXPECT_ERRNO(::syscall(SYS_move_pages, target, 0, nullptr, nullptr, nullptr, 0), EPERM);
    }
    // Reading stays allowed (a runtime's threads read their own by thread id).
    CHILD_EXPECT(::prlimit(other, RLIMIT_NOFILE, nullptr, &got) == 0);
    struct sched_param read_param {};
    CHILD_EXPECT(::sched_getparam(other, &read_param) == 0);
    errno = 0;
    ::getpriority(PRIO_PROCESS, static_cast<id_t>(other));
    CHILD_EXPECT(errno == 0);
    // A group or a user is never the caller (PRIO_USER 0: every process of the uid).
    CHILD_EXPECT_ERRNO(::setpriority(PRIO_USER, 0, 19), EPERM);
    CHILD_EXPECT_ERRNO(::setpriority(PRIO_PGRP, 0, 19), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_ioprio_set, 3 /* IOPRIO_WHO_USER */, 0, 7 << 13), EPERM);
    CHILD_EXPECT_ERRNO(::syscall(SYS_ioprio_set, 2 /* IOPRIO_WHO_PGRP */, 0, 7 << 13), EPERM);
    // Its own limits and priority, by 0 or by its own pid, as before.
    for (pid_t self : {pid_t{0}, ::getpid()}) {
      CHILD_EXPECT(::prlimit(self, RLIMIT_NOFILE, nullptr, &got) == 0);
      CHILD_EXPECT(::prlimit(self, RLIMIT_NOFILE, &got, nullptr) == 0);
      CHILD_EXPECT(::setpriority(PRIO_PROCESS, static_cast<id_t>(self), 1) == 0);
      cpu_set_t cpus;
      CHILD_EXPECT(::sched_getaffinity(self, sizeof cpus, &cpus) == 0);
      CHILD_EXPECT(::syscall(SYS_ioprio_get, 1, self) >= 0);
    }
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  EXPECT_EQ(process_state(canary.pid()), before);
  EXPECT_EQ(process_state(::getpid()), host_before);
  EXPECT_TRUE(canary.alive());
}

TEST_F(SeccompTest, WithoutTheFilterProlimitReachesTheOtherProcess) {
  // Control: the same uid may lower an unrelated process's limits.
  ProcessCanary canary;
  const std::string before = process_state(canary.pid());
  auto result = in_child([&] {
    struct rlimit low {64, 64};
    CHILD_EXPECT(::prlimit(canary.pid(), RLIMIT_NOFILE, &low, nullptr) == 0);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  EXPECT_NE(process_state(canary.pid()), before);
}

// --- rlimits -------------------------------------------------------------------

TEST(Rlimits, DenyCoresFileGrowthDescriptorsAndMemory) {
  TempDir dir;
  const std::string file = dir.write("grow.txt", "");
  const rlimits::Plan plan = rlimits::plan_rlimits({.data_bytes = 256u << 20, .open_files = 32});
  auto result = in_child([&] {
    CHILD_EXPECT(rlimits::apply_rlimits(plan));
    struct rlimit lim {};
    CHILD_EXPECT(::getrlimit(RLIMIT_CORE, &lim) == 0 && lim.rlim_cur == 0 && lim.rlim_max == 0);
    // File size 0: growing a file fails (SIGXFSZ ignored here, so the write says EFBIG).
    CHILD_EXPECT(::signal(SIGXFSZ, SIG_IGN) != SIG_ERR);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
    CHILD_EXPECT(fd >= 0);
    CHILD_EXPECT_ERRNO(::write(fd, "x", 1), EFBIG);
    int pipe_fds[2];  // pipes are not files: the protocol keeps working
    CHILD_EXPECT(::pipe(pipe_fds) == 0 && ::write(pipe_fds[1], "x", 1) == 1);
    // Descriptors: the 33rd fails.
    int opened = 0;
    for (int i = 0; i < 64; ++i) {
      if (::open("/dev/null", O_RDONLY) < 0) {
        CHILD_EXPECT(errno == EMFILE);
        break;
      }
      ++opened;
    }
    CHILD_EXPECT(opened < 32);
    // Private writable memory beyond RLIMIT_DATA.
    void* big = ::mmap(nullptr, 512u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHILD_EXPECT(big == MAP_FAILED && errno == ENOMEM);
  });
  EXPECT_TRUE(result.passed()) << result.describe();
  EXPECT_EQ(fs::file_size(file), 0u);
}

TEST(Rlimits, NeverRaiseTheHostsHardLimit) {
  struct rlimit host {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &host), 0);
  const rlimits::Plan plan = rlimits::plan_rlimits({.data_bytes = 0, .open_files = ~std::uint64_t{0} >> 1});
  bool found = false;
  for (std::size_t i = 0; i < plan.count; ++i) {
    if (plan.entries[i].resource == RLIMIT_NOFILE) {
      found = true;
      if (host.rlim_max != RLIM_INFINITY) {
        EXPECT_LE(plan.entries[i].value.rlim_max, host.rlim_max);
      }
    }
    EXPECT_NE(plan.entries[i].resource, RLIMIT_DATA);  // 0: left alone
  }
  EXPECT_TRUE(found);
}

// --- Runtime files and the probe -------------------------------------------------

TEST(RuntimeFiles, ListsTheInterpreterAndLibrariesOfADynamicExecutable) {
  auto files = runtime_files("/bin/sh");
  ASSERT_TRUE(files.has_value()) << files.error().describe();
  EXPECT_EQ(files->executable, fs::canonical("/bin/sh").string());
  EXPECT_FALSE(files->interpreter.empty());
  EXPECT_TRUE(fs::path(files->interpreter).is_absolute());
  bool libc = false;
  for (const auto& lib : files->libraries) {
    EXPECT_TRUE(fs::is_regular_file(lib)) << lib;
    EXPECT_EQ(lib, fs::canonical(lib).string());
    libc = libc || fs::path(lib).filename().string().starts_with("libc.so");
  }
  EXPECT_TRUE(libc);
}

TEST(RuntimeFiles, RefusesWhatIsNotAnElfExecutable) {
  TempDir dir;
  const std::string text = dir.write("script.sh", "#!/bin/sh\necho hi\n");
  auto script = runtime_files(text);
  ASSERT_FALSE(script.has_value());
  EXPECT_EQ(script.error().code, Errc::runtime_missing);
  auto missing = runtime_files((dir / "missing").string());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, Errc::runtime_missing);
}

TEST(Probe, DescribesEveryLayerInContainmentOrder) {
  const Support& s = machine();
  EXPECT_EQ(s.landlock_abi, landlock::abi_version());
  std::vector<std::string> ids;
  for (const Layer& layer : describe_layers(s)) {
    ids.push_back(layer.id);
    EXPECT_FALSE(layer.denies.empty()) << layer.id;
    EXPECT_FALSE(layer.detail.empty()) << layer.id;
  }
  const std::vector<std::string> expected = {
      "session", "workdir", "mount-namespace", "sandbox-uid", "namespaces", "pid-namespace", "die-with-parent",
      "rlimits", "descriptors", "no-new-privs", "landlock-fs", "landlock-net", "landlock-scope", "seccomp",
      "environment", "node-permission"};
  EXPECT_EQ(ids, expected);
  const bool complete = s.user_namespaces && s.full_error.empty() && s.landlock_abi >= 6 && s.seccomp;
  EXPECT_EQ(warnings(s).empty(), complete);
  Support bare;
  bare.namespaces_error = "unshare failed";
  const auto said = warnings(bare);
  ASSERT_EQ(said.size(), 3u);
  EXPECT_NE(said[1].find("lacks Landlock"), std::string::npos) << said[1];
}

// --- contain(): every layer, in order, around a real program -------------------

// Runs /bin/sh under a Policy with `layers`; the script gets the workdir and
// the canary file as $1 and $2. Returns the wait status and sh's output.
struct ShellRun {
  int status = 0;
  std::string out;
};

ShellRun run_contained_shell(const std::string& script, const std::string& workdir, const std::string& canary,
                             Layers layers = {}, const std::string& workdir_override = {}) {
  auto policy = Policy::prepare("/bin/sh", {}, layers);
  EXPECT_TRUE(policy.has_value()) << policy.error().describe();
  if (!policy) return {};
  int in[2], out[2];
  EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
  EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
  // The child's ends must be >= 3 (they are: 0/1/2 are the test's own).
  const ChildSpec spec{.argv = {"/bin/sh", "-c", script, "sh", workdir, canary},
                       .env = {"ONLY=this"},
                       .workdir = workdir_override.empty() ? workdir : workdir_override,
                       .limits = {.data_bytes = 256u << 20, .open_files = 64}};
  Fd report_host, report_child;  // with a PID namespace (contain.h)
  if ((*policy)->namespace_plan().pid()) {
    EXPECT_TRUE(report_socket(report_host, report_child));
  }
  auto containment =
      Containment::prepare(*policy, spec, ChildStdio{in[0], out[1], out[1], report_child.get(), report_host.get()});
  EXPECT_TRUE(containment.has_value()) << containment.error().describe();
  if (!containment) return {};
  const pid_t pid = start(**containment);
  report_child.reset();
  ::close(in[0]);
  ::close(in[1]);
  ::close(out[1]);
  ShellRun run;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) run.out.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  EXPECT_EQ(::waitpid(pid, &run.status, 0), pid);
  return run;
}

// A hostile shell script: every line tries to cross one layer and says what
// happened. Its error messages go to the same pipe (no 2>/dev/null: opening
// /dev/null for writing is itself denied). The last line ends dash when the
// fork fails.
constexpr const char* kHostileScript = R"(
echo "env:$ONLY:$HOME"
kill -0 $PPID && echo kill:allowed || echo kill:denied
read line < "$2" && echo "read:$line" || echo read:denied
echo planted > "$1/planted" && echo write:allowed || echo write:denied
echo "$(echo sub)shell"
)";

TEST(Contain, RunsARuntimeUnderEveryLayer) {
  const Support& s = machine();
  if (s.landlock_abi < 6 || !s.seccomp) GTEST_SKIP() << "needs Landlock ABI 6 and seccomp";
  TempDir dir;
  const std::string canary = dir.write("canary.txt", "secret-91af\n");
  const fs::path work = dir / "work";
  fs::create_directory(work);
  auto run = run_contained_shell(kHostileScript, work.string(), canary);
  // sh itself ran (Landlock granted it and its libraries, the exec went through).
  EXPECT_NE(run.out.find("env:this:\n"), std::string::npos) << run.out;  // exactly the given environment
  EXPECT_NE(run.out.find("kill:denied"), std::string::npos) << run.out;   // Landlock signal scope
  EXPECT_NE(run.out.find("write:denied"), std::string::npos) << run.out;  // Landlock: no writes
  EXPECT_NE(run.out.find("read:denied"), std::string::npos) << run.out;   // Landlock: no reads
  EXPECT_EQ(run.out.find("subshell"), std::string::npos) << run.out;      // seccomp: no fork
  EXPECT_NE(run.out.find("Cannot fork"), std::string::npos) << run.out;
  ASSERT_TRUE(WIFEXITED(run.status)) << run.status;
  EXPECT_NE(WEXITSTATUS(run.status), 0) << run.out;
  EXPECT_TRUE(fs::is_empty(work));
  EXPECT_EQ(read_file(canary), "secret-91af\n");
}

TEST(Contain, WithoutItsLayersTheSameScriptCrosses) {
  // The control experiment for the test above: with the kernel layers off the
  // script does cross, so the denials above are the layers' doing. Only the
  // resource limits still hold: the write creates the file, then growing it
  // raises SIGXFSZ (RLIMIT_FSIZE = 0).
  TempDir dir;
  const std::string canary = dir.write("canary.txt", "secret-91af\n");
  const fs::path work = dir / "work";
  fs::create_directory(work);
  auto run = run_contained_shell(kHostileScript, work.string(), canary,
                                 Layers{.namespaces = false, .landlock = false, .seccomp = false, .sandbox_uid = false});
  EXPECT_NE(run.out.find("kill:allowed"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("read:secret-91af"), std::string::npos) << run.out;
  EXPECT_TRUE(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGXFSZ) << run.status << run.out;
  EXPECT_TRUE(fs::exists(work / "planted"));
  EXPECT_EQ(fs::file_size(work / "planted"), 0u);
}

TEST(Contain, ForbidsExecAfterTheRuntimeStarted) {
  if (!machine().seccomp) GTEST_SKIP() << "needs seccomp";
  TempDir dir;
  const char* script = "exec /bin/true";
  auto contained = run_contained_shell(script, dir.path().string(), "/dev/null");
  ASSERT_TRUE(WIFEXITED(contained.status)) << contained.status;
  EXPECT_NE(WEXITSTATUS(contained.status), 0);
  EXPECT_NE(contained.out.find("not permitted"), std::string::npos) << contained.out;  // EPERM, not EACCES
  // Control: without seccomp (Landlock still on) the exec is refused by
  // Landlock instead (/bin/true is not the runtime); with neither, it runs.
  if (machine().landlock_abi >= 1) {
    auto landlock_only = run_contained_shell(
        script, dir.path().string(), "/dev/null",
        Layers{.namespaces = true, .landlock = true, .seccomp = false, .mount_namespace = false});
    EXPECT_NE(landlock_only.out.find("Permission denied"), std::string::npos) << landlock_only.out;
  }
  auto bare = run_contained_shell(script, dir.path().string(), "/dev/null",
                                  Layers{.namespaces = false, .landlock = false, .seccomp = false, .sandbox_uid = false});
  ASSERT_TRUE(WIFEXITED(bare.status));
  EXPECT_EQ(WEXITSTATUS(bare.status), 0) << bare.out;
}

TEST(Contain, AFailedStepIsTheChildsExitCode) {
  TempDir dir;
  auto run = run_contained_shell("echo unreachable", dir.path().string(), "/dev/null", Layers{},
                                 (dir / "no-such-dir").string());
  ASSERT_TRUE(WIFEXITED(run.status));
  EXPECT_EQ(WEXITSTATUS(run.status), static_cast<int>(Step::chdir));
  EXPECT_EQ(step_name(WEXITSTATUS(run.status)), "chdir");
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(step_name(0), "");
  EXPECT_EQ(step_name(static_cast<int>(Step::landlock)), "landlock_restrict_self");
}

TEST(Contain, PolicyGrantsTheRuntimeItsFilesAndNothingElse) {
  auto policy = Policy::prepare("/bin/sh", {"/dev/null"});
  ASSERT_TRUE(policy.has_value()) << policy.error().describe();
  const auto& grants = (*policy)->grants();
  ASSERT_EQ(grants.read_execute.size(), 2u);
  EXPECT_EQ(grants.read_execute[0], fs::canonical("/bin/sh").string());
  EXPECT_EQ(grants.read_execute[1], (*policy)->files().interpreter);
  for (const auto& path : grants.read) {
    const bool library = std::find((*policy)->files().libraries.begin(), (*policy)->files().libraries.end(), path) !=
                         (*policy)->files().libraries.end();
    EXPECT_TRUE(library || path == "/etc/ld.so.cache" || path == "/dev/null") << path;
  }
  EXPECT_GE((*policy)->exec_fd(), 0);
  const Support& s = machine();
  EXPECT_EQ((*policy)->layers().landlock, s.landlock_abi >= 1);
  EXPECT_EQ((*policy)->layers().seccomp, s.seccomp);
  EXPECT_EQ((*policy)->layers().namespaces, s.user_namespaces);
  auto missing = Policy::prepare("/nonexistent/runtime", {});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, Errc::runtime_missing);
}

}  // namespace
}  // namespace taskyon::hardening
