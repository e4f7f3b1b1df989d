// Containment of a sandbox child: everything that may allocate is prepared on
// the host (Policy once per runtime, Containment once per child), then the
// forked child runs contain(), which applies the steps below in this order
// and ends by exec'ing the runtime through a descriptor. The order matters:
//
//   1. signals      empty mask, default dispositions
//   2. setsid       own session and process group: the host kills the group
//   3. cwd          chdir into the private empty directory (before the ids
//                   change: it is the host user's, mode 0700)
//   4. mount ns,    root host: unshare(CLONE_NEWNS) and build the new root
//      root first   (mounts.h) with root's authority, before the ids drop
//   5. sandbox uid  root host: no groups, uid/gid 65534 (namespaces.h)
//   6. namespaces   unshare user+net+ipc+uts+pid (+mount when not root),
//                   write own id maps, host name (user namespace first: it
//                   owns the others); not root: build the new root now
//   7. PID 1        with a PID namespace, the child forks twice (below) and
//                   the runtime goes on as PID 2 of the new namespace
//   8. die with     PR_SET_PDEATHSIG=SIGKILL, then check the parent is still
//      the parent   there (after the id changes: they reset the signal)
//   9. rlimits      core 0, file size 0, descriptors, RLIMIT_DATA (rlimits.h)
//  10. descriptors  protocol pipes on 0/1/2; every other descriptor is marked
//                   close-on-exec (the exec descriptor and the Landlock ruleset
//                   are still needed below; exec closes them all)
//  11. no_new_privs no privilege gain through exec; required by 12 and 13
//  12. Landlock     restrict_self with the runtime's prepared ruleset
//  13. seccomp      the filters, last: they forbid exec except the prepared call
//  14. exec         execveat(runtime descriptor, "", argv, envp, AT_EMPTY_PATH)
//
// Each failed step ends the child with its own exit code (Step); nothing here
// allocates, and every call is checked.
//
// PID namespace: unshare(CLONE_NEWPID) moves only later children, and the
// first of them is PID 1 of the namespace, whose signals without a handler
// are dropped when they come from inside (a runtime as PID 1 could not
// kill or abort itself the usual way). So the child (the host's pid, the
// process-group leader) forks an init, PID 1, that only forks the runtime as
// PID 2 and waits for it:
//
//   host ── child (relay, host pid namespace) ── init (PID 1) ── runtime (PID 2)
//
// The init hands the runtime's wait status to the relay through a pipe and
// exits; when PID 1 ends, the kernel kills whatever is left in the namespace.
// The relay re-raises the same status (exit code or signal, never a core: it
// is not dumpable) so the host sees the runtime's own ending. The host's
// side is unchanged: SIGKILL to the process group (all three are in it),
// pidfd and waitpid on the relay; the relay dies with the host (parent-death
// signal), the init with the relay (parent-death signal, plus a pipe that
// shows the relay was still there after the signal was armed), the runtime
// with the init (the namespace ends). Inside, `process.pid` is 2 and no host
// process is visible (there is no /proc) or signalable by pid.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/hardening/fd.h"
#include "taskyon/hardening/landlock.h"
#include "taskyon/hardening/mounts.h"
#include "taskyon/hardening/namespaces.h"
#include "taskyon/hardening/rlimits.h"
#include "taskyon/hardening/runtime_files.h"
#include "taskyon/hardening/seccomp.h"

namespace taskyon::hardening {

// Exit codes of a child whose containment failed, one per step. 240-249 are
// the baseline steps; 226-235 the kernel layers. All are above the exit codes
// Node itself uses.
enum class Step : int {
  proc_self = 226,     // open /proc/self (for the id maps, before the root changes)
  drop_ids = 227,      // setgroups/setresgid/setresuid(65534)
  mount_root = 228,    // unshare(CLONE_NEWNS) and building the new root (mounts.h)
  pid_init = 229,      // the PID namespace's init: fork, pipe, wait
  unshare = 230,       // unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
  id_maps = 231,       // /proc/self/{setgroups,uid_map,gid_map}
  hostname = 232,      // sethostname
  no_new_privs = 233,  // prctl(PR_SET_NO_NEW_PRIVS)
  landlock = 234,      // landlock_restrict_self
  seccomp = 235,       // seccomp(SECCOMP_SET_MODE_FILTER)
  sigmask = 240,       // sigprocmask(SIG_SETMASK, {})
  signals = 241,       // sigaction(sig, SIG_DFL) for 1..31
  setsid = 242,
  pdeathsig = 243,     // prctl(PR_SET_PDEATHSIG, SIGKILL)
  parent_gone = 244,   // getppid() changed: the host died before prctl took effect
  rlimits = 245,       // setrlimit
  dup_stdio = 246,     // dup2 onto 0/1/2
  close_fds = 247,     // close_range(3, ~0U, CLOSE_RANGE_CLOEXEC)
  chdir = 248,
  execve = 249,        // execveat of the runtime
};

// "execve", "landlock_restrict_self", … for one of the codes above; empty for
// any other code.
std::string_view step_name(int exit_code);

// The kernel layers a Policy asks for. The default is every layer; a layer
// this machine lacks is left out (and warnings() names it). Switching one off
// is for tests and diagnostics.
struct Layers {
  bool namespaces = true;       // user, network, IPC, UTS
  bool landlock = true;
  bool seccomp = true;
  bool sandbox_uid = true;      // root host only: the child runs as 65534
  bool mount_namespace = true;  // needs namespaces: only the runtime's files (mounts.h)
  bool pid_namespace = true;    // needs namespaces: the runtime is PID 2 of its own namespace
};

// What children of one runtime executable get, prepared once on the host:
// the executable's real path and an O_PATH descriptor to exec it through, the
// Landlock ruleset granting exactly the files it needs to start, and which
// layers apply. Immutable; shared by every child of that runtime.
class Policy {
 public:
  // `executable`: the runtime (absolute path). `read_files`: files it reads at
  // start besides its libraries (e.g. /dev/null), granted read-only. Prepares
  // the layers of `wanted` that this machine supports. Errc::runtime_missing
  // when the executable is not a readable ELF file; Errc::internal when a
  // layer cannot be prepared. Prints a warning on stderr, once per process,
  // for each kernel layer this machine lacks.
  // `exceptions`: what this runtime needs the seccomp filter to allow
  // (seccomp.h; Deno only, none for Node).
  static Result<std::shared_ptr<const Policy>> prepare(const std::string& executable,
                                                       const std::vector<std::string>& read_files,
                                                       Layers wanted = {}, seccomp::Exceptions exceptions = {});

  const std::string& executable() const { return files_.executable; }
  const RuntimeFiles& files() const { return files_; }
  const landlock::Grants& grants() const { return grants_; }
  Layers layers() const { return active_; }  // what children actually get
  const landlock::Ruleset* ruleset() const { return ruleset_ ? &*ruleset_ : nullptr; }
  const namespaces::Plan& namespace_plan() const { return namespaces_; }
  const std::vector<mounts::Op>& mount_files() const { return mount_files_; }
  int exec_fd() const { return exec_fd_.get(); }
  seccomp::Exceptions seccomp_exceptions() const { return exceptions_; }

 private:
  Policy() = default;
  RuntimeFiles files_;
  landlock::Grants grants_;
  Layers active_{};
  seccomp::Exceptions exceptions_{};
  std::optional<landlock::Ruleset> ruleset_;
  namespaces::Plan namespaces_;
  std::vector<mounts::Op> mount_files_;
  Fd exec_fd_;
};

// One child: what it runs and in which limits.
struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // "NAME=value" entries: exactly the child's environment
  std::string workdir;            // an existing directory, the child's cwd
  rlimits::Limits limits;
};

// The child's ends of its pipes, each numbered 3 or above.
struct ChildStdio {
  int in = -1;
  int out = -1;
  int err = -1;
};

class Containment;

// Runs in the forked child (single-threaded, between fork and exec): the steps
// at the top of this file, in order. Never returns: the runtime replaces the
// child, or the child exits with the Step that failed.
[[noreturn]] void contain(const Containment& c) noexcept;

// Everything contain() uses, prepared on the host just before fork (the
// seccomp filter names this object's argv and envp arrays by address, so it
// never moves: it lives behind a unique_ptr).
class Containment {
 public:
  // Errc::internal when the seccomp filter cannot be built.
  static Result<std::unique_ptr<const Containment>> prepare(std::shared_ptr<const Policy> policy,
                                                            const ChildSpec& spec, ChildStdio stdio);

  Containment(const Containment&) = delete;
  Containment& operator=(const Containment&) = delete;

 private:
  Containment() = default;
  friend void contain(const Containment& c) noexcept;  // [[noreturn]], declared above

  std::shared_ptr<const Policy> policy_;
  pid_t host_ = 0;
  ChildStdio stdio_;
  std::string workdir_;
  std::vector<std::string> argv_strings_, env_strings_;
  std::vector<char*> argv_, envp_;
  char empty_path_[1] = {'\0'};
  sigset_t empty_set_{};
  struct sigaction default_action_{};
  rlimits::Plan rlimits_;
  std::optional<seccomp::Filter> filter_;
  mounts::RootPlan root_;
};

}  // namespace taskyon::hardening
