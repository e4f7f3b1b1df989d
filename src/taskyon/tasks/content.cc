// Shapes of task content, per kind (see task.h and docs/tasks.md).
#include <fmt/format.h>

#include "taskyon/json/json.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/tasks/task.h"

namespace taskyon::tasks {

bool is_provider_call_id(const json::Value& v) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  if (s.empty() || s.size() > 256) return false;
  for (unsigned char ch : s)
    if (ch < 0x21 || ch > 0x7e) return false;
  return true;
}

namespace {

std::unexpected<Error> bad(std::string message, std::string where) {
  return fail(Errc::invalid_task, std::move(message), std::move(where));
}

// Refuses members other than `allowed` in an object.
Result<void> only(const json::Value& object, std::initializer_list<std::string_view> allowed, const std::string& where) {
  for (const auto& [key, _] : object.items()) {
    bool ok = false;
    for (auto a : allowed) ok = ok || key == a;
    if (!ok) return bad(fmt::format("unknown field \"{}\"", key), where + "/" + key);
  }
  return {};
}

Result<void> check_function_call(const json::Value& c) {
  const std::string at = "/content/functionCall";
  if (!c.is_object()) return bad("functionCall must be an object {name, arguments}", at);
  if (auto r = only(c, {"name", "arguments", "callId"}, at); !r) return r;
  if (!c.contains("name") || !c["name"].is_string() || !registry::is_valid_tool_name(c["name"].get<std::string>()))
    return bad("functionCall.name must be a tool name matching ^[a-zA-Z0-9_-]{1,64}$", at + "/name");
  if (!c.contains("arguments") || !c["arguments"].is_object())
    return bad("functionCall.arguments must be an object of named arguments", at + "/arguments");
  if (c.contains("callId") && !is_provider_call_id(c["callId"]))
    return bad("functionCall.callId must be the provider's call id: 1 to 256 printable ASCII characters, no spaces",
               at + "/callId");
  return {};
}

Result<void> check_tool_result(const json::Value& c) {
  const std::string at = "/content/toolResult";
  if (!c.is_object()) return bad("toolResult must be an object", at);
  if (auto r = only(c, {"result", "error", "logs", "runtime"}, at); !r) return r;
  if (c.contains("runtime")) {  // which runtime produced it (docs/tasks.md, "Runtime records")
    const auto& rt = c["runtime"];
    const auto is_string = [&](const char* k) { return rt.contains(k) && rt[k].is_string(); };
    if (!rt.is_object() || !is_string("kind") || !is_string("version") ||
        (rt.contains("isolation") && !rt["isolation"].is_string()))
      return bad("toolResult.runtime must be {kind: string, version: string[, isolation: string]}", at + "/runtime");
    if (auto r = only(rt, {"kind", "version", "isolation"}, at + "/runtime"); !r) return r;
  }
  if (c.contains("result") == c.contains("error")) return bad("toolResult holds exactly one of result and error", at);
  if (c.contains("error")) {
    const auto& e = c["error"];
    if (!e.is_object() || !e.contains("code") || !e["code"].is_string() || !e.contains("message") ||
        !e["message"].is_string())
      return bad("toolResult.error must be {code: string, message: string}", at + "/error");
    if (auto r = only(e, {"code", "message"}, at + "/error"); !r) return r;
  }
  if (!c.contains("logs") || !c["logs"].is_array()) return bad("toolResult.logs must be an array", at + "/logs");
  for (std::size_t i = 0; i < c["logs"].size(); ++i) {
    const auto& l = c["logs"][i];
    if (!l.is_object() || l.size() != 2 || !l.contains("level") || !l["level"].is_string() || !l.contains("text") ||
        !l["text"].is_string())
      return bad("a log entry must be {level: string, text: string}", fmt::format("{}/logs/{}", at, i));
  }
  return {};
}

Result<void> check_tool_definition(const json::Value& c) {
  const std::string at = "/content/toolDefinition";
  if (!c.is_object() || c.size() != 1 || !(c.contains("definition") || c.contains("binding")))
    return bad("toolDefinition holds exactly one of definition (a manifest) and binding ({revision})", at);
  if (c.contains("definition")) {
    if (!c["definition"].is_object()) return bad("toolDefinition.definition must be a manifest object", at + "/definition");
    return {};  // the manifest rules (T7) are the compiler's: they need the registry for bindings
  }
  const auto& b = c["binding"];
  if (!b.is_object()) return bad("toolDefinition.binding must be {\"revision\": \"sha256:…\"}", at + "/binding");
  if (auto r = only(b, {"revision"}, at + "/binding"); !r) return r;
  if (!b.contains("revision") || !b["revision"].is_string())
    return bad("toolDefinition.binding.revision must be a full revision id \"sha256:…\"", at + "/binding/revision");
  return {};
}

}  // namespace

Result<void> check_content(Role role, const json::Value& content) {
  // A stored task is read back with the parser's depth limit: content deeper
  // than that (arguments or a result wrapped in their members) could be
  // stored and hashed but never read again.
  constexpr std::size_t kMaxDepth = json::ParseLimits{}.max_depth;
  if (json::depth(content, kMaxDepth) > kMaxDepth)
    return bad(fmt::format("the content nests deeper than {} levels of arrays and objects, with its members "
                           "(docs/limits.md): the store could not read it back",
                           kMaxDepth),
               "/content");
  auto kind = content_kind(content);
  if (!kind) return std::unexpected(kind.error());
  const auto& body = content[*kind];
  const auto role_must_be = [&](bool ok, std::string_view allowed) -> Result<void> {
    if (ok) return {};
    return bad(fmt::format("a {} task cannot have role \"{}\" (allowed: {})", *kind, role_name(role), allowed), "/role");
  };
  if (*kind == "message") {
    if (auto r = role_must_be(role != Role::tool, "system, user, assistant"); !r) return r;
    if (!body.is_string()) return bad("message must be a string", "/content/message");
    return {};
  }
  if (*kind == "functionCall") {
    if (auto r = role_must_be(role == Role::assistant, "assistant"); !r) return r;
    return check_function_call(body);
  }
  if (*kind == "toolResult") {
    if (auto r = role_must_be(role == Role::tool, "tool"); !r) return r;
    return check_tool_result(body);
  }
  if (auto r = role_must_be(role != Role::tool, "system, user, assistant"); !r) return r;
  return check_tool_definition(body);
}

}  // namespace taskyon::tasks
