#include "taskyon/hardening/contain.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include <fmt/format.h>

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
                                                      seccomp::Exceptions exceptions) {
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
    auto ops = mounts::plan_files(named);
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

// Ends this process the way `status` says another one ended: the same exit
// code, or the same signal (never a core: the process is made undumpable).
[[noreturn]] void end_like(int status) noexcept {
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::kill(::getpid(), sig);
  }
  die(Step::pid_init);
}

// True when the read end `fd` of a pipe still has a writer.
bool writer_alive(int fd) noexcept {
  struct pollfd p {fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

// After unshare(CLONE_NEWPID): the relay and the init of contain.h. Returns
// only in the runtime's process (PID 2), with its parent-death signal armed.
void start_pid_namespace(pid_t host) noexcept {
  int alive[2], status_pipe[2];
  require(::pipe2(alive, O_CLOEXEC) == 0 && ::pipe2(status_pipe, O_CLOEXEC) == 0, Step::pid_init);
  const pid_t init = ::fork();
  require(init >= 0, Step::pid_init);
  if (init > 0) {  // the relay: holds alive[1] until it ends
    ::close(alive[0]);
    ::close(status_pipe[1]);
    require(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, Step::pdeathsig);
    require(::getppid() == host, Step::parent_gone);
    // Nothing of the host's stays open here but the two pipes.
    for (int fd = 0; fd < 3; ++fd) ::close(fd);
    const int low = std::min(alive[1], status_pipe[0]), high = std::max(alive[1], status_pipe[0]);
    ::close_range(3, static_cast<unsigned>(low) - 1, 0);
    ::close_range(static_cast<unsigned>(low) + 1, static_cast<unsigned>(high) - 1, 0);
    ::close_range(static_cast<unsigned>(high) + 1, ~0U, 0);
    const int init_status = wait_for(init);
    int runtime_status = 0;
    ssize_t n;
    do {
      n = ::read(status_pipe[0], &runtime_status, sizeof runtime_status);
    } while (n < 0 && errno == EINTR);
    end_like(n == static_cast<ssize_t>(sizeof runtime_status) ? runtime_status : init_status);
  }
  // The init, PID 1: dies with the relay.
  ::close(alive[1]);
  ::close(status_pipe[0]);
  require(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, Step::pdeathsig);
  require(writer_alive(alive[0]), Step::parent_gone);
  const pid_t runtime = ::fork();
  require(runtime >= 0, Step::pid_init);
  if (runtime > 0) {
    for (int fd = 0; fd < 3; ++fd) ::close(fd);
    const int status = wait_for(runtime);
    (void)!::write(status_pipe[1], &status, sizeof status);
    ::_exit(0);  // PID 1 ends: the kernel kills what is left of the namespace
  }
  // The runtime, PID 2: dies with the init.
  ::close(status_pipe[1]);
  require(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, Step::pdeathsig);
  require(::getppid() == 1, Step::parent_gone);
  ::close(alive[0]);
}

}  // namespace

// The containment, top to bottom (contain.h says why in this order).
void contain(const Containment& c) noexcept {
  const Policy& policy = *c.policy_;
  const Layers layers = policy.layers();
  const namespaces::Plan& ns = policy.namespace_plan();

  require(::sigprocmask(SIG_SETMASK, &c.empty_set_, nullptr) == 0, Step::sigmask);
  require(reset_signal_dispositions(c.default_action_), Step::signals);

  require(::setsid() >= 0, Step::setsid);

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
    start_pid_namespace(c.host_);
  } else {
    require(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, Step::pdeathsig);
    require(::getppid() == c.host_, Step::parent_gone);
  }

  require(rlimits::apply_rlimits(c.rlimits_), Step::rlimits);

  // The pipe ends are >= 3, so each dup2 is a real copy and clears close-on-exec.
  require(::dup2(c.stdio_.in, 0) == 0 && ::dup2(c.stdio_.out, 1) == 1 && ::dup2(c.stdio_.err, 2) == 2,
          Step::dup_stdio);
  require(::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0, Step::close_fds);

  require(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, Step::no_new_privs);

  if (layers.landlock) require(landlock::restrict_self(*policy.ruleset()), Step::landlock);

  if (c.filter_) require(seccomp::load(*c.filter_), Step::seccomp);

  ::syscall(SYS_execveat, policy.exec_fd(), c.empty_path_, c.argv_.data(), c.envp_.data(), AT_EMPTY_PATH);
  die(Step::execve);
}

}  // namespace taskyon::hardening
