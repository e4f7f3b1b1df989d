// JSON Schema (draft-07) checks of tool parameters, through valijson.
// Schemas are resolved locally only: a remote "$ref" is an error, never a fetch.
#pragma once

#include <cstddef>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"

namespace taskyon::registry {

// A manifest's `parameters`: a JSON Schema object with "type": "object" (model
// providers call tools with an object of named arguments) that valijson accepts
// and whose patterns RE2 can match (pattern.h: no backreference or lookaround).
// Errc::invalid_manifest, `where` under "/parameters" (a pattern's own pointer).
Result<void> check_parameters_schema(const json::Value& parameters);

// Call arguments are at most this many bytes of canonical JSON, checked before
// validation (docs/limits.md); below the sandbox's 8 MiB frame.
inline constexpr std::size_t kMaxArgumentsBytes = 4u << 20;

// Validates call arguments against `parameters`. Patterns and the date formats
// are matched by RE2, in time linear in the string's length, with no length
// cap; integers above 2^63 - 1 are compared as doubles. Errc::invalid_arguments; the
// message lists each broken rule with the argument's JSON pointer
// (e.g. "/num1: value type is not allowed"), `where` the first pointer.
Result<void> validate_arguments(const json::Value& parameters, const json::Value& arguments);

}  // namespace taskyon::registry
