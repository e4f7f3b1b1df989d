// Child processes of the sandbox: start one with nothing inherited, kill its
// process group, reap it. Linux only.
//
// A child starts in a new session (its own process group), with
// PR_SET_PDEATHSIG=SIGKILL, RLIMIT_CORE=0, an empty signal mask and default
// dispositions, pipes on fds 0/1/2 and no other descriptor, the given working
// directory, and exactly the given environment (empty unless the caller puts
// something in). Children are forked by a Launcher's own thread, because the
// kernel sends the parent-death signal when the *thread* that forked exits:
// a caller's short-lived thread must not take the sandbox down with it.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "taskyon/base/error.h"

namespace taskyon::sandbox {

// An owned file descriptor (-1 when empty), closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { int fd = fd_; fd_ = -1; return fd; }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// What to start. Everything is prepared before fork; the child only makes syscalls.
struct SpawnSpec {
  std::string program;            // absolute path, passed to execve as is
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // "NAME=value" entries; empty: an empty environment
  std::string workdir;            // an existing directory, the child's cwd
};

// Exit codes of a child that failed between fork and exec (STYLE habit 10).
// They are chosen above what Node itself uses, so the host can tell them apart.
enum class ExecStep : int {
  sigmask = 240,      // sigprocmask(SIG_SETMASK, {})
  signals = 241,      // sigaction(sig, SIG_DFL) for 1..31
  setsid = 242,
  pdeathsig = 243,    // prctl(PR_SET_PDEATHSIG, SIGKILL)
  parent_gone = 244,  // getppid() changed: the host died before prctl took effect
  rlimit_core = 245,  // setrlimit(RLIMIT_CORE, 0)
  dup_stdio = 246,    // dup2 onto 0/1/2
  close_fds = 247,    // close_range(3, ~0U, 0)
  chdir = 248,
  execve = 249,
};

// "execve", "setsid", … for one of the codes above; empty for any other code.
std::string_view exec_step_name(int exit_code);

// One started child. The host ends of its pipes are O_CLOEXEC and O_NONBLOCK;
// the child's ends are blocking.
class Child {
 public:
  Child(pid_t pid, Fd pidfd, Fd stdin_w, Fd stdout_r, Fd stderr_r);
  ~Child();  // reap()
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_.get(); }  // -1 when pidfd_open is unavailable
  int stdin_fd() const { return stdin_.get(); }
  int stdout_fd() const { return stdout_.get(); }
  int stderr_fd() const { return stderr_.get(); }

  // SIGKILL to the child's process group and to the child. Never waits; safe
  // from any thread; a no-op once reaped (so it never signals a reused pid).
  void kill() noexcept;

  // kill(), then waitpid. Returns the wait status (as waitpid fills it); the
  // same status on later calls. Safe from any thread.
  int reap() noexcept;

 private:
  const pid_t pid_;
  Fd pidfd_, stdin_, stdout_, stderr_;
  std::mutex mu_;  // orders kill() against reap(): no signal after the pid is released
  bool reaped_ = false;
  int status_ = 0;
};

// "exited with code N" or "was killed by signal N (SIGKILL)" for a wait status.
std::string describe_wait_status(int status);

// Forks children from one long-lived thread (see the file comment). The thread
// starts with the first spawn and is joined by the destructor; children that
// are still alive then are SIGKILLed by the kernel (parent-death signal), so
// destroy every Child before the Launcher.
class Launcher {
 public:
  Launcher() = default;
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // Starts a child. Errc::internal when pipe, fork or the launcher thread fails.
  // A failure after fork shows as the child's exit code (ExecStep).
  Result<std::unique_ptr<Child>> spawn(const SpawnSpec& spec);

 private:
  struct Job;
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job*> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

// write(2) that never raises SIGPIPE (the signal is blocked for this thread
// during the call and a SIGPIPE it caused is consumed). Returns what write
// returns; errno is preserved.
ssize_t write_no_sigpipe(int fd, const void* data, std::size_t size) noexcept;

}  // namespace taskyon::sandbox
