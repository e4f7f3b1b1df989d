// Child processes of the sandbox: start one contained, kill its process
// group, reap it. Linux only.
//
// A child is forked by a Launcher's own thread and runs
// hardening::contain() before it execs the runtime: own session and process
// group, the kernel layers this machine supports (namespaces, Landlock,
// seccomp), die-with-parent, resource limits, pipes on fds 0/1/2 and no other
// descriptor, the given working directory and exactly the given environment
// (src/taskyon/hardening/contain.h lists the steps in order). The Launcher's
// thread forks because the kernel sends the parent-death signal when the
// *thread* that forked exits: a caller's short-lived thread must not take the
// sandbox down with it.
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
#include "taskyon/hardening/contain.h"
#include "taskyon/hardening/fd.h"

namespace taskyon::sandbox {

// An owned file descriptor (-1 when empty), closed on destruction.
using Fd = hardening::Fd;

// What to start. Everything is prepared before fork; the child only makes syscalls.
struct SpawnSpec {
  std::shared_ptr<const hardening::Policy> policy;  // the runtime and the layers around it; required
  std::vector<std::string> argv;                    // argv[0] included
  std::vector<std::string> env;                     // "NAME=value" entries; empty: an empty environment
  std::string workdir;                              // an existing directory, the child's cwd
  hardening::rlimits::Limits limits;                // RLIMIT_DATA, RLIMIT_NOFILE
};

// Exit codes of a child that failed between fork and exec (STYLE habit 10),
// one per containment step (hardening::Step).
using ExecStep = hardening::Step;

// "execve", "setsid", … for one of the codes above; empty for any other code.
std::string_view exec_step_name(int exit_code);

// One started child. The host ends of its pipes are O_CLOEXEC and O_NONBLOCK;
// the child's ends are blocking.
class Child {
 public:
  // `report`: the host's end of the report socket of a child in its own PID
  // namespace (hardening/contain.h), else empty.
  Child(pid_t pid, Fd pidfd, Fd stdin_w, Fd stdout_r, Fd stderr_r, Fd report = {});
  ~Child();  // reap()
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // The process the host forked (and waits for, and whose group it kills):
  // the runtime itself, or the init of the child's PID namespace.
  pid_t pid() const { return pid_; }
  // The runtime's pid as the host sees it (for /proc/PID: memory, cmdline):
  // pid(), or with a PID namespace the pid the kernel attached to the
  // runtime's first report (waits for it, at most 10 s; pid() when the child
  // ended before it). Safe from any thread.
  pid_t runtime_pid() noexcept;
  // With a PID namespace: waits up to `wait_ms` for the init to report that it
  // runs taskyon-init (hardening/contain.h kReportInitRunning), so that it no
  // longer shares this host's pages. True once it has, or once the init has
  // ended; false on timeout (an init that could not exec waits as a fork of
  // the host). True at once without a PID namespace. Safe from any thread.
  bool wait_init_exec(int wait_ms) noexcept;
  int pidfd() const { return pidfd_.get(); }  // -1 when pidfd_open is unavailable
  int stdin_fd() const { return stdin_.get(); }
  int stdout_fd() const { return stdout_.get(); }
  int stderr_fd() const { return stderr_.get(); }

  // SIGKILL to the child's process group and to the child (through its pidfd
  // when there is one). Never waits; safe from any thread; a no-op once reaped
  // (so it never signals a reused pid).
  void kill() noexcept;

  // kill(), then waitpid. Returns the wait status (as waitpid fills it) —
  // with a PID namespace the runtime's, as its init reported it (the
  // runtime is SIGKILLed first and the report awaited, at most 1 s), else the
  // init's own; the same status on later calls. Safe from any thread.
  int reap() noexcept;

 private:
  void kill_locked() noexcept;  // under mu_
  enum class Until { quiet, pid, init_exec };
  // Reads report messages (waiting up to `wait_ms` for each) until none
  // comes, the child's end is closed or what `until` names is known (the
  // runtime's pid, the init's exec). Under report_mu_.
  void read_reports(int wait_ms, Until until) noexcept;

  const pid_t pid_;
  Fd pidfd_, stdin_, stdout_, stderr_, report_;
  std::mutex report_mu_;         // guards the fields below
  pid_t runtime_pid_ = 0;        // 0 until reported
  Fd runtime_pidfd_;             // the runtime's, once reported (empty when pidfd_open failed: it ended)
  bool reports_ended_ = false;   // the child's end of the report socket is closed
  bool status_reported_ = false;
  bool init_running_ = false;    // taskyon-init has started (kReportInitRunning)
  int reported_status_ = 0;      // the runtime's wait status, from the init
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

  // Starts a child. Errc::bad_usage without a policy; Errc::internal when
  // pipe, the seccomp filter, fork or the launcher thread fails. A failure
  // after fork shows as the child's exit code (ExecStep).
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

}  // namespace taskyon::sandbox
