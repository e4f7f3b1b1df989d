#include "taskyon/registry/schema.h"

#include <exception>
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
  std::string message = "arguments do not match the tool's parameters:";
  std::string first;
  for (const auto& error : results) {
    // valijson adds a summary line for each parent of a failed property; the
    // leaf errors already say what broke, so the summaries are left out.
    if (error.description.starts_with("Failed to validate against schema associated with property")) continue;
    const auto where = to_pointer(error.context);
    if (first.empty()) first = where;
    message += fmt::format(" {}: {};", where, error.description);
  }
  message.pop_back();
  if (first.empty()) first = "/";
  return fail(Errc::invalid_arguments, message, first);
}

}  // namespace taskyon::registry
