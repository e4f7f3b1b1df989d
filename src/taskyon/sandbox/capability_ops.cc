// The capability vocabulary of pool.h: op names and the cancel token.
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
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
  State() : fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~State() {
    if (fd >= 0) ::close(fd);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  std::atomic<bool> cancelled{false};
  int fd;
};

CancelToken::CancelToken() : state_(std::make_shared<State>()) {}

void CancelToken::cancel() const {
  if (state_->cancelled.exchange(true)) return;
  if (state_->fd >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(state_->fd, &one, sizeof one);
  }
}

bool CancelToken::cancelled() const { return state_->cancelled.load(); }
const std::atomic<bool>& CancelToken::flag() const { return state_->cancelled; }
int CancelToken::fd() const { return state_->fd; }

}  // namespace taskyon::sandbox
