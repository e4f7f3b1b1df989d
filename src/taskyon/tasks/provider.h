// Model providers' own shapes of tools, tool calls and tool results (issue
// 16 item 1), so an agent loop hands a model's tool call to taskyon verbatim
// and the model's answer back verbatim, with the model's call id.
//
//   openai-chat       Chat Completions: tools [{"type": "function", "function":
//                     {name, description, parameters, strict?}}]; a call
//                     {"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}};
//                     the answer {"role": "tool", "tool_call_id", "content"}.
//   openai-responses  Responses: tools [{"type": "function", name, description,
//                     parameters, strict}] (strict always written: the API's
//                     default is true); a call {"type": "function_call",
//                     "call_id", "name", "arguments": "<JSON text>"}; the answer
//                     {"type": "function_call_output", "call_id", "output"}.
//   anthropic         Messages: tools [{name, description, input_schema}]; a call
//                     {"type": "tool_use", "id", "name", "input": {…}}; the answer
//                     {"role": "user", "content": [{"type": "tool_result",
//                     "tool_use_id", "content", "is_error"}]}.
//   mcp               tools/list entries {name, description, inputSchema,
//                     outputSchema?} (mcp_tool, also used by mcp/server.cc).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"
#include "taskyon/tasks/scope.h"

namespace taskyon::tasks {

enum class Provider { openai_chat, openai_responses, anthropic, mcp };

std::string_view provider_name(Provider p);  // "openai-chat", "openai-responses", "anthropic", "mcp"
// Errc::bad_usage naming the four spellings.
Result<Provider> parse_provider(std::string_view name);

// One MCP tools/list entry (MCP 2025-06-18 Tool): {name, description,
// inputSchema, outputSchema when it is an object}.
json::Value mcp_tool(const std::string& name, const std::string& description, const json::Value& input_schema,
                     const json::Value& output_schema);

// OpenAI strict mode's rules for a parameters schema (function calling,
// "Structured Outputs"): every object schema has additionalProperties false
// and lists all its properties in required. Returns the strict schema:
// additionalProperties false is added where it was absent or true (the model
// may then send fewer members, never one the tool refuses). Refused, because
// it would change what the tool receives (Errc::bad_usage, `where` the JSON
// pointer in the schema, the message the reason): an optional property (a
// required one the model must always send, or a nullable one it sends as
// null, is not what the tool declared), additionalProperties given as a
// schema, patternProperties, and keywords strict mode does not support
// (oneOf, allOf, not, if/then/else, dependentRequired, dependentSchemas,
// unevaluatedProperties, propertyNames, minProperties, maxProperties); the
// root must be an object schema.
Result<json::Value> strict_parameters(const json::Value& schema);

// A tool left non-strict by tools_for_provider(…, strict = true), and why.
struct NotStrict {
  std::string tool;
  Error reason;  // from strict_parameters
};

struct ProviderTools {
  json::Value tools;                 // JSON array in the provider's shape
  std::vector<NotStrict> not_strict;  // with strict: tools written with "strict": false
};

// The provider's tools list for `tools` (T8: name, description and parameters
// only; the output schema too for mcp). strict is for the two OpenAI shapes
// only (Errc::bad_usage otherwise): each tool strict_parameters accepts gets
// its strict schema and "strict": true, every other one keeps its schema with
// "strict": false and is named in not_strict.
Result<ProviderTools> tools_for_provider(const std::vector<VisibleTool>& tools, Provider provider, bool strict);

// A model's tool call as the provider sent it.
struct ProviderCall {
  Provider provider = Provider::openai_chat;  // the shape it came in
  std::string id;                             // the provider's call id (id, call_id)
  std::string name;
  std::optional<json::Value> arguments;       // an object; empty when the model's arguments are not usable
  std::string arguments_error;                // why not, in plain words, when arguments is empty
};

// Recognises the three call shapes above (an OpenAI "arguments" may also be an
// object; an empty string is taken as {}). The call must carry an id and a
// name: Errc::bad_usage (nothing can answer it) with the pointer of what is
// missing. Arguments that are not JSON, or not an object, are not an error
// here: they come back in arguments_error, for the model to read.
Result<ProviderCall> parse_provider_call(const json::Value& value);

// The provider's `role: tool` answer to call `call_id` for a stored tool
// result's content ({"toolResult": …}); its text is the result as JSON, or
// "error CODE: MESSAGE" (tool_result_text). Errc::bad_usage for mcp: an MCP
// client's answer is a tools/call result, use `tycli mcp` (stdio) or `tycli serve` (/mcp).
Result<json::Value> tool_answer(Provider provider, const std::string& call_id, const json::Value& result_content);

}  // namespace taskyon::tasks
