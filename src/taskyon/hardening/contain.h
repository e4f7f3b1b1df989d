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
//   6. namespaces   unshare user+net+ipc+uts (+mount when not root), write
//                   own id maps, host name (user namespace first: it owns the
//                   others); not root: build the new root now
//   7. runtime      with a PID namespace, the child is its init (PID 1) and
//                   clones the runtime (PID 2), which goes on below
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
// PID namespace: the host forks the child with clone(CLONE_NEWPID) (start(),
// namespaces.h), so the child the host knows is PID 1 of the new namespace.
// (A parent that reads no report still sees the runtime's exit code, or 128 +
// the signal that ended it, as the init's exit code.)
// PID 1 drops every signal from inside that it has no handler for (a runtime
// as PID 1 could not kill or abort itself the usual way), so the child is an
// init that does steps 1-6, then clones the runtime as PID 2 and waits for it:
//
//   host ── init (PID 1, the host's child and pid) ── runtime (PID 2)
//
// The runtime is cloned with CLONE_VM | CLONE_VFORK (on its own stack, in
// the Containment): no page tables are copied, and the init sleeps until the
// runtime has exec'd. Before exec the runtime sends one byte on the report
// socket (ChildStdio::report, AF_UNIX SOCK_SEQPACKET): the host's end has
// SO_PASSCRED, so the kernel attaches the runtime's pid as the *host* sees
// it. That is the pid the host accounts memory by and shows (Child::
// runtime_pid). When the runtime ends, the init sends its wait status on the
// same socket and exits; when PID 1 ends, the kernel kills whatever is left
// in the namespace. The host reports that status as the sandbox's ending.
// The host's side is otherwise unchanged: SIGKILL to the process group (init
// and runtime are in it), pidfd and waitpid on the init. The init dies with
// the host (parent-death signal, plus the report socket, whose host end shows
// the host was still there once the signal was armed; getppid() is 0 in a
// new PID namespace), the runtime with the init. Once the runtime has exec'd,
// the init closes every descriptor but its report end and execs taskyon-init
// (init_image.h) from a sealed memfd, which keeps the parent-death signal and
// the report end but none of the host's memory, and waits and reports as
// above (if that exec fails, the init waits in place, as a fork of the host).
// The init is not dumpable before that exec or after it (nothing in the
// namespace may ptrace it). Inside,
// `process.pid` is 2 and no host process is visible (there is no /proc) or
// signalable by pid.
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
  pid_init = 229,      // the PID namespace's init: clone of the runtime, wait, report
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
  bool pid_namespace = true;    // needs namespaces: the runtime is PID 2 of its own namespace (start())
  // The baseline steps, on everywhere. tycli never switches them off; the
  // tests that show what each one denies do (tests/kernel_layers_test.cc).
  bool session = true;          // step 2: setsid (the host kills the child's group by its pid)
  bool die_with_parent = true;  // step 8: PR_SET_PDEATHSIG=SIGKILL and the parent check
  bool rlimits = true;          // step 9
  bool descriptors = true;      // step 10: everything but 0/1/2 closed at exec
  bool no_new_privs = true;     // step 11 (off: Landlock and seccomp then need CAP_SYS_ADMIN, e.g. in the namespaces)
  auto operator<=>(const Layers&) const = default;  // a key of the runtimes' policy caches
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
  // (seccomp.h; Deno only, none for Node). `read_trees`: directories the
  // runtime reads and lists (strict Python's stdlib and site directories),
  // bound whole into the mount namespace; their Landlock rules are the
  // caller's to add (the ruleset grants files).
  static Result<std::shared_ptr<const Policy>> prepare(const std::string& executable,
                                                       const std::vector<std::string>& read_files,
                                                       Layers wanted = {}, seccomp::Exceptions exceptions = {},
                                                       const std::vector<std::string>& read_trees = {});

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

// The child's ends of its pipes, each numbered 3 or above. With a PID
// namespace also both ends of the report socket (contain.h, top): `report`
// the child's, `report_peer` the host's (closed in the child).
struct ChildStdio {
  int in = -1;
  int out = -1;
  int err = -1;
  int report = -1;
  int report_peer = -1;
};

// Report messages on ChildStdio::report, one per SOCK_SEQPACKET datagram.
inline constexpr char kReportPid = 'P';     // 1 byte, from the runtime: its pid rides in SCM_CREDENTIALS
inline constexpr char kReportStatus = 'S';  // 'S' then the runtime's wait status (int), from the init
// 1 byte, from taskyon-init as it starts: the init's exec has returned, so its
// copy of the host's memory is gone (execve drops the old mm before it returns;
// /proc/PID/statm shows the new one earlier, while the old is still torn down).
inline constexpr char kReportInitRunning = 'I';

class Containment;

// Runs in the forked child (single-threaded, between fork and exec): the steps
// at the top of this file, in order. Never returns: the runtime replaces the
// child, or the child exits with the Step that failed.
[[noreturn]] void contain(const Containment& c) noexcept;

// Host side: the report socket of a PID namespace child (contain.h, top): a
// connected AF_UNIX SOCK_SEQPACKET pair, both ends O_CLOEXEC and numbered 3 or
// above, the host's end with SO_PASSCRED. False (errno set) on failure.
bool report_socket(Fd& host_end, Fd& child_end);

// Host side: forks the child (clone with the policy's namespace_plan().
// clone_flags: into its own PID namespace when the policy has one), which runs
// contain(c). The child's host pid, or -1 with errno set.
pid_t start(const Containment& c) noexcept;

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
  friend int run_runtime(void* containment) noexcept;  // contain.cc: PID 2 of a PID namespace
  friend pid_t start(const Containment& c) noexcept;

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
  static constexpr std::size_t kRuntimeStack = 256u << 10;  // bytes; the runtime's stack until exec
  std::unique_ptr<unsigned char[]> runtime_stack_;          // PID namespace only
  int init_image_ = -1;  // PID namespace only: init_image_fd(), what the init execs; -1: it waits in place
};

}  // namespace taskyon::hardening
