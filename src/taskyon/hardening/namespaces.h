// Linux namespaces and the sandbox's identity. Host side: plan_namespaces();
// child side (between fork and exec, syscalls only): the steps below, in the
// order contain() calls them.
//
// What it denies:
//   * the network: the new network namespace holds one loopback device, down,
//     and nothing else — no route to the host's 127.0.0.1 or anywhere, no
//     abstract UNIX socket of the host (those are per network namespace);
//   * the host's System V IPC objects and POSIX message queues;
//   * the host's name (the child's is kSandboxHostname);
//   * privilege: inside, the child is kSandboxId, not root; exec drops the
//     capabilities the new user namespace gave it;
//   * ownership (the sandbox uid, when tycli is root): the child first becomes
//     kOverflowId (65534, "nobody") with no supplementary groups, so outside
//     its user namespace it owns none of the invoking user's files and every
//     owner check (chmod, chown, utimes, xattrs, signals) fails even where a
//     filter misses a call. Without root (no CAP_SETUID) only the user's own
//     uid can be mapped (newuidmap is not used): the sandbox then owns the
//     user's files, and seccomp (metadata calls), Landlock (writes) and the
//     mount namespace (the files are not there) carry that rule instead;
//   * the host's processes (PID namespace, pid.h of contain.h) and the host's
//     file tree (mount namespace, mounts.h) when the plan asks for them.
//
// Id maps: a process may write its own uid_map/gid_map without privilege in
// the parent namespace when the map holds one line mapping its own effective
// id (`unshare -r` does the same), after writing "deny" to setgroups. The
// child writes them through a /proc/self descriptor opened before any mount
// change (the new root has no /proc).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

namespace taskyon::hardening::namespaces {

// The uid and gid of a sandbox inside its user namespace.
inline constexpr unsigned kSandboxId = 1000;
// The id a root host gives its sandboxes outside: the kernel's overflow id.
inline constexpr unsigned kOverflowId = 65534;
// The host name inside the UTS namespace.
inline constexpr std::string_view kSandboxHostname = "sandbox";

struct Options {
  bool user_net_ipc_uts = true;  // the namespaces layer
  bool drop_ids = true;          // become kOverflowId first (only when the host is root)
  bool mount = true;             // CLONE_NEWNS (needs user_net_ipc_uts)
  bool pid = true;               // CLONE_NEWPID (needs user_net_ipc_uts)
};

// Prepared before fork.
struct Plan {
  int flags = 0;          // unshare(2) flags of the user namespace step; 0: no namespaces
  // clone(2) flags of the host's fork (PID namespace only): CLONE_NEWPID, with
  // CLONE_NEWUSER too when the ids are not dropped (the user namespace then
  // owns the PID namespace and `flags` leaves it out). The forked child is
  // PID 1 of the new namespace (contain.h).
  int clone_flags = 0;
  bool mount_first = false;  // root host: CLONE_NEWNS alone, before the ids are dropped
  bool drop_ids = false;  // setgroups({}), setresgid/setresuid(kOverflowId)
  unsigned outside_id = 0;  // the child's uid and gid outside: kOverflowId or the host's ids
  std::string uid_map;    // "1000 <outside uid> 1\n"
  std::string gid_map;    // "1000 <outside gid> 1\n"
  bool mount() const { return (flags & 0x00020000 /* CLONE_NEWNS */) != 0 || mount_first; }
  bool pid() const { return (clone_flags & 0x20000000 /* CLONE_NEWPID */) != 0; }
};

// True when this process may become kOverflowId (euid 0, the id exists in
// this user namespace is checked by the probe).
bool host_is_root() noexcept;

// The plan for a child of this process.
Plan plan_namespaces(Options options = {});

// --- Child side: no allocation, raw syscalls, false on failure (errno set) ---

// An O_PATH descriptor of /proc/self (-1 on failure), for write_id_maps.
int open_proc_self() noexcept;
// unshare(CLONE_NEWNS) when plan.mount_first (else nothing).
bool unshare_mount_first(const Plan& plan) noexcept;
// setgroups({}), setresgid, setresuid to kOverflowId, dumpable again (so the
// child may still write its own /proc files); nothing unless plan.drop_ids.
bool drop_ids(const Plan& plan) noexcept;
// unshare(plan.flags). The process must be single-threaded.
bool unshare_all(const Plan& plan) noexcept;
// fork(2) as a raw clone(2) with plan.clone_flags | SIGCHLD: 0 in the child,
// the child's host pid in the parent, -1 on failure. No fork handlers run, so
// the child makes syscalls only, as contain() does.
pid_t clone_child(const Plan& plan) noexcept;
// setgroups = "deny", then uid_map and gid_map, under `proc_self`.
bool write_id_maps(const Plan& plan, int proc_self) noexcept;
// sethostname(kSandboxHostname).
bool set_hostname() noexcept;

}  // namespace taskyon::hardening::namespaces
