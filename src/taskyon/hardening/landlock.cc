#include "taskyon/hardening/landlock.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace taskyon::hardening::landlock {

namespace {

// Syscall numbers are the same on every architecture (asm-generic).
constexpr long kSysCreateRuleset = 444;
constexpr long kSysAddRule = 445;
constexpr long kSysRestrictSelf = 446;

constexpr std::uint32_t kCreateRulesetVersion = 1u << 0;
constexpr int kRulePathBeneath = 1;

// Filesystem access rights, by the ABI that introduced them.
constexpr std::uint64_t kFsExecute = 1ull << 0;
constexpr std::uint64_t kFsReadFile = 1ull << 2;
constexpr std::uint64_t kFsAbi1 = (1ull << 13) - 1;  // EXECUTE .. MAKE_SYM
constexpr std::uint64_t kFsRefer = 1ull << 13;       // ABI 2
constexpr std::uint64_t kFsTruncate = 1ull << 14;    // ABI 3
constexpr std::uint64_t kFsIoctlDev = 1ull << 15;    // ABI 5
// Network access rights (ABI 4).
constexpr std::uint64_t kNetBindTcp = 1ull << 0;
constexpr std::uint64_t kNetConnectTcp = 1ull << 1;
// Scopes (ABI 6).
constexpr std::uint64_t kScopeAbstractUnixSocket = 1ull << 0;
constexpr std::uint64_t kScopeSignal = 1ull << 1;

// struct landlock_ruleset_attr as of ABI 6; older kernels get a prefix of it.
struct RulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;  // ABI 4
  std::uint64_t scoped;              // ABI 6
};

// struct landlock_path_beneath_attr (packed in the kernel's uapi).
struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

Result<void> add_file(int ruleset_fd, const std::string& path, std::uint64_t access) {
  Fd file(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!file) {
    return fail(Errc::internal, fmt::format("Landlock: cannot open {}: {}", path, std::strerror(errno)), path);
  }
  PathBeneathAttr rule{access, file.get()};
  if (::syscall(kSysAddRule, ruleset_fd, kRulePathBeneath, &rule, 0) != 0) {
    return fail(Errc::internal, fmt::format("Landlock: cannot add a rule for {}: {}", path, std::strerror(errno)),
                path);
  }
  return {};
}

}  // namespace

int abi_version() noexcept {
  const long abi = ::syscall(kSysCreateRuleset, nullptr, 0, kCreateRulesetVersion);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

Result<Ruleset> Ruleset::build(const Grants& grants, int abi) {
  if (abi < 1) return fail(Errc::internal, "Landlock is not available on this kernel");
  Ruleset ruleset;
  ruleset.abi_ = abi;
  ruleset.handled_fs_ = kFsAbi1 | (abi >= 2 ? kFsRefer : 0) | (abi >= 3 ? kFsTruncate : 0) |
                        (abi >= 5 ? kFsIoctlDev : 0);
  ruleset.handled_net_ = abi >= 4 ? kNetBindTcp | kNetConnectTcp : 0;
  ruleset.scoped_ = abi >= 6 ? kScopeAbstractUnixSocket | kScopeSignal : 0;
  const RulesetAttr attr{ruleset.handled_fs_, ruleset.handled_net_, ruleset.scoped_};
  // The kernel refuses a larger struct with unknown non-zero members (E2BIG).
  const std::size_t size = abi >= 6 ? sizeof attr : abi >= 4 ? 2 * sizeof(std::uint64_t) : sizeof(std::uint64_t);
  const long fd = ::syscall(kSysCreateRuleset, &attr, size, 0);
  if (fd < 0) return fail(Errc::internal, fmt::format("Landlock: cannot create a ruleset: {}", std::strerror(errno)));
  ruleset.fd_.reset(static_cast<int>(fd));  // O_CLOEXEC by the kernel
  for (const std::string& path : grants.read_execute) {
    if (auto added = add_file(ruleset.fd(), path, kFsReadFile | kFsExecute); !added) {
      return std::unexpected(std::move(added.error()));
    }
  }
  for (const std::string& path : grants.read) {
    if (auto added = add_file(ruleset.fd(), path, kFsReadFile); !added) {
      return std::unexpected(std::move(added.error()));
    }
  }
  return ruleset;
}

bool restrict_self(const Ruleset& ruleset) noexcept {
  return ::syscall(kSysRestrictSelf, ruleset.fd(), 0) == 0;
}

}  // namespace taskyon::hardening::landlock
