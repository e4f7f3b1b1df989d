// Linux namespaces of a sandbox child: a new user namespace that owns new
// network, IPC and UTS namespaces. Host side: plan_namespaces(); child side
// (between fork and exec, syscalls only): the three steps below, in order.
//
// What it denies:
//   * the network: the new network namespace holds one loopback device, down,
//     and nothing else — no route to the host's 127.0.0.1 or anywhere, no
//     abstract UNIX socket of the host (those are per network namespace);
//   * the host's System V IPC objects and POSIX message queues;
//   * the host's name (the child's is kSandboxHostname);
//   * privilege: inside, the child is kSandboxId, not root; exec drops the
//     capabilities the new user namespace gave it.
// What it does not: files (the filesystem is the host's; Landlock rules it),
// signals and process ids (no PID namespace: see contain.h).
//
// Id maps: a child may write its own uid_map/gid_map without privilege in the
// parent namespace when the map holds one line mapping the process's own
// effective id (`unshare -r` does the same), after writing "deny" to
// /proc/self/setgroups. So the child needs no help from the host.
#pragma once

#include <string>
#include <string_view>

namespace taskyon::hardening::namespaces {

// The uid and gid of a sandbox inside its user namespace.
inline constexpr unsigned kSandboxId = 1000;
// The host name inside the UTS namespace.
inline constexpr std::string_view kSandboxHostname = "sandbox";

// Prepared before fork.
struct Plan {
  int flags = 0;        // unshare(2) flags; 0: no namespaces (the layer is off)
  std::string uid_map;  // "1000 <host euid> 1\n"
  std::string gid_map;  // "1000 <host egid> 1\n"
};

// The plan for a child of this process (CLONE_NEWUSER | CLONE_NEWNET |
// CLONE_NEWIPC | CLONE_NEWUTS, ids of the calling process).
Plan plan_namespaces();

// --- Child side: no allocation, raw syscalls, false on failure (errno set) ---

// unshare(plan.flags). The process must be single-threaded.
bool unshare_all(const Plan& plan) noexcept;
// /proc/self/setgroups = "deny", then uid_map and gid_map.
bool write_id_maps(const Plan& plan) noexcept;
// sethostname(kSandboxHostname).
bool set_hostname() noexcept;

}  // namespace taskyon::hardening::namespaces
