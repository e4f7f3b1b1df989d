#include "taskyon/tasks/provider.h"

#include <array>
#include <utility>

#include <fmt/format.h>

#include "taskyon/tasks/chat.h"

namespace taskyon::tasks {
namespace {

using json::Value;

constexpr std::array<std::pair<Provider, std::string_view>, 4> kProviders = {{{Provider::openai_chat, "openai-chat"},
                                                                             {Provider::openai_responses, "openai-responses"},
                                                                             {Provider::anthropic, "anthropic"},
                                                                             {Provider::mcp, "mcp"}}};

std::unexpected<Error> usage(std::string message, std::string where) {
  return fail(Errc::bad_usage, std::move(message), std::move(where));
}

// JSON Schema keywords whose meaning strict mode cannot keep.
constexpr std::array<std::string_view, 12> kUnsupported = {
    "oneOf",           "allOf",            "not",          "if",           "then",          "else",
    "patternProperties", "dependentRequired", "dependentSchemas", "unevaluatedProperties", "propertyNames",
    "minProperties"};

bool is_object_schema(const Value& s) {
  if (s.contains("properties")) return true;
  if (!s.contains("type")) return false;
  const auto& t = s["type"];
  if (t.is_string()) return t == "object";
  if (t.is_array())
    for (const auto& e : t)
      if (e == "object") return true;
  return false;
}

Result<void> make_strict(Value& s, const std::string& at) {
  if (!s.is_object()) return {};  // boolean schemas: nothing to close
  for (auto k : kUnsupported)
    if (s.contains(k)) return usage(fmt::format("strict mode does not support \"{}\"", k), at + "/" + std::string(k));
  if (s.contains("maxProperties")) return usage("strict mode does not support \"maxProperties\"", at + "/maxProperties");
  if (is_object_schema(s)) {
    if (s.contains("additionalProperties") && !s["additionalProperties"].is_boolean())
      return usage("additionalProperties is a schema (the tool takes extra members of that shape); strict mode allows "
                   "only additionalProperties false",
                   at + "/additionalProperties");
    s["additionalProperties"] = false;
    Value required = s.value("required", Value::array());
    if (s.contains("properties") && s["properties"].is_object()) {
      for (auto& [name, sub] : s["properties"].items()) {
        bool listed = false;
        for (const auto& r : required) listed = listed || r == name;
        if (!listed)
          return usage(fmt::format("property \"{}\" is optional; strict mode requires every property in required, and "
                                   "making it required (or nullable) would change what the tool receives",
                                   name),
                       at + "/properties/" + name);
        if (auto r = make_strict(sub, at + "/properties/" + name); !r) return r;
      }
    }
  }
  const auto each = [&](const char* key) -> Result<void> {
    if (!s.contains(key)) return {};
    auto& v = s[key];
    if (v.is_array()) {
      for (std::size_t i = 0; i < v.size(); ++i)
        if (auto r = make_strict(v[i], fmt::format("{}/{}/{}", at, key, i)); !r) return r;
    } else if (v.is_object() && (std::string_view(key) == "$defs" || std::string_view(key) == "definitions")) {
      for (auto& [name, sub] : v.items())
        if (auto r = make_strict(sub, fmt::format("{}/{}/{}", at, key, name)); !r) return r;
    } else if (auto r = make_strict(v, fmt::format("{}/{}", at, key)); !r) {
      return r;
    }
    return {};
  };
  for (const char* key : {"items", "prefixItems", "anyOf", "$defs", "definitions"})
    if (auto r = each(key); !r) return r;
  return {};
}

Value openai_tool(Provider p, const VisibleTool& t, const Value& parameters, std::optional<bool> strict) {
  const auto& m = t.tool.manifest;
  if (p == Provider::openai_chat) {
    Value fn = {{"name", m.name}, {"description", m.description}, {"parameters", parameters}};
    if (strict) fn["strict"] = *strict;
    return {{"type", "function"}, {"function", std::move(fn)}};
  }
  // Responses: strict is always written, its default there is true.
  return {{"type", "function"},
          {"name", m.name},
          {"description", m.description},
          {"parameters", parameters},
          {"strict", strict.value_or(false)}};
}

Value output_schema_of(const registry::Manifest& m) {
  if (m.service.is_object() && m.service.contains("mcp") && m.service["mcp"].is_object() &&
      m.service["mcp"].contains("outputSchema"))
    return m.service["mcp"]["outputSchema"];
  return Value();
}

// The model's arguments text (or object) as an object, or why not.
void take_arguments(ProviderCall& call, const Value& arguments, const std::string& at) {
  if (arguments.is_object()) {
    call.arguments = arguments;
    return;
  }
  if (!arguments.is_string()) {
    call.arguments_error = fmt::format("the arguments ({}) must be a JSON object or a string holding one",
                                       at);
    return;
  }
  const auto& text = arguments.get_ref<const std::string&>();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    call.arguments = Value::object();  // some models send "" for a call without arguments
    return;
  }
  auto parsed = json::parse(text);
  if (!parsed) {
    call.arguments_error = fmt::format("the arguments ({}) are not valid JSON: {}", at, parsed.error().describe());
    return;
  }
  if (!parsed->is_object()) {
    call.arguments_error = fmt::format("the arguments ({}) must be a JSON object of named arguments, not {}", at,
                                       parsed->type_name());
    return;
  }
  call.arguments = std::move(*parsed);
}

Result<std::string> string_member(const Value& v, const char* key, const std::string& what) {
  if (!v.contains(key) || !v[key].is_string() || v[key].get_ref<const std::string&>().empty())
    return usage(fmt::format("{} needs a non-empty string \"{}\"", what, key), std::string("/") + key);
  return v[key].get<std::string>();
}

}  // namespace

std::string_view provider_name(Provider p) {
  for (auto [q, n] : kProviders)
    if (q == p) return n;
  return "openai-chat";
}

Result<Provider> parse_provider(std::string_view name) {
  for (auto [p, n] : kProviders)
    if (n == name) return p;
  return usage(fmt::format("unknown format \"{}\" (expected openai-chat, openai-responses, anthropic or mcp)", name),
               "--format");
}

Value mcp_tool(const std::string& name, const std::string& description, const Value& input_schema,
               const Value& output_schema) {
  Value tool = {{"name", name}, {"description", description}, {"inputSchema", input_schema}};
  if (output_schema.is_object()) tool["outputSchema"] = output_schema;
  return tool;
}

Result<Value> strict_parameters(const Value& schema) {
  if (!schema.is_object() || !is_object_schema(schema))
    return usage("strict mode needs parameters that are an object schema (\"type\": \"object\")", "");
  Value out = schema;
  if (auto r = make_strict(out, ""); !r) return std::unexpected(r.error());
  return out;
}

Result<ProviderTools> tools_for_provider(const std::vector<VisibleTool>& tools, Provider provider, bool strict) {
  const bool openai = provider == Provider::openai_chat || provider == Provider::openai_responses;
  if (strict && !openai)
    return usage(fmt::format("--strict is for the OpenAI formats (openai-chat, openai-responses), not {}",
                             provider_name(provider)),
                 "--strict");
  ProviderTools out{Value::array(), {}};
  for (const auto& t : tools) {
    const auto& m = t.tool.manifest;
    if (provider == Provider::anthropic) {
      out.tools.push_back({{"name", m.name}, {"description", m.description}, {"input_schema", m.parameters}});
    } else if (provider == Provider::mcp) {
      out.tools.push_back(mcp_tool(m.name, m.description, m.parameters, output_schema_of(m)));
    } else if (!strict) {
      out.tools.push_back(openai_tool(provider, t, m.parameters, std::nullopt));
    } else if (auto s = strict_parameters(m.parameters)) {
      out.tools.push_back(openai_tool(provider, t, *s, true));
    } else {
      out.tools.push_back(openai_tool(provider, t, m.parameters, false));
      out.not_strict.push_back({m.name, s.error()});
    }
  }
  return out;
}

Result<ProviderCall> parse_provider_call(const Value& v) {
  if (!v.is_object()) return usage("a tool call must be a JSON object as the provider sent it", "");
  ProviderCall call;
  const std::string type = v.contains("type") && v["type"].is_string() ? v["type"].get<std::string>() : "";
  if (v.contains("function") && (type.empty() || type == "function")) {
    call.provider = Provider::openai_chat;
    const auto& f = v["function"];
    if (!f.is_object()) return usage("an OpenAI chat tool call's \"function\" must be an object", "/function");
    auto id = string_member(v, "id", "an OpenAI chat tool call");
    if (!id) return std::unexpected(id.error());
    auto name = string_member(f, "name", "an OpenAI chat tool call's function");
    if (!name) return fail(Errc::bad_usage, name.error().message, "/function/name");
    call.id = *id;
    call.name = *name;
    take_arguments(call, f.value("arguments", Value("")), "/function/arguments");
  } else if (type == "function_call") {
    call.provider = Provider::openai_responses;
    auto id = string_member(v, "call_id", "an OpenAI Responses function_call");
    if (!id) return std::unexpected(id.error());
    auto name = string_member(v, "name", "an OpenAI Responses function_call");
    if (!name) return std::unexpected(name.error());
    call.id = *id;
    call.name = *name;
    take_arguments(call, v.value("arguments", Value("")), "/arguments");
  } else if (type == "tool_use") {
    call.provider = Provider::anthropic;
    auto id = string_member(v, "id", "an Anthropic tool_use block");
    if (!id) return std::unexpected(id.error());
    auto name = string_member(v, "name", "an Anthropic tool_use block");
    if (!name) return std::unexpected(name.error());
    call.id = *id;
    call.name = *name;
    take_arguments(call, v.value("input", Value::object()), "/input");
  } else {
    return usage("not a tool call taskyon knows: expected an OpenAI chat tool call {\"id\", \"type\": \"function\", "
                 "\"function\": {…}}, an OpenAI Responses {\"type\": \"function_call\", …} or an Anthropic "
                 "{\"type\": \"tool_use\", …}",
                 "");
  }
  if (!is_provider_call_id(Value(call.id)))
    return usage("the provider's call id must be 1 to 256 printable ASCII characters without spaces",
                 call.provider == Provider::openai_responses ? "/call_id" : "/id");
  return call;
}

Result<Value> tool_answer(Provider provider, const std::string& call_id, const Value& result_content) {
  if (provider == Provider::mcp)
    return usage("an MCP client gets its answer as a tools/call result (tycli mcp, or /mcp of tycli serve); choose openai-chat, "
                 "openai-responses or anthropic",
                 "--format");
  if (!result_content.is_object() || !result_content.contains("toolResult") || !result_content["toolResult"].is_object())
    return fail(Errc::internal, "a tool answer needs a stored tool result's content");
  const auto& r = result_content["toolResult"];
  const std::string text = tool_result_text(r);
  switch (provider) {
    case Provider::openai_chat:
      return Value{{"role", "tool"}, {"tool_call_id", call_id}, {"content", text}};
    case Provider::openai_responses:
      return Value{{"type", "function_call_output"}, {"call_id", call_id}, {"output", text}};
    case Provider::anthropic:
      return Value{{"role", "user"},
                   {"content",
                    {{{"type", "tool_result"},
                      {"tool_use_id", call_id},
                      {"content", text},
                      {"is_error", r.contains("error")}}}}};
    case Provider::mcp:
      break;
  }
  return fail(Errc::internal, "unknown provider");
}

}  // namespace taskyon::tasks
