// The native functions of this host. Each is small enough to review in full:
// that is the bar for code that runs with host authority.
#include <algorithm>

#include "taskyon/native/native.h"

namespace taskyon::native {
namespace {

using json::Value;

Value object_schema(Value properties, Value required) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)},
          {"additionalProperties", false}};
}

std::vector<NativeFunction> make_builtins() {
  std::vector<NativeFunction> fns;
  fns.push_back({"taskyon.sha256", "SHA-256 of a UTF-8 text, as 64 lower-case hex digits.",
                 object_schema({{"text", {{"type", "string"}}}}, {"text"}),
                 [](const Value& args) -> Result<Value> { return json::sha256_hex(args.at("text").get<std::string>()); }});
  fns.push_back({"taskyon.canonical_json",
                 "The RFC 8785 canonical form of a JSON value and its content id (sha256:…), as Taskyon hashes "
                 "tools and tasks.",
                 object_schema({{"value", Value::object()}}, {"value"}), [](const Value& args) -> Result<Value> {
                   auto canonical = json::canonicalize(args.at("value"));
                   if (!canonical) return std::unexpected(canonical.error());
                   return Value{{"canonical", *canonical}, {"id", json::content_id(*canonical)}};
                 }});
  std::sort(fns.begin(), fns.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return fns;
}

}  // namespace

const std::vector<NativeFunction>& all() {
  static const std::vector<NativeFunction> builtins = make_builtins();
  return builtins;
}

const NativeFunction* find(std::string_view id) {
  for (const auto& f : all())
    if (f.id == id) return &f;
  return nullptr;
}

Value manifest_for(const NativeFunction& function, std::string_view name) {
  return {{"name", name},
          {"description", function.description},
          {"parameters", function.parameters},
          {"execution", "trusted-native"},
          {"native", function.id}};
}

}  // namespace taskyon::native
