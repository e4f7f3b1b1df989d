// Native functions compiled into the host: the implementations of
// trusted-native tools (DESIGN §3). They run with the host's full authority,
// bypass every sandbox, and are reviewed as application code. Only the id,
// description and parameter schema of a native function ever leave the core;
// its implementation never crosses the protocol or any serialized form (R5).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"

namespace taskyon::native {

struct NativeFunction {
  std::string id;           // stable native id, e.g. "taskyon.sha256"
  std::string description;  // what it does, for the manifest
  json::Value parameters;   // JSON Schema of its arguments (type object)
  // The implementation. A returned Error is a tool error (the call ran and failed).
  std::function<Result<json::Value>(const json::Value& args)> run;
};

// The native function with this id, or nullptr: this host has no such function.
const NativeFunction* find(std::string_view id);

// Every native function this host has, sorted by id.
const std::vector<NativeFunction>& all();

// A manifest for a native function (execution "trusted-native"), named `name`.
json::Value manifest_for(const NativeFunction& function, std::string_view name);

}  // namespace taskyon::native
