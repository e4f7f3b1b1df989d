// JSON Schema (draft-07) checks of tool parameters, through valijson.
// Schemas are resolved locally only: a remote "$ref" is an error, never a fetch.
#pragma once

#include <cstddef>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"

namespace taskyon::registry {

// A manifest's `parameters`: a JSON Schema object with "type": "object" (model
// providers call tools with an object of named arguments) that valijson accepts.
// Errc::invalid_manifest, `where` under "/parameters".
Result<void> check_parameters_schema(const json::Value& parameters);

// Strings checked against a `pattern` are bounded: valijson's std::regex
// recurses per character and would overflow the stack on long input.
inline constexpr std::size_t kMaxPatternSubjectBytes = 4096;

// Validates call arguments against `parameters`. Integers above 2^63 - 1 and
// strings over kMaxPatternSubjectBytes under a schema with patterns are
// refused before validation (Errc::invalid_arguments). Errc::invalid_arguments; the
// message lists each broken rule with the argument's JSON pointer
// (e.g. "/num1: value type is not allowed"), `where` the first pointer.
Result<void> validate_arguments(const json::Value& parameters, const json::Value& arguments);

}  // namespace taskyon::registry
