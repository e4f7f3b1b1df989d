#include "taskyon/registry/schema.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include <fmt/format.h>

// valijson reports schema errors by exception only when asked; otherwise it aborts.
#define VALIJSON_USE_EXCEPTIONS 1
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

namespace taskyon::registry {
namespace {

// valijson reports a path as {"<root>", "[num1]", "[0]"}; we speak JSON pointers.
std::string to_pointer(const std::vector<std::string>& context) {
  std::string out;
  for (const auto& part : context) {
    if (part == "<root>") continue;
    std::string p = part;
    if (p.size() >= 2 && p.front() == '[' && p.back() == ']') p = p.substr(1, p.size() - 2);
    if (p.size() >= 2 && p.front() == '"' && p.back() == '"') p = p.substr(1, p.size() - 2);
    out += "/" + p;
  }
  return out.empty() ? "/" : out;
}

// True if `longer` is a strict extension of `prefix`.
bool extends(const std::vector<std::string>& longer, const std::vector<std::string>& prefix) {
  return longer.size() > prefix.size() && std::equal(prefix.begin(), prefix.end(), longer.begin());
}

bool uses_patterns(const json::Value& schema) {
  if (schema.is_object()) {
    if (schema.contains("pattern") || schema.contains("patternProperties")) return true;
    for (const auto& [_, v] : schema.items())
      if (uses_patterns(v)) return true;
  } else if (schema.is_array()) {
    for (const auto& v : schema)
      if (uses_patterns(v)) return true;
  }
  return false;
}

// The property a valijson summary line names ("… property name 'a'."), if any.
std::optional<std::string> summarized_property(const std::string& description) {
  static constexpr std::string_view kMarker = "property name '";
  const auto at = description.find(kMarker);
  if (at == std::string::npos) return std::nullopt;
  const auto begin = at + kMarker.size();
  const auto end = description.rfind('\'');
  if (end == std::string::npos || end < begin) return std::nullopt;
  return description.substr(begin, end - begin);
}

bool has_huge_unsigned(const json::Value& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX);
  if (v.is_structured())
    for (const auto& child : v)
      if (has_huge_unsigned(child)) return true;
  return false;
}

// valijson 1.0's nlohmann adapter reads unsigned integers as signed, so values
// above INT64_MAX wrap to negative numbers. JSON numbers are doubles anyway
// (RFC 8785 §3.2.2.3): such integers are compared as doubles instead.
void widen_huge_unsigned(json::Value& v) {
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    v = static_cast<double>(v.get<std::uint64_t>());
  } else if (v.is_structured()) {
    for (auto& child : v) widen_huge_unsigned(child);
  }
}

// std::regex (valijson's pattern engine) recurses per character: a long
// string checked against a pattern would overflow the stack.
Result<void> check_subject(const json::Value& v, bool patterns, const std::string& where) {
  if (patterns && v.is_string() && v.get_ref<const std::string&>().size() > kMaxPatternSubjectBytes)
    return fail(Errc::invalid_arguments,
                fmt::format("a string of {} bytes is too long to check against a pattern (the limit is {} bytes)",
                            v.get_ref<const std::string&>().size(), kMaxPatternSubjectBytes),
                where);
  if (v.is_object()) {
    for (const auto& [key, child] : v.items()) {
      if (patterns && key.size() > kMaxPatternSubjectBytes)
        return fail(Errc::invalid_arguments, "a member name is too long to check against a pattern", where);
      if (auto r = check_subject(child, patterns, (where == "/" ? "" : where) + "/" + key); !r) return r;
    }
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i)
      if (auto r = check_subject(v[i], patterns, fmt::format("{}/{}", where == "/" ? "" : where, i)); !r) return r;
  }
  return {};
}

Result<void> check_validatable(const json::Value& parameters, const json::Value& arguments, const std::string& where) {
  return check_subject(arguments, uses_patterns(parameters), where);
}

Result<void> load(const json::Value& parameters, valijson::Schema& schema) {
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(parameters);
    parser.populateSchema(adapter, schema);  // no fetch function: remote $ref fails
  } catch (const std::exception& e) {
    return fail(Errc::invalid_manifest, fmt::format("\"parameters\" is not a valid JSON Schema: {}", e.what()),
                "/parameters");
  }
  return {};
}

}  // namespace

Result<void> check_parameters_schema(const json::Value& parameters) {
  if (!parameters.is_object())
    return fail(Errc::invalid_manifest, "\"parameters\" must be a JSON Schema object", "/parameters");
  auto type = parameters.find("type");
  if (type == parameters.end() || *type != "object")
    return fail(Errc::invalid_manifest,
                "\"parameters\" must have \"type\": \"object\" (tools take an object of named arguments)",
                "/parameters/type");
  valijson::Schema schema;
  return load(parameters, schema);
}

Result<void> validate_arguments(const json::Value& parameters, const json::Value& arguments) {
  if (auto r = check_validatable(parameters, arguments, "/"); !r) return r;
  if (has_huge_unsigned(parameters) || has_huge_unsigned(arguments)) {
    json::Value p = parameters, a = arguments;
    widen_huge_unsigned(p);
    widen_huge_unsigned(a);
    return validate_arguments(p, a);
  }
  valijson::Schema schema;
  if (auto r = load(parameters, schema); !r) return r;
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(arguments);
  try {
    if (validator.validate(schema, target, &results)) return {};
  } catch (const std::exception& e) {
    return fail(Errc::invalid_arguments, fmt::format("arguments could not be validated: {}", e.what()), "/");
  }
  std::vector<valijson::ValidationResults::Error> errors(results.begin(), results.end());
  std::string message = "arguments do not match the tool's parameters:";
  std::string first;
  for (const auto& error : errors) {
    // valijson adds a summary for each parent of a failed property. Where a
    // deeper error says what broke, the summary is left out; where none does
    // (a `false` subschema), the summary is the only reason and is kept.
    if (error.description.starts_with("Failed to validate against schema associated with property") &&
        std::any_of(errors.begin(), errors.end(), [&](const auto& other) { return extends(other.context, error.context); }))
      continue;
    auto where = to_pointer(error.context);
    if (auto name = summarized_property(error.description)) where = (where == "/" ? "" : where) + "/" + *name;
    if (first.empty()) first = where;
    message += fmt::format(" {}: {};", where, error.description);
  }
  message.pop_back();
  if (first.empty()) first = "/";
  return fail(Errc::invalid_arguments, message, first);
}

}  // namespace taskyon::registry
