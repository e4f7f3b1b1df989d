#include "taskyon/sandbox/process.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>

#include <fmt/format.h>

namespace taskyon::sandbox {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string_view exec_step_name(int exit_code) {
  switch (static_cast<ExecStep>(exit_code)) {
    case ExecStep::sigmask: return "sigprocmask";
    case ExecStep::signals: return "sigaction";
    case ExecStep::setsid: return "setsid";
    case ExecStep::pdeathsig: return "prctl(PR_SET_PDEATHSIG)";
    case ExecStep::parent_gone: return "getppid (host died during start)";
    case ExecStep::rlimit_core: return "setrlimit(RLIMIT_CORE)";
    case ExecStep::dup_stdio: return "dup2";
    case ExecStep::close_fds: return "close_range";
    case ExecStep::chdir: return "chdir";
    case ExecStep::execve: return "execve";
  }
  return {};
}

Child::Child(pid_t pid, Fd pidfd, Fd stdin_w, Fd stdout_r, Fd stderr_r)
    : pid_(pid), pidfd_(std::move(pidfd)), stdin_(std::move(stdin_w)),
      stdout_(std::move(stdout_r)), stderr_(std::move(stderr_r)) {}

Child::~Child() { reap(); }

void Child::kill() noexcept {
  std::lock_guard lock(mu_);
  if (reaped_) return;
  // The group first (the child leads it after setsid); then the child itself,
  // in case it was killed before its setsid ran.
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
}

int Child::reap() noexcept {
  std::lock_guard lock(mu_);
  if (reaped_) return status_;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  status_ = r == pid_ ? status : 0;
  reaped_ = true;
  return status_;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return fmt::format("was killed by signal {} (SIG{})", sig, abbrev ? abbrev : "?");
  }
  return fmt::format("ended with wait status {}", status);
}

namespace {

// A pipe whose both ends are O_CLOEXEC and numbered 3 or above, so that the
// child's dup2 onto 0/1/2 never collides with another pipe end.
bool make_pipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  Fd ends[2] = {Fd(fds[0]), Fd(fds[1])};
  for (Fd& end : ends) {
    if (end.get() < 3) {
      int moved = ::fcntl(end.get(), F_DUPFD_CLOEXEC, 3);
      if (moved < 0) return false;
      end.reset(moved);
    }
  }
  read_end = std::move(ends[0]);
  write_end = std::move(ends[1]);
  return true;
}

bool set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

[[noreturn]] void die(ExecStep step) { ::_exit(static_cast<int>(step)); }

// Runs in the child between fork and exec: syscalls only, no allocation, every
// call checked (STYLE habit 10). All arguments were prepared before fork.
[[noreturn]] void exec_child(pid_t host, int in_r, int out_w, int err_w, const char* workdir,
                             const char* program, char* const argv[], char* const envp[],
                             const sigset_t* empty_set, const struct sigaction* default_action) {
  if (::sigprocmask(SIG_SETMASK, empty_set, nullptr) != 0) die(ExecStep::sigmask);
  for (int sig = 1; sig < 32; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    if (::sigaction(sig, default_action, nullptr) != 0) die(ExecStep::signals);
  }
  if (::setsid() < 0) die(ExecStep::setsid);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die(ExecStep::pdeathsig);
  if (::getppid() != host) die(ExecStep::parent_gone);
  const struct rlimit no_core = {0, 0};
  if (::setrlimit(RLIMIT_CORE, &no_core) != 0) die(ExecStep::rlimit_core);
  // The pipe ends are >= 3 (make_pipe), so each dup2 is a real copy and clears O_CLOEXEC.
  if (::dup2(in_r, 0) != 0 || ::dup2(out_w, 1) != 1 || ::dup2(err_w, 2) != 2) die(ExecStep::dup_stdio);
  if (::close_range(3, ~0U, 0) != 0) die(ExecStep::close_fds);
  if (::chdir(workdir) != 0) die(ExecStep::chdir);
  ::execve(program, argv, envp);
  die(ExecStep::execve);
}

Result<std::unique_ptr<Child>> spawn_now(const SpawnSpec& spec) {
  Fd in_r, in_w, out_r, out_w, err_r, err_w;
  if (!make_pipe(in_r, in_w) || !make_pipe(out_r, out_w) || !make_pipe(err_r, err_w)) {
    return fail(Errc::internal, fmt::format("cannot create the sandbox pipes: {}", std::strerror(errno)));
  }
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& entry : spec.env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  sigset_t empty_set;
  sigemptyset(&empty_set);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  const pid_t host = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) return fail(Errc::internal, fmt::format("cannot fork the sandbox: {}", std::strerror(errno)));
  if (pid == 0) {
    exec_child(host, in_r.get(), out_w.get(), err_w.get(), spec.workdir.c_str(), spec.program.c_str(),
               argv.data(), envp.data(), &empty_set, &default_action);
  }
  in_r.reset();
  out_w.reset();
  err_w.reset();
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));  // -1 on kernels < 5.3
  if (pidfd) ::fcntl(pidfd.get(), F_SETFD, FD_CLOEXEC);
  auto child = std::make_unique<Child>(pid, std::move(pidfd), std::move(in_w), std::move(out_r), std::move(err_r));
  if (!set_nonblocking(child->stdin_fd()) || !set_nonblocking(child->stdout_fd()) ||
      !set_nonblocking(child->stderr_fd())) {
    return fail(Errc::internal, fmt::format("cannot configure the sandbox pipes: {}", std::strerror(errno)));
  }
  return child;
}

}  // namespace

struct Launcher::Job {
  const SpawnSpec* spec;
  std::optional<Result<std::unique_ptr<Child>>> result;
};

Launcher::~Launcher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<std::unique_ptr<Child>> Launcher::spawn(const SpawnSpec& spec) {
  Job job{&spec, std::nullopt};
  std::unique_lock lock(mu_);
  if (!thread_.joinable()) {
    try {
      thread_ = std::thread([this] { run(); });
    } catch (const std::system_error& e) {
      return fail(Errc::internal, fmt::format("cannot start the sandbox launcher thread: {}", e.what()));
    }
  }
  queue_.push_back(&job);
  cv_.notify_all();
  cv_.wait(lock, [&] { return job.result.has_value(); });
  return std::move(*job.result);
}

void Launcher::run() {
  // Process-directed signals are for the host's other threads.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left to start
    Job* job = queue_.front();
    queue_.pop_front();
    lock.unlock();
    auto result = spawn_now(*job->spec);
    lock.lock();
    job->result = std::move(result);
    cv_.notify_all();
  }
}

ssize_t write_no_sigpipe(int fd, const void* data, std::size_t size) noexcept {
  sigset_t pipe_set, old_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  const ssize_t n = ::write(fd, data, size);
  const int saved = errno;
  if (n < 0 && saved == EPIPE && !was_pending) {
    const struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved;
  return n;
}

}  // namespace taskyon::sandbox
