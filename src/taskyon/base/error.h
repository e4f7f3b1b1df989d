// Errors are values. Every fallible public call returns Result<T>; no exception
// crosses a public API. An Error carries a stable code (for scripts and tests),
// a message for people that says what was wrong, and where (a JSON pointer, a
// file, a revision id) when that is known.
#pragma once

#include <expected>
#include <string>
#include <string_view>

namespace taskyon {

// Stable error codes. Their spelling (code_name) is part of the public contract:
// it appears in `--json` output and in stored tool results. Never renumber or rename.
enum class Errc {
  bad_usage,          // caller's fault: a command line or API precondition
  invalid_json,       // text is not strict JSON (syntax, UTF-8, duplicate member names)
  not_canonical,      // a value RFC 8785 cannot represent (NaN, Infinity, lone surrogate, inexact integer)
  invalid_manifest,   // a tool definition breaks a rule of DESIGN §3
  invalid_task,       // a task or draft breaks a rule of DESIGN §4
  invalid_arguments,  // call arguments break the tool's parameter schema
  not_found,          // no revision, binding or task with that name, id or prefix
  ambiguous,          // a revision prefix matches several revisions
  integrity,          // stored data does not hash to its id (tampered) or breaks an invariant
  store,              // the database failed (I/O, locked, constraint of unknown origin)
  io,                 // a file could not be read or written
  runtime_missing,    // the sandbox runtime (node) is not installed or not executable
  internal,           // our bug: a condition that should never happen
};

// The stable spelling of a code, e.g. "invalid_manifest".
std::string_view code_name(Errc code);

struct Error {
  Errc code;
  std::string message;  // what was wrong, in one sentence
  std::string where;    // where: JSON pointer, path, id; empty when not applicable

  // "message (at where)" or just "message".
  std::string describe() const;
};

template <typename T>
using Result = std::expected<T, Error>;

// Shorthand for returning an error: `return fail(Errc::not_found, "...", where);`
inline std::unexpected<Error> fail(Errc code, std::string message, std::string where = {}) {
  return std::unexpected<Error>(Error{code, std::move(message), std::move(where)});
}

}  // namespace taskyon
