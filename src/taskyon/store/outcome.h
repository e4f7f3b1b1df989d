// What a capability call returns to tool code when it is refused: a denial is
// an outcome, not a failure (STYLE 3). Store functions that decide a
// capability return Result<Outcome<T>>: the outer Error is broken machinery
// (the database failed: the host's problem, exit 3), the inner CapabilityError
// is a refusal the sandbox hands to the tool as a tool error, and the sandbox
// survives it (M13).
#pragma once

#include <expected>
#include <optional>
#include <string>

namespace taskyon::store {

// Stable codes (part of the tool-facing contract; never rename):
//   denied           no grant for the calling revision (M8, M17, S7)
//   too_large        a quota or size limit would be exceeded
//   invalid_request  the request itself is malformed (bad key, bad value)
// The fetch module adds policy_blocked, timeout, cancelled and network (M13).
struct CapabilityError {
  std::string code;
  std::string message;  // one sentence for the tool's author; never a secret
};

template <typename T>
using Outcome = std::expected<T, CapabilityError>;

inline std::unexpected<CapabilityError> refuse(std::string code, std::string message) {
  return std::unexpected<CapabilityError>(CapabilityError{std::move(code), std::move(message)});
}

// Who is asking: the revision bound to the sandbox's channel (M3), never an
// identity a frame claims, and the function-call task being run, if known.
struct Caller {
  std::string revision;             // "sha256:…"
  std::optional<std::string> task;  // "sha256:…" of the call task
};

}  // namespace taskyon::store
