// Which hardening layers this machine supports, probed once per process, and
// a description of every layer for `tycli sandbox explain`.
#pragma once

#include <string>
#include <vector>

namespace taskyon::hardening {

struct Support {
  int landlock_abi = 0;          // 0: no Landlock (kernel < 5.13, or disabled)
  bool seccomp = false;          // seccomp filters (SECCOMP_MODE_FILTER)
  bool user_namespaces = false;  // a child of this process can enter the sandbox's namespaces
  std::string namespaces_error;  // why not, when it cannot
  bool sandbox_uid = false;      // root host: a child can become 65534 before its namespaces
  bool mount_namespace = false;  // a child can add a mount namespace to them
  bool pid_namespace = false;    // a child can add a PID namespace to them
  std::string full_error;        // why the full set (uid, mount, pid) cannot be entered
  bool pidfd = false;            // pidfd_open(2): children tracked without pid reuse races
};

// Probed on first use (the namespace probe forks one short-lived child that
// tries exactly what a sandbox child does), then cached.
const Support& support();

// One layer of a sandbox child, in the order the child applies them.
struct Layer {
  std::string id;      // stable: "environment", "landlock-fs", "seccomp", …
  std::string name;    // for people
  bool active = false; // applied to every sandbox child on this machine
  std::string detail;  // e.g. "Landlock ABI 7", or why it is inactive
  std::string denies;  // what it denies, in one sentence
  std::string tests;   // the hostile tests that prove the claim (each also runs with the layer off)
};

std::vector<Layer> describe_layers(const Support& support);

// One sentence per missing kernel layer, e.g. that the kernel lacks Landlock;
// empty when every layer is active.
std::vector<std::string> warnings(const Support& support);

}  // namespace taskyon::hardening
