#include "taskyon/registry/manifest.h"

#include <array>
#include <fmt/format.h>

#include "taskyon/registry/schema.h"

namespace taskyon::registry {
namespace {

constexpr std::array<std::string_view, 10> kKnownFields = {
    "name", "description", "parameters", "execution", "runtime",
    "code", "native",      "service",    "capabilities", "modules"};

// modules: {SPECIFIER: MODULE ID, …}, sandboxed code and kPythonNative only (issue 17).
Result<void> check_modules(const json::Value& m) {
  if (!m.is_object() || m.empty())
    return fail(Errc::invalid_manifest, "\"modules\" must be an object {\"SPECIFIER\": \"sha256:…\"} with at least one entry",
                "/modules");
  if (m.size() > kMaxModules)
    return fail(Errc::invalid_manifest, fmt::format("\"modules\" names {} modules; the limit is {}", m.size(), kMaxModules),
                "/modules");
  for (const auto& [specifier, id] : m.items()) {
    if (!is_module_specifier(specifier))
      return fail(Errc::invalid_manifest,
                  fmt::format("\"{}\" is not an npm package name (lower case, URL-safe, at most 214 characters, an "
                              "optional @scope/)", specifier),
                  "/modules/" + specifier);
    if (!id.is_string() || !json::is_content_id(id.get<std::string>()))
      return fail(Errc::invalid_manifest, "a module is named by its id, \"sha256:\" and 64 hex digits (tycli module add)",
                  "/modules/" + specifier);
  }
  return {};
}

Result<std::string> required_string(const json::Value& d, std::string_view field) {
  const std::string key(field);
  const std::string where = "/" + key;
  if (!d.contains(key)) return fail(Errc::invalid_manifest, fmt::format("missing required field \"{}\"", field), where);
  if (!d[key].is_string()) return fail(Errc::invalid_manifest, fmt::format("\"{}\" must be a string", field), where);
  return d[key].get<std::string>();
}

Result<void> forbid(const json::Value& d, std::string_view field, std::string_view execution) {
  if (d.contains(std::string(field)))
    return fail(Errc::invalid_manifest,
                fmt::format("\"{}\" is not allowed for execution \"{}\"", field, execution),
                "/" + std::string(field));
  return {};
}

// service: exactly one of
//   {"mcp": {"command": [PROGRAM, ARG…], "tool": NAME, "cwd"?: PATH, "outputSchema"?: SCHEMA}}
//   {"https": {"url": URL}}
Result<void> check_service(const json::Value& s) {
  const auto bad = [](std::string m, std::string where) { return fail(Errc::invalid_manifest, std::move(m), std::move(where)); };
  if (!s.is_object() || s.size() != 1 || !(s.contains("mcp") || s.contains("https")))
    return bad("\"service\" must be {\"mcp\": {command, tool, cwd?, outputSchema?}} or {\"https\": {url}}", "/service");
  if (s.contains("https")) {
    const auto& h = s["https"];
    if (!h.is_object() || h.size() != 1 || !h.contains("url") || !h["url"].is_string())
      return bad("\"service.https\" must be {\"url\": \"https://…\"}", "/service/https");
    return {};
  }
  const auto& m = s["mcp"];
  if (!m.is_object()) return bad("\"service.mcp\" must be an object", "/service/mcp");
  for (const auto& [key, _] : m.items())
    if (key != "command" && key != "tool" && key != "cwd" && key != "outputSchema")
      return bad(fmt::format("unknown field \"{}\"", key), "/service/mcp/" + key);
  if (!m.contains("command") || !m["command"].is_array() || m["command"].empty())
    return bad("\"command\" must be a non-empty array: the program and its arguments", "/service/mcp/command");
  for (const auto& part : m["command"])
    if (!part.is_string() || part.get<std::string>().empty() || part.get<std::string>().find('\0') != std::string::npos)
      return bad("every part of \"command\" must be a non-empty string", "/service/mcp/command");
  if (!m.contains("tool") || !m["tool"].is_string() || m["tool"].get<std::string>().empty())
    return bad("\"tool\" must name the server's tool", "/service/mcp/tool");
  if (m.contains("cwd") && (!m["cwd"].is_string() || !m["cwd"].get<std::string>().starts_with("/")))
    return bad("\"cwd\" must be an absolute path", "/service/mcp/cwd");
  if (m.contains("outputSchema") && !m["outputSchema"].is_object())
    return bad("\"outputSchema\" must be a JSON Schema object", "/service/mcp/outputSchema");
  return {};
}

Result<Execution> parse_execution(const json::Value& d) {
  auto s = required_string(d, "execution");
  if (!s) return std::unexpected(s.error());
  if (*s == "sandboxed-code") return Execution::sandboxed_code;
  if (*s == "trusted-native") return Execution::trusted_native;
  if (*s == "external-service") return Execution::external_service;
  return fail(Errc::invalid_manifest,
              fmt::format("unknown execution \"{}\" (expected \"sandboxed-code\", \"trusted-native\" or "
                          "\"external-service\")", *s),
              "/execution");
}

Result<void> parse_class_fields(const json::Value& d, Manifest& m) {
  const auto exec = execution_name(m.execution);
  switch (m.execution) {
    case Execution::sandboxed_code: {
      auto runtime = required_string(d, "runtime");
      if (!runtime) return std::unexpected(runtime.error());
      if (*runtime != "javascript")
        return fail(Errc::invalid_manifest,
                    fmt::format("unknown runtime \"{}\" (sandboxed code runs \"javascript\")", *runtime), "/runtime");
      auto code = required_string(d, "code");
      if (!code) return std::unexpected(code.error());
      if (code->find_first_not_of(" \t\r\n") == std::string::npos)
        return fail(Errc::invalid_manifest, "\"code\" is empty (expected a JavaScript function expression)", "/code");
      if (code->size() > kMaxCodeBytes)
        return fail(Errc::invalid_manifest,
                    fmt::format("\"code\" is {} bytes; the limit is {} bytes (docs/limits.md)", code->size(),
                                kMaxCodeBytes),
                    "/code");
      m.runtime = *runtime;
      m.code = *code;
      if (d.contains("modules")) {
        if (auto r = check_modules(d["modules"]); !r) return r;
        m.modules = d["modules"];
      }
      for (auto f : {"native", "service"})
        if (auto r = forbid(d, f, exec); !r) return r;
      return {};
    }
    case Execution::trusted_native: {
      auto native = required_string(d, "native");
      if (!native) return std::unexpected(native.error());
      if (native->empty()) return fail(Errc::invalid_manifest, "\"native\" is empty (expected a native function id)", "/native");
      m.native = *native;
      for (auto f : {"runtime", "code", "service"})
        if (auto r = forbid(d, f, exec); !r) return r;
      if (d.contains("modules")) {
        if (m.native != kPythonNative)
          return fail(Errc::invalid_manifest,
                      fmt::format("\"modules\" is allowed for sandboxed code and for {} (wheels), not for the native "
                                  "\"{}\"", kPythonNative, m.native),
                      "/modules");
        if (auto r = check_modules(d["modules"]); !r) return r;
        m.modules = d["modules"];
      }
      return {};
    }
    case Execution::external_service: {
      if (!d.contains("service"))
        return fail(Errc::invalid_manifest, "missing required field \"service\" for execution \"external-service\"", "/service");
      if (auto r = check_service(d["service"]); !r) return r;
      m.service = d["service"];
      for (auto f : {"runtime", "code", "native", "modules"})
        if (auto r = forbid(d, f, exec); !r) return r;
      return {};
    }
  }
  return fail(Errc::internal, "unhandled execution class");
}

}  // namespace

bool is_module_specifier(std::string_view name) {
  if (name.empty() || name.size() > 214) return false;
  auto part_ok = [](std::string_view p) {
    if (p.empty() || p.front() == '.' || p.front() == '_') return false;
    return p.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-._~") == std::string_view::npos;
  };
  if (name.front() == '@') {
    const auto slash = name.find('/');
    if (slash == std::string_view::npos) return false;
    return part_ok(name.substr(1, slash - 1)) && part_ok(name.substr(slash + 1));
  }
  return part_ok(name);
}

std::string_view execution_name(Execution execution) {
  switch (execution) {
    case Execution::sandboxed_code: return "sandboxed-code";
    case Execution::trusted_native: return "trusted-native";
    case Execution::external_service: return "external-service";
  }
  return "sandboxed-code";
}

bool is_valid_tool_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<Manifest> parse_manifest(const json::Value& d) {
  if (!d.is_object()) return fail(Errc::invalid_manifest, "a tool definition must be a JSON object", "");
  for (const auto& [key, _] : d.items()) {
    bool known = false;
    for (auto k : kKnownFields) known = known || key == k;
    if (!known) return fail(Errc::invalid_manifest, fmt::format("unknown field \"{}\"", key), "/" + key);
  }
  Manifest m;
  auto name = required_string(d, "name");
  if (!name) return std::unexpected(name.error());
  if (!is_valid_tool_name(*name))
    return fail(Errc::invalid_manifest,
                fmt::format("name \"{}\" must match ^[a-zA-Z0-9_-]{{1,64}}$", *name), "/name");
  m.name = *name;

  auto description = required_string(d, "description");
  if (!description) return std::unexpected(description.error());
  if (description->size() > kMaxDescriptionBytes)
    return fail(Errc::invalid_manifest,
                fmt::format("\"description\" is {} bytes; the limit is {} bytes (docs/limits.md)", description->size(),
                            kMaxDescriptionBytes),
                "/description");
  m.description = *description;

  if (!d.contains("parameters"))
    return fail(Errc::invalid_manifest, "missing required field \"parameters\" (a JSON Schema object for the arguments)",
                "/parameters");
  // Bounded before valijson reads it (its parser recurses and copies).
  if (auto size = json::canonical_size(d["parameters"]); size && *size > kMaxParametersBytes)
    return fail(Errc::invalid_manifest,
                fmt::format("\"parameters\" is {} bytes of canonical JSON; the limit is {} bytes (docs/limits.md)",
                            *size, kMaxParametersBytes),
                "/parameters");
  if (auto r = check_parameters_schema(d["parameters"]); !r) return std::unexpected(r.error());
  m.parameters = d["parameters"];

  auto execution = parse_execution(d);
  if (!execution) return std::unexpected(execution.error());
  m.execution = *execution;
  if (auto r = parse_class_fields(d, m); !r) return std::unexpected(r.error());

  if (d.contains("capabilities")) {
    if (!d["capabilities"].is_object())
      return fail(Errc::invalid_manifest, "\"capabilities\" must be an object", "/capabilities");
    m.capabilities = d["capabilities"];
  }
  if (auto whole = json::canonical_size(d); whole && *whole > kMaxManifestBytes)
    return fail(Errc::invalid_manifest,
                fmt::format("the tool definition is {} bytes of canonical JSON; the limit is {} bytes (docs/limits.md)",
                            *whole, kMaxManifestBytes),
                "");
  m.definition = d;
  return m;
}

bool needs_trust(const Manifest& manifest) {
  return manifest.execution == Execution::trusted_native ||
         (manifest.execution == Execution::external_service && manifest.service.contains("mcp"));
}

std::string trust_required_message(const Manifest& manifest) {
  return fmt::format(
      "R6: \"{}\" would run with tycli's own authority ({}), outside any sandbox; review it as application code, "
      "then install it with --trust to record that you did",
      manifest.name,
      manifest.execution == Execution::trusted_native ? "native host code " + manifest.native
                                                      : "a local command started as an MCP server");
}

std::string empty_settings_revision() { return json::content_id("{}"); }

Result<std::string> revision_id(const Manifest& manifest) { return json::content_id_of(manifest.definition); }

}  // namespace taskyon::registry
