// posix_spawn attributes for every program the host starts (an imported MCP
// server, `node --version`, ld.so --list, the loopback HTTPS server, a
// diagnostics `tycli serve`): the child starts with no signal blocked,
// whatever the spawning thread blocks. A thread that has written to a sandbox
// blocks SIGPIPE for good (base/sigpipe.h write_no_sigpipe), and a host
// worker reuses its thread for later calls; posix_spawn otherwise passes the
// caller's mask on (POSIX.1-2017 posix_spawn, POSIX_SPAWN_SETSIGMASK).
// Sandboxes and strict Python reset their mask themselves (hardening::contain).
#pragma once

#include <signal.h>
#include <spawn.h>

namespace taskyon {

class SpawnAttributes {
 public:
  // `flags`: more POSIX_SPAWN_* flags (e.g. POSIX_SPAWN_SETSID).
  explicit SpawnAttributes(short flags = 0) {
    ::posix_spawnattr_init(&attr_);
    sigset_t none;
    sigemptyset(&none);
    ::posix_spawnattr_setsigmask(&attr_, &none);
    ::posix_spawnattr_setflags(&attr_, static_cast<short>(flags | POSIX_SPAWN_SETSIGMASK));
  }
  ~SpawnAttributes() { ::posix_spawnattr_destroy(&attr_); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;

  const posix_spawnattr_t* get() const { return &attr_; }

 private:
  posix_spawnattr_t attr_;
};

}  // namespace taskyon
