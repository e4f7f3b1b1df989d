#include "taskyon/hardening/contain.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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
  if (wanted.namespaces && machine.user_namespaces) {
    policy->active_.namespaces = true;
    policy->namespaces_ = namespaces::plan_namespaces();
  } else {
    policy->active_.namespaces = false;
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

// The containment, top to bottom (contain.h says why in this order).
void contain(const Containment& c) noexcept {
  const Policy& policy = *c.policy_;
  const Layers layers = policy.layers();

  require(::sigprocmask(SIG_SETMASK, &c.empty_set_, nullptr) == 0, Step::sigmask);
  require(reset_signal_dispositions(c.default_action_), Step::signals);

  require(::setsid() >= 0, Step::setsid);

  if (layers.namespaces) {
    require(namespaces::unshare_all(policy.namespace_plan()), Step::unshare);
    require(namespaces::write_id_maps(policy.namespace_plan()), Step::id_maps);
    require(namespaces::set_hostname(), Step::hostname);
  }

  require(::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0, Step::pdeathsig);
  require(::getppid() == c.host_, Step::parent_gone);

  require(rlimits::apply_rlimits(c.rlimits_), Step::rlimits);

  // The pipe ends are >= 3, so each dup2 is a real copy and clears close-on-exec.
  require(::dup2(c.stdio_.in, 0) == 0 && ::dup2(c.stdio_.out, 1) == 1 && ::dup2(c.stdio_.err, 2) == 2,
          Step::dup_stdio);
  require(::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0, Step::close_fds);

  require(::chdir(c.workdir_.c_str()) == 0, Step::chdir);

  require(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, Step::no_new_privs);

  if (layers.landlock) require(landlock::restrict_self(*policy.ruleset()), Step::landlock);

  if (c.filter_) require(seccomp::load(*c.filter_), Step::seccomp);

  ::syscall(SYS_execveat, policy.exec_fd(), c.empty_path_, c.argv_.data(), c.envp_.data(), AT_EMPTY_PATH);
  die(Step::execve);
}

}  // namespace taskyon::hardening
