#include "taskyon/sandbox/process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>

#include <fmt/format.h>

namespace taskyon::sandbox {

std::string_view exec_step_name(int exit_code) { return hardening::step_name(exit_code); }

Child::Child(pid_t pid, Fd pidfd, Fd stdin_w, Fd stdout_r, Fd stderr_r, Fd report)
    : pid_(pid), pidfd_(std::move(pidfd)), stdin_(std::move(stdin_w)),
      stdout_(std::move(stdout_r)), stderr_(std::move(stderr_r)), report_(std::move(report)) {}

void Child::read_reports(int wait_ms, Until until) noexcept {
  const auto known = [&] {
    return (until == Until::pid && runtime_pid_ != 0) || (until == Until::init_exec && init_running_);
  };
  while (report_ && !reports_ended_ && !known()) {
    pollfd p{report_.get(), POLLIN, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, wait_ms);
    } while (ready < 0 && errno == EINTR);
    if (ready <= 0) return;  // nothing within wait_ms
    char data[1 + sizeof(int)] = {};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    iovec iov{data, sizeof data};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(report_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      reports_ended_ = true;
      return;
    }
    if (data[0] == hardening::kReportPid) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
          ucred cred{};
          std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
          runtime_pid_ = cred.pid;
          // For reap(): the runtime is killed first, by this descriptor.
          runtime_pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, cred.pid, 0)));
        }
      }
    } else if (data[0] == hardening::kReportStatus && n == static_cast<ssize_t>(sizeof data)) {
      std::memcpy(&reported_status_, data + 1, sizeof reported_status_);
      status_reported_ = true;
    } else if (data[0] == hardening::kReportInitRunning && n == 1) {
      init_running_ = true;
    }
  }
}

pid_t Child::runtime_pid() noexcept {
  if (!report_) return pid_;
  std::lock_guard lock(report_mu_);
  if (runtime_pid_ == 0) read_reports(10'000, Until::pid);
  return runtime_pid_ > 0 ? runtime_pid_ : pid_;
}

bool Child::wait_init_exec(int wait_ms) noexcept {
  if (!report_) return true;
  std::lock_guard lock(report_mu_);
  if (!init_running_) read_reports(wait_ms, Until::init_exec);
  return init_running_ || reports_ended_;  // ended: the init has exited, its memory with it
}

Child::~Child() { reap(); }

void Child::kill() noexcept {
  std::lock_guard lock(mu_);
  kill_locked();
}

// The group first (the child leads it after setsid; an unreaped child keeps
// its pid, so the group id is not reused); then the child itself, in case it
// was killed before its setsid ran.
void Child::kill_locked() noexcept {
  if (reaped_) return;
  ::kill(-pid_, SIGKILL);
  if (pidfd_) {
    ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  } else {
    ::kill(pid_, SIGKILL);
  }
}

int Child::reap() noexcept {
  std::lock_guard lock(mu_);
  if (reaped_) return status_;
  if (report_) {
    // The runtime first (it may be exiting already: then its own ending
    // stands), then its init reports how it ended, at most 1 s later; a
    // kill of the init first would make every ending SIGKILL.
    std::lock_guard report_lock(report_mu_);
    read_reports(0, Until::quiet);
    if (!status_reported_ && runtime_pid_ > 0) {
      if (runtime_pidfd_) ::syscall(SYS_pidfd_send_signal, runtime_pidfd_.get(), SIGKILL, nullptr, 0);
      read_reports(1000, Until::quiet);
    }
  }
  kill_locked();
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  status_ = r == pid_ ? status : 0;
  reaped_ = true;
  if (report_) {  // the init sent the runtime's status before it exited: it is queued
    std::lock_guard report_lock(report_mu_);
    read_reports(0, Until::quiet);
    if (status_reported_) status_ = reported_status_;
  }
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

Result<std::unique_ptr<Child>> spawn_now(const SpawnSpec& spec) {
  if (!spec.policy) return fail(Errc::bad_usage, "a sandbox child needs a hardening policy");
  Fd in_r, in_w, out_r, out_w, err_r, err_w;
  if (!make_pipe(in_r, in_w) || !make_pipe(out_r, out_w) || !make_pipe(err_r, err_w)) {
    return fail(Errc::internal, fmt::format("cannot create the sandbox pipes: {}", std::strerror(errno)));
  }
  // With a PID namespace, the report socket (hardening/contain.h): the kernel
  // attaches the sender's pid, as this process sees it, to what arrives here.
  Fd report_host, report_child;
  if (spec.policy->namespace_plan().pid() && !hardening::report_socket(report_host, report_child)) {
    return fail(Errc::internal, fmt::format("cannot create the sandbox's report socket: {}", std::strerror(errno)));
  }
  const hardening::ChildSpec child_spec{
      .argv = spec.argv, .env = spec.env, .workdir = spec.workdir, .limits = spec.limits};
  auto containment = hardening::Containment::prepare(
      spec.policy, child_spec,
      hardening::ChildStdio{in_r.get(), out_w.get(), err_w.get(), report_child.get(), report_host.get()});
  if (!containment) return std::unexpected(std::move(containment.error()));

  const pid_t pid = hardening::start(**containment);  // the child runs contain()
  if (pid < 0) return fail(Errc::internal, fmt::format("cannot fork the sandbox: {}", std::strerror(errno)));
  in_r.reset();
  out_w.reset();
  err_w.reset();
  report_child.reset();
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));  // -1 on kernels < 5.3
  if (pidfd) ::fcntl(pidfd.get(), F_SETFD, FD_CLOEXEC);
  auto child = std::make_unique<Child>(pid, std::move(pidfd), std::move(in_w), std::move(out_r), std::move(err_r),
                                       std::move(report_host));
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

}  // namespace taskyon::sandbox
