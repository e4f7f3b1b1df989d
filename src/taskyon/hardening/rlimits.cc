#include "taskyon/hardening/rlimits.h"

#include <algorithm>

namespace taskyon::hardening::rlimits {

namespace {

// `wanted`, but never above the host's hard limit for `resource`.
struct rlimit capped(int resource, rlim_t wanted) {
  struct rlimit host {};
  if (::getrlimit(static_cast<__rlimit_resource_t>(resource), &host) == 0 && host.rlim_max != RLIM_INFINITY) {
    wanted = std::min(wanted, host.rlim_max);
  }
  return {wanted, wanted};
}

}  // namespace

Plan plan_rlimits(const Limits& limits) {
  Plan plan;
  auto add = [&](int resource, rlim_t value) { plan.entries[plan.count++] = {resource, capped(resource, value)}; };
  add(RLIMIT_CORE, 0);
  add(RLIMIT_FSIZE, 0);
  add(RLIMIT_NOFILE, static_cast<rlim_t>(limits.open_files));
  if (limits.data_bytes > 0) add(RLIMIT_DATA, static_cast<rlim_t>(limits.data_bytes));
  return plan;
}

bool apply_rlimits(const Plan& plan) noexcept {
  for (std::size_t i = 0; i < plan.count; ++i) {
    if (::setrlimit(static_cast<__rlimit_resource_t>(plan.entries[i].resource), &plan.entries[i].value) != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace taskyon::hardening::rlimits
