#include "taskyon/hardening/contain.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "taskyon/hardening/init_image.h"
#include "taskyon/hardening/probe.h"

namespace taskyon::hardening {

namespace {

// Loader index of library paths: lets the dynamic loader find libraries
// outside its default directories. Granted read-only when present.
constexpr const char* kLoaderCache = "/etc/ld.so.cache";

[[noreturn]] void die(Step step) noexcept { ::_exit(static_cast<int>(step)); }

void require(bool ok, Step step) noexcept {
  if (!ok) die(step);
}

bool reset_signal_dispositions(const struct sigaction& default_action) noexcept {
  for (int sig = 1; sig < 32; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    if (::sigaction(sig, &default_action, nullptr) != 0) return false;
  }
  return true;
}

// Each warning once per process, on stderr.
void warn_once(const std::string& text) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard lock(mu);
  if (said.insert(text).second) std::fprintf(stderr, "taskyon: warning: %s\n", text.c_str());
}

}  // namespace

std::string_view step_name(int exit_code) {
  switch (static_cast<Step>(exit_code)) {
    case Step::proc_self: return "open /proc/self";
    case Step::drop_ids: return "dropping to the sandbox uid (setgroups/setresgid/setresuid)";
    case Step::mount_root: return "building the sandbox's mount namespace";
    case Step::pid_init: return "starting the PID namespace's init";
    case Step::unshare: return "unshare";
    case Step::id_maps: return "writing the user namespace's id maps";
    case Step::hostname: return "sethostname";
    case Step::no_new_privs: return "prctl(PR_SET_NO_NEW_PRIVS)";
    case Step::landlock: return "landlock_restrict_self";
    case Step::seccomp: return "seccomp(SECCOMP_SET_MODE_FILTER)";
    case Step::sigmask: return "sigprocmask";
    case Step::signals: return "sigaction";
    case Step::setsid: return "setsid";
    case Step::pdeathsig: return "prctl(PR_SET_PDEATHSIG)";
    case Step::parent_gone: return "getppid (host died during start)";
    case Step::rlimits: return "setrlimit";
    case Step::dup_stdio: return "dup2";
    case Step::close_fds: return "close_range";
    case Step::chdir: return "chdir";
    case Step::execve: return "execve";
  }
  return {};
}

Result<std::shared_ptr<const Policy>> Policy::prepare(const std::string& executable,
                                                      const std::vector<std::string>& read_files, Layers wanted,
                                                      seccomp::Exceptions exceptions,
                                                      const std::vector<std::string>& read_trees) {
  auto files = runtime_files(executable);
  if (!files) return std::unexpected(std::move(files.error()));
  std::shared_ptr<Policy> policy(new Policy());
  policy->files_ = std::move(*files);
  policy->exceptions_ = exceptions;
  const RuntimeFiles& f = policy->files_;

  // Exec opens the executable and its interpreter for reading and execution.
  policy->grants_.read_execute.push_back(f.executable);
  if (!f.interpreter.empty()) policy->grants_.read_execute.push_back(f.interpreter);
  policy->grants_.read = f.libraries;
  struct stat st {};
  if (!f.interpreter.empty() && ::stat(kLoaderCache, &st) == 0) policy->grants_.read.push_back(kLoaderCache);
  for (const std::string& path : read_files) policy->grants_.read.push_back(path);

  policy->exec_fd_.reset(::open(f.executable.c_str(), O_PATH | O_CLOEXEC));
  if (!policy->exec_fd_) {
    return fail(Errc::runtime_missing, fmt::format("cannot open {}: {}", f.executable, std::strerror(errno)),
                f.executable);
  }

  const Support& machine = support();
  for (const std::string& warning : warnings(machine)) warn_once(warning);
  Layers& active = policy->active_;
  active.namespaces = wanted.namespaces && machine.user_namespaces;
  active.sandbox_uid = wanted.sandbox_uid && machine.sandbox_uid;
  active.mount_namespace = wanted.mount_namespace && active.namespaces && machine.mount_namespace;
  active.pid_namespace = wanted.pid_namespace && active.namespaces && machine.pid_namespace;
  policy->namespaces_ = namespaces::plan_namespaces({.user_net_ipc_uts = active.namespaces,
                                                     .drop_ids = active.sandbox_uid,
                                                     .mount = active.mount_namespace,
                                                     .pid = active.pid_namespace});
  if (active.mount_namespace) {
    std::vector<std::string> named = f.named;
    if (!f.interpreter.empty() && ::stat(kLoaderCache, &st) == 0) named.push_back(kLoaderCache);
    for (const std::string& path : read_files) named.push_back(path);
    auto ops = mounts::plan_files(named, read_trees);
    if (!ops) return std::unexpected(std::move(ops.error()));
    policy->mount_files_ = std::move(*ops);
    // No /proc inside, but runtimes ask /proc/self/exe where they are (Deno
    // panics without it, Node's process.execPath reads it): a symlink to the
    // executable's real path, bound above, answers as the kernel's would.
    using Kind = mounts::Op::Kind;
    policy->mount_files_.push_back({Kind::dir, "/proc", {}, 0});
    policy->mount_files_.push_back({Kind::dir, "/proc/self", {}, 0});
    policy->mount_files_.push_back({Kind::symlink, "/proc/self/exe", f.executable, 0});
  }
  if (wanted.landlock && machine.landlock_abi >= 1) {
    auto ruleset = landlock::Ruleset::build(policy->grants_, machine.landlock_abi);
    if (!ruleset) return std::unexpected(std::move(ruleset.error()));
    policy->ruleset_.emplace(std::move(*ruleset));
    policy->active_.landlock = true;
  } else {
    policy->active_.landlock = false;
  }
  policy->active_.seccomp = wanted.seccomp && machine.seccomp;
  active.session = wanted.session;
  active.die_with_parent = wanted.die_with_parent;
  active.rlimits = wanted.rlimits;
  active.descriptors = wanted.descriptors;
  active.no_new_privs = wanted.no_new_privs;
  return std::shared_ptr<const Policy>(std::move(policy));
}

Result<std::unique_ptr<const Containment>> Containment::prepare(std::shared_ptr<const Policy> policy,
                                                                const ChildSpec& spec, ChildStdio stdio) {
  std::unique_ptr<Containment> c(new Containment());
  c->policy_ = std::move(policy);
  c->host_ = ::getpid();
  c->stdio_ = stdio;
  c->workdir_ = spec.workdir;
  c->argv_strings_ = spec.argv;
  c->env_strings_ = spec.env;
  for (std::string& arg : c->argv_strings_) c->argv_.push_back(arg.data());
  c->argv_.push_back(nullptr);
  for (std::string& entry : c->env_strings_) c->envp_.push_back(entry.data());
  c->envp_.push_back(nullptr);
  sigemptyset(&c->empty_set_);
  c->default_action_.sa_handler = SIG_DFL;
  sigemptyset(&c->default_action_.sa_mask);
  c->rlimits_ = rlimits::plan_rlimits(spec.limits);
  if (c->policy_->namespace_plan().pid()) {
    if (stdio.report < 0) return fail(Errc::internal, "a PID namespace child needs its report socket");
    c->runtime_stack_ = std::make_unique<unsigned char[]>(Containment::kRuntimeStack);
    if (const auto& image = init_image_fd()) c->init_image_ = *image;
  }
  if (c->policy_->layers().mount_namespace) c->root_ = mounts::plan_root(c->policy_->mount_files(), spec.workdir);
  if (c->policy_->layers().seccomp) {
    const seccomp::AllowedExec exec{.fd = c->policy_->exec_fd(),
                                    .path = c->empty_path_,
                                    .argv = c->argv_.data(),
                                    .envp = c->envp_.data(),
                                    .flags = AT_EMPTY_PATH};
    auto filter = seccomp::Filter::build(exec, c->policy_->seccomp_exceptions());
    if (!filter) return std::unexpected(std::move(filter.error()));
    c->filter_.emplace(std::move(*filter));
  }
  return std::unique_ptr<const Containment>(std::move(c));
}

namespace {

// Blocks until `pid` ends; its wait status, or -1.
int wait_for(pid_t pid) noexcept {
  int status = 0;
  for (;;) {
    const long r = ::syscall(SYS_wait4, pid, &status, 0, nullptr);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;
  }
}

// Closes every descriptor but `a` and `b` (either may be -1).
void keep_only(int a, int b) noexcept {
  const int low = std::min(a, b), high = std::max(a, b);
  unsigned next = 0;
  for (const int keep : {low, high}) {
    if (keep < 0 || static_cast<unsigned>(keep) < next) continue;
    if (static_cast<unsigned>(keep) > next) ::close_range(next, static_cast<unsigned>(keep) - 1, 0);
    next = static_cast<unsigned>(keep) + 1;
  }
  ::close_range(next, ~0U, 0);
}

// `value` (>= 0) in decimal into `out` (16 bytes), without allocating.
char* decimal(int value, char (&out)[16]) noexcept {
  char reversed[16];
  int n = 0;
  do {
    reversed[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 && n < 15);
  for (int i = 0; i < n; ++i) out[i] = reversed[n - 1 - i];
  out[n] = '\0';
  return out;
}

// True while the other end of the connected socket `fd` is open (the host's
// end of the report socket: the host is still there).
bool peer_open(int fd) noexcept {
  struct pollfd p {fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 0;
}

// Steps 9-14 of contain.h: from the resource limits to exec.
[[noreturn]] void finish(const Policy& policy, const Layers layers,
                         const rlimits::Plan& limits, const ChildStdio& stdio,
                         const std::optional<seccomp::Filter>& filter, char* const* argv, char* const* envp,
                         const char* empty_path) noexcept {
  if (layers.rlimits) require(rlimits::apply_rlimits(limits), Step::rlimits);

  // The pipe ends are >= 3, so each dup2 is a real copy and clears close-on-exec.
  require(::dup2(stdio.in, 0) == 0 && ::dup2(stdio.out, 1) == 1 && ::dup2(stdio.err, 2) == 2, Step::dup_stdio);
  if (layers.descriptors) require(::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0, Step::close_fds);

  if (layers.no_new_privs) require(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, Step::no_new_privs);

  if (layers.landlock) require(landlock::restrict_self(*policy.ruleset()), Step::landlock);

  if (filter) require(seccomp::load(*filter), Step::seccomp);

  ::syscall(SYS_execveat, policy.exec_fd(), empty_path, argv, envp, AT_EMPTY_PATH);
  die(Step::execve);
}

}  // namespace

// PID 2 of a PID namespace (contain.h): cloned by the init with CLONE_VM |
// CLONE_VFORK, so until exec it shares the init's memory and must only make
// syscalls. Tells the host its pid, then steps 8-14.
int run_runtime(void* containment) noexcept {
  const Containment& c = *static_cast<const Containment*>(containment);
  if (c.policy_->layers().die_with_parent) {
    require(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, Step::pdeathsig);
    require(::getppid() == 1, Step::parent_gone);
  }
  const char pid_message = kReportPid;
  require(::send(c.stdio_.report, &pid_message, 1, MSG_NOSIGNAL) == 1, Step::pid_init);
  finish(*c.policy_, c.policy_->layers(), c.rlimits_, c.stdio_, c.filter_, c.argv_.data(), c.envp_.data(),
         c.empty_path_);
}

namespace {

// The init, PID 1 of the PID namespace, after steps 1-6: clones the runtime,
// waits for it, reports its wait status to the host and exits (the kernel then
// kills whatever is left in the namespace).
[[noreturn]] void run_init(const Containment& c, bool die_with_parent, int report, int init_image,
                           unsigned char* stack_top) noexcept {
  if (die_with_parent) {
    require(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, Step::pdeathsig);
    require(peer_open(report), Step::parent_gone);  // getppid() is 0 here: the host is outside
  }
  // Nothing in the namespace may ptrace the init, which holds a copy of the
  // host's memory (the runtime's exec makes it dumpable again).
  require(::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0, Step::pid_init);
  const pid_t runtime = ::clone(run_runtime, stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD,
                                const_cast<Containment*>(&c));
  require(runtime > 0, Step::pid_init);
  // The runtime has exec'd (or failed): keep nothing of the host's but the
  // report end, and the program to exec.
  keep_only(report, init_image);
  if (init_image >= 0) {
    // Become taskyon-init (init_image.h): the host's memory goes with the exec.
    char name[] = "taskyon-init", report_text[16], runtime_text[16];
    char* argv[] = {name, decimal(report, report_text), decimal(runtime, runtime_text), nullptr};
    char* envp[] = {nullptr};
    if (::fcntl(report, F_SETFD, 0) == 0)  // the report end stays open across the exec
      ::syscall(SYS_execveat, init_image, "", argv, envp, AT_EMPTY_PATH);
    ::fcntl(report, F_SETFD, FD_CLOEXEC);
    ::close(init_image);  // it failed: wait here instead, as a fork of the host
  }
  struct {
    char kind;
    int status;
  } __attribute__((packed)) message{kReportStatus, wait_for(runtime)};
  (void)!::send(report, &message, sizeof message, MSG_NOSIGNAL);
  // For a parent that reads no report: the runtime's exit code, or 128 + its signal.
  const int status = message.status;
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 125);
}

}  // namespace

// The containment, top to bottom (contain.h says why in this order).
void contain(const Containment& c) noexcept {
  const Policy& policy = *c.policy_;
  const Layers layers = policy.layers();
  const namespaces::Plan& ns = policy.namespace_plan();

  if (c.stdio_.report_peer >= 0) ::close(c.stdio_.report_peer);  // the host's end: only the host holds it
  // Every handler back to its default before any signal is let in (the
  // launcher thread starts the child with all of them blocked).
  require(reset_signal_dispositions(c.default_action_), Step::signals);
  require(::sigprocmask(SIG_SETMASK, &c.empty_set_, nullptr) == 0, Step::sigmask);

  if (layers.session) require(::setsid() >= 0, Step::setsid);

  require(::chdir(c.workdir_.c_str()) == 0, Step::chdir);

  int proc_self = -1;
  if (ns.flags != 0) {
    proc_self = namespaces::open_proc_self();
    require(proc_self >= 0, Step::proc_self);
  }
  if (ns.mount_first) {
    require(namespaces::unshare_mount_first(ns) && mounts::build_root(c.root_), Step::mount_root);
  }
  require(namespaces::drop_ids(ns), Step::drop_ids);
  if (ns.flags != 0) {
    require(namespaces::unshare_all(ns), Step::unshare);
    require(namespaces::write_id_maps(ns, proc_self), Step::id_maps);
    require(namespaces::set_hostname(), Step::hostname);
    if (layers.mount_namespace && !ns.mount_first) require(mounts::build_root(c.root_), Step::mount_root);
    ::close(proc_self);
  }

  if (ns.pid()) {
    // 16-byte aligned top of the runtime's stack (the stack grows down).
    auto top = reinterpret_cast<std::uintptr_t>(c.runtime_stack_.get() + Containment::kRuntimeStack);
    run_init(c, layers.die_with_parent, c.stdio_.report, c.init_image_, reinterpret_cast<unsigned char*>(top & ~std::uintptr_t{15}));
  }
  if (layers.die_with_parent) {
    require(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, Step::pdeathsig);
    require(::getppid() == c.host_, Step::parent_gone);
  }
  finish(policy, layers, c.rlimits_, c.stdio_, c.filter_, c.argv_.data(), c.envp_.data(), c.empty_path_);
}

bool report_socket(Fd& host_end, Fd& child_end) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) return false;
  Fd ends[2] = {Fd(fds[0]), Fd(fds[1])};
  for (Fd& end : ends) {
    if (end.get() < 3) {
      const int moved = ::fcntl(end.get(), F_DUPFD_CLOEXEC, 3);
      if (moved < 0) return false;
      end.reset(moved);
    }
  }
  const int on = 1;
  if (::setsockopt(ends[0].get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0) return false;
  host_end = std::move(ends[0]);
  child_end = std::move(ends[1]);
  return true;
}

pid_t start(const Containment& c) noexcept {
  const pid_t pid = namespaces::clone_child(c.policy_->namespace_plan());
  if (pid == 0) contain(c);
  return pid;
}

}  // namespace taskyon::hardening
