// JSON Schema (draft-07) checks of tool parameters, through valijson.
// Schemas are resolved locally only: a remote "$ref" is an error, never a fetch.
#pragma once

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"

namespace taskyon::registry {

// A manifest's `parameters`: a JSON Schema object with "type": "object" (model
// providers call tools with an object of named arguments) that valijson accepts.
// Errc::invalid_manifest, `where` under "/parameters".
Result<void> check_parameters_schema(const json::Value& parameters);

// Validates call arguments against `parameters`. Errc::invalid_arguments; the
// message lists each broken rule with the argument's JSON pointer
// (e.g. "/num1: value type is not allowed"), `where` the first pointer.
Result<void> validate_arguments(const json::Value& parameters, const json::Value& arguments);

}  // namespace taskyon::registry
