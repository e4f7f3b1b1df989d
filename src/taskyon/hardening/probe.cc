#include "taskyon/hardening/probe.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "taskyon/hardening/landlock.h"
#include "taskyon/hardening/namespaces.h"
#include "taskyon/hardening/seccomp.h"

namespace taskyon::hardening {

namespace {

// Forks a child that enters the sandbox's namespaces as contain() does (the
// same unshare flags and id steps, the new root left out); empty when it
// could, else why not.
std::string probe_namespaces(const namespaces::Plan& plan) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return fmt::format("pipe2 failed: {}", std::strerror(errno));
  const pid_t pid = namespaces::clone_child(plan);  // born in the PID namespace when the plan has one
  if (pid < 0) {
    const int saved = errno;
    ::close(report[0]);
    ::close(report[1]);
    return fmt::format("clone (fork{}) failed: {}", plan.pid() ? " into a new PID namespace" : "",
                       std::strerror(saved));
  }
  if (pid == 0) {  // syscalls only
    int step = 0;
    const int proc_self = namespaces::open_proc_self();
    if (proc_self < 0) step = 1;
    else if (!namespaces::unshare_mount_first(plan)) step = 2;
    else if (!namespaces::drop_ids(plan)) step = 3;
    else if (!namespaces::unshare_all(plan)) step = 4;
    else if (!namespaces::write_id_maps(plan, proc_self)) step = 5;
    else if (!namespaces::set_hostname()) step = 6;
    if (step != 0) {
      const int failure[2] = {step, errno};
      (void)!::write(report[1], failure, sizeof failure);
    }
    ::_exit(step);
  }
  ::close(report[1]);
  int failure[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(report[0], failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof failure)) {
    static constexpr const char* kWhat[] = {"",
                                            "opening /proc/self",
                                            "unshare(CLONE_NEWNS)",
                                            "setgroups/setresgid/setresuid(65534)",
                                            "unshare(CLONE_NEWUSER|CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS...)",
                                            "writing the id maps",
                                            "sethostname"};
    const int step = failure[0] >= 1 && failure[0] <= 6 ? failure[0] : 0;
    return fmt::format("{} failed: {}", kWhat[step], std::strerror(failure[1]));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "the namespace probe did not finish";
  return {};
}

Support probe() {
  Support s;
  s.landlock_abi = landlock::abi_version();
  s.seccomp = seccomp::available();
  const long pidfd = ::syscall(SYS_pidfd_open, ::getpid(), 0);
  s.pidfd = pidfd >= 0;
  if (pidfd >= 0) ::close(static_cast<int>(pidfd));
  s.namespaces_error = probe_namespaces(namespaces::plan_namespaces({.drop_ids = false, .mount = false, .pid = false}));
  s.user_namespaces = s.namespaces_error.empty();
  if (s.user_namespaces) {
    s.full_error = probe_namespaces(namespaces::plan_namespaces());
    const bool full = s.full_error.empty();
    s.sandbox_uid = full && namespaces::host_is_root();
    s.mount_namespace = full;
    s.pid_namespace = full;
  } else {
    s.full_error = s.namespaces_error;
  }
  return s;
}

}  // namespace

const Support& support() {
  static const Support probed = probe();
  return probed;
}

std::vector<Layer> describe_layers(const Support& s) {
  const int abi = s.landlock_abi;
  const std::string landlock_missing = "this kernel has no Landlock";
  auto L = [](std::string id, std::string name, bool active, std::string detail, std::string denies) {
    return Layer{std::move(id), std::move(name), active, std::move(detail), std::move(denies), {}};
  };
  std::vector<Layer> layers = {
      L("session", "own session, process-group kill", true,
       s.pidfd ? "setsid; tracked by a pidfd; SIGKILL to the group" : "setsid; SIGKILL to the group (no pidfd_open)",
       "outliving a kill: the host SIGKILLs the child's whole process group"),
      L("workdir", "private empty working directory", true, "a fresh <tmp>/taskyon-sandbox-XXXXXX, mode 0700",
       "relative paths reaching the host's working directory"),
      L("mount-namespace", "mount namespace with only the runtime's files", s.mount_namespace,
       s.mount_namespace ? "tmpfs root, the runtime's files bound read-only, empty /tmp and cwd, no /proc"
                         : (s.full_error.empty() ? "needs user namespaces" : s.full_error),
       "seeing the host's file tree: stat, access, readlink and opens of any other host path answer ENOENT; "
       "the runtime's own files are read-only (EROFS)"),
      L("sandbox-uid", "sandbox uid 65534 (root host)", s.sandbox_uid,
       s.sandbox_uid ? "uid/gid 65534 outside, no supplementary groups"
       : namespaces::host_is_root()
           ? (s.full_error.empty() ? "cannot become 65534" : s.full_error)
           : "tycli is not root: only its own uid can be mapped, so seccomp, Landlock and the mount namespace "
             "carry the owner rule",
       "owning the host user's files: chmod, chown, utimes and xattr changes on them fail the owner check"),
      L("namespaces", "user, network, IPC and UTS namespaces", s.user_namespaces,
       s.user_namespaces ? fmt::format("uid/gid {} inside, host name \"{}\"", namespaces::kSandboxId,
                                       namespaces::kSandboxHostname)
                         : s.namespaces_error,
       "the network (no interface but a loopback that is down), host abstract UNIX sockets, SysV IPC, the host "
       "name, root inside"),
      L("pid-namespace", "PID namespace (the runtime is PID 2)", s.pid_namespace,
       s.pid_namespace ? "the host's child is the namespace's init (PID 1), the runtime its child (PID 2); the "
                         "runtime's host pid reaches the host through SCM_CREDENTIALS"
                       : (s.full_error.empty() ? "needs user namespaces" : s.full_error),
       "seeing or signalling host processes by pid: every host pid is unknown (ESRCH); killing the init ends "
       "the whole namespace"),
      L("die-with-parent", "parent-death signal", true, "PR_SET_PDEATHSIG=SIGKILL",
       "outliving the host: the child is killed when the host dies"),
      L("rlimits", "resource limits", true, "RLIMIT_CORE=0, RLIMIT_FSIZE=0, RLIMIT_NOFILE, RLIMIT_DATA",
       "core files, writing file contents, unbounded descriptors, off-heap memory beyond RLIMIT_DATA"),
      L("descriptors", "protocol pipes only", true, "fds 0/1/2 are pipes; everything else is closed at exec",
       "inherited descriptors of the host (files, sockets, pipes)"),
      L("no-new-privs", "no new privileges", true, "PR_SET_NO_NEW_PRIVS=1",
       "gaining privilege through exec (setuid, file capabilities)"),
      L("landlock-fs", "Landlock filesystem rules", abi >= 1,
       abi >= 1 ? fmt::format("Landlock ABI {}", abi) : landlock_missing,
       "reading anything but the runtime and its libraries, executing anything else, writing, creating, "
       "removing or truncating any file"),
      L("landlock-net", "Landlock TCP rules", abi >= 4,
       abi >= 4 ? fmt::format("Landlock ABI {}", abi)
                : abi >= 1 ? fmt::format("needs Landlock ABI 4, this kernel has {}", abi) : landlock_missing,
       "TCP bind and connect on every port"),
      L("landlock-scope", "Landlock signal and abstract-socket scopes", abi >= 6,
       abi >= 6 ? fmt::format("Landlock ABI {}", abi)
                : abi >= 1 ? fmt::format("needs Landlock ABI 6, this kernel has {}", abi) : landlock_missing,
       "signals to any process outside the sandbox (host, other sandboxes), abstract UNIX sockets of others"),
      L("seccomp", "seccomp filter", s.seccomp,
       s.seccomp ? "libseccomp, exported to BPF on the host" : "no seccomp filters",
       "socket(), fork/vfork/non-thread clone, exec after start, io_uring, ptrace, process_vm_*, unshare, setns, "
       "mount, bpf, perf_event_open, keyctl, userfaultfd; chmod/chown/utimes/xattr changes, inode-flag ioctls and "
       "file_setattr on any file; prlimit, setpriority, sched_*, ioprio on any process but itself"),
      L("environment", "explicit minimal environment", true, "the host passes an explicit environment, nothing inherited (Node: empty)",
       "the host's environment variables: API keys, tokens, HOME, PATH"),
      L("node-permission", "Node permission model (runtime, not a boundary)", true,
       "--experimental-permission without any --allow-*",
       "node:fs, child_process, worker_threads, addons, inspector, WASI at the JavaScript level"),
  };
  // Every claim above and the tests that show it (docs/sandbox.md, "What
  // `tycli sandbox explain` claims").
  static const std::pair<const char*, const char*> kTests[] = {
      {"session", "KernelLayers.SessionLetsTheHostKillTheGroup/{node,deno}, "
                  "SandboxPool.InfiniteLoopTimesOutAndTheNextCallGetsAFreshSandbox, EscapeNode.LIFE_04_*"},
      {"workdir", "KernelLayers.EnvironmentAndWorkdirAreExactlyTheHostsChoice/{node,deno}, "
                  "SandboxPool.ChildCwdIsAPrivateEmptyDirectoryRemovedOnDestroy"},
      {"mount-namespace", "KernelLayers.MountNamespaceHidesHostPaths/{node,deno}, "
                          "EscapePython.META_StatHostPathsTheInterpreterDoesNotNeed/{Bwrap,KernelLayers}"},
      {"sandbox-uid", "KernelLayers.SandboxUidFailsTheOwnerCheck/{node,deno}, "
                      "NamespacesTest.TheSandboxUidOwnsNoneOfTheHostsFiles, "
                      "PythonBwrapUid.TheSandboxIs65534AndOwnsNothingOfTheHosts, "
                      "EscapePython.TheSandboxUidIsNotTheInvokingUser/{Bwrap,KernelLayers}"},
      {"namespaces", "KernelLayers.NetworkNamespaceHasNoRouteToTheHost/{node,deno}, NamespacesTest.HaveNoNetwork, "
                     "NamespacesTest.HideTheHostsAbstractSockets"},
      {"pid-namespace", "KernelLayers.PidNamespaceHidesHostProcesses/{node,deno}, SandboxPidNamespace.*, "
                        "EscapeNode.PROC_06_*, EscapeDeno.PROC_06_*, "
                        "EscapePython.PROC_HostProcessesAreNotThere/{Bwrap,KernelLayers}"},
      {"die-with-parent", "KernelLayers.TheChildDiesWithItsParent/{node,deno}, SandboxHostDeath.*"},
      {"rlimits", "KernelLayers.RlimitsBoundDescriptors/{node,deno}, Rlimits.DenyCoresFileGrowthDescriptorsAndMemory"},
      {"descriptors", "KernelLayers.DescriptorsOfTheHostAreClosedAtExec/{node,deno}, EscapeNode.FS_11_*, "
                      "EscapeDeno.FS_11_*"},
      {"no-new-privs", "KernelLayers.NoNewPrivsIsSet/{node,deno}, Contain.RunsARuntimeUnderEveryLayer"},
      {"landlock-fs", "KernelLayers.LandlockFsReadsOnlyGrantedFilesAndWritesNone/{node,deno}, "
                      "LandlockTest.ReadsOnlyGrantedFiles, LandlockTest.WritesNowhere, Contain.*"},
      {"landlock-net", "KernelLayers.LandlockNetDeniesTcpConnect/{node,deno}, LandlockTest.DeniesTcpBindAndConnect"},
      {"landlock-scope", "KernelLayers.LandlockScopeDeniesSignalsOutside/{node,deno}, LandlockTest.ScopesSignals, "
                         "LandlockTest.ScopesAbstractUnixSockets"},
      {"seccomp", "SeccompTest.*, KernelLayers.SeccompDeniesMetadataAndOtherProcessesPriority/{node,deno}"},
      {"environment", "KernelLayers.EnvironmentAndWorkdirAreExactlyTheHostsChoice/{node,deno}, EscapeNode.ENV_01_*"},
      {"node-permission", "EscapeNode.*"},
  };
  for (Layer& layer : layers) {
    for (const auto& [id, tests] : kTests) {
      if (layer.id == id) layer.tests = tests;
    }
  }
  return layers;
}

std::vector<std::string> warnings(const Support& s) {
  std::vector<std::string> out;
  if (!s.user_namespaces) {
    out.push_back("sandboxes run without user and network namespaces (" + s.namespaces_error +
                  "); seccomp's socket() rule is the only network barrier");
  } else if (!s.full_error.empty()) {
    out.push_back("sandboxes run without their mount and PID namespaces and sandbox uid (" + s.full_error +
                  "): host paths can be probed and host pids seen");
  }
  if (s.landlock_abi < 1) {
    out.push_back("this kernel lacks Landlock: sandboxes run without filesystem rules, TCP rules and signal scope; "
                  "the Node permission model is the only file barrier");
  } else if (s.landlock_abi < 6) {
    out.push_back(fmt::format("Landlock ABI {} has no signal scope (ABI 6): a tool can signal processes of the "
                              "host's user{}",
                              s.landlock_abi, s.landlock_abi < 4 ? ", and no TCP rules (ABI 4)" : ""));
  }
  if (!s.seccomp) {
    out.push_back("this kernel lacks seccomp filters: sandboxes may create sockets and processes and exec");
  }
  return out;
}

}  // namespace taskyon::hardening
