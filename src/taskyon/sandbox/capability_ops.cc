// The capability vocabulary of pool.h: op names and the cancel token.
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <mutex>
#include <utility>

#include "taskyon/sandbox/pool.h"

namespace taskyon::sandbox {

namespace {

constexpr std::array<std::pair<CapabilityOp, std::string_view>, 7> kOps{{
    {CapabilityOp::fetch, "fetch"},
    {CapabilityOp::create_subtasks_result, "createSubtasksResult"},
    {CapabilityOp::resolve_invocation, "resolveInvocation"},
    {CapabilityOp::storage_get, "storage.get"},
    {CapabilityOp::storage_set, "storage.set"},
    {CapabilityOp::storage_delete, "storage.delete"},
    {CapabilityOp::storage_list, "storage.list"},
}};

}  // namespace

std::string_view capability_op_name(CapabilityOp op) {
  for (const auto& [value, name] : kOps) {
    if (value == op) return name;
  }
  return "fetch";
}

std::optional<CapabilityOp> capability_op(std::string_view name) {
  for (const auto& [value, spelled] : kOps) {
    if (spelled == name) return value;
  }
  return std::nullopt;
}

struct CancelToken::State {
  State() = default;
  ~State() {
    if (const int made = fd.load(); made >= 0) ::close(made);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  std::atomic<bool> cancelled{false};
  // Made by the first fd(), not with the token (issue 19): most tokens are
  // never waited on (a default one replaced by the caller's, a capability
  // request's whose transfer polls flag()), and each descriptor cost a call
  // two system calls.
  std::atomic<int> fd{-1};
  std::mutex watch_mu;  // cancel() wakes `watcher` only while it is registered
  int watcher = -1;     // guarded by watch_mu: a Watch's descriptor, -1 for none
};

namespace {

void wake(int fd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(fd, &one, sizeof one);
}

}  // namespace

CancelToken::CancelToken() : state_(std::make_shared<State>()) {}

// cancel() stores the flag, then looks for a descriptor; fd() stores the
// descriptor, then looks at the flag (both sequentially consistent). So at
// least one of them sees the other's store and wakes the descriptor: a
// waiter never misses a cancel that raced with the descriptor's making.
void CancelToken::cancel() const {
  if (state_->cancelled.exchange(true)) return;
  if (const int fd = state_->fd.load(); fd >= 0) wake(fd);
  // Under the lock, so that a Watch's owner, once the Watch is gone, may
  // close its descriptor: no wake is still on its way to it.
  std::lock_guard lock(state_->watch_mu);
  if (state_->watcher >= 0) wake(state_->watcher);
}

// The Watch registers under the lock, then its owner looks at the flag: a
// cancel whose lock came first set the flag before it (seen), one whose lock
// came after finds the descriptor (woken).
CancelToken::Watch::Watch(const CancelToken& token, int fd) : state_(token.state_) {
  if (fd < 0) return;
  std::lock_guard lock(state_->watch_mu);
  if (state_->watcher >= 0) return;
  state_->watcher = fd;
  registered_ = true;
}

CancelToken::Watch::~Watch() {
  if (!registered_) return;
  std::lock_guard lock(state_->watch_mu);
  state_->watcher = -1;
}

int CancelToken::fd() const {
  if (const int fd = state_->fd.load(); fd >= 0) return fd;
  const int made = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (made < 0) return -1;
  int expected = -1;
  if (!state_->fd.compare_exchange_strong(expected, made)) {  // another thread made one first
    ::close(made);
    return expected;
  }
  if (state_->cancelled.load()) wake(made);
  return made;
}

bool CancelToken::cancelled() const { return state_->cancelled.load(); }
const std::atomic<bool>& CancelToken::flag() const { return state_->cancelled; }

}  // namespace taskyon::sandbox
