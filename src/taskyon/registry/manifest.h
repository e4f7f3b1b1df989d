// Tool definitions (manifests), DESIGN §3. A manifest is a JSON object; its
// revision id is the content address of its RFC 8785 canonical form (R1).
//
// Fields: name (^[a-zA-Z0-9_-]{1,64}$, what model providers accept),
// description (string), parameters (JSON Schema object with "type":"object"),
// execution ("sandboxed-code" | "trusted-native" | "external-service"),
// runtime ("javascript", sandboxed code only), code (JS function expression,
// sandboxed code only, at most kMaxCodeBytes), native (native function id,
// trusted-native only), service (external-service only: {"mcp": {command, tool,
// cwd?, outputSchema?}} for an MCP server over stdio, or {"https": {url}}), capabilities
// (object; a request, never a grant), modules ({SPECIFIER: MODULE ID}: for
// sandboxed code the libraries its code may require() or import(); for the
// trusted-native kPythonNative the pure-Python wheels its programs may
// import; modules/module.h; hashed with the rest, so a changed module is a
// new revision). Unknown fields are refused so that a
// typo can never pass for a different meaning.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"

namespace taskyon::registry {

enum class Execution { sandboxed_code, trusted_native, external_service };

// "sandboxed-code", "trusted-native", "external-service".
std::string_view execution_name(Execution execution);

// Limits of a manifest's fields (docs/limits.md); a refusal names the limit.
inline constexpr std::size_t kMaxCodeBytes = 1u << 20;           // `code`, bytes of UTF-8
inline constexpr std::size_t kMaxDescriptionBytes = 64u << 10;   // `description`, bytes of UTF-8
inline constexpr std::size_t kMaxParametersBytes = 256u << 10;   // `parameters`, bytes of canonical JSON
inline constexpr std::size_t kMaxManifestBytes = 2u << 20;       // the whole manifest, bytes of canonical JSON

struct Manifest {
  std::string name;
  std::string description;
  json::Value parameters;    // a JSON Schema object
  Execution execution = Execution::sandboxed_code;
  std::string runtime;       // sandboxed code: "javascript"
  std::string code;          // sandboxed code
  std::string native;        // trusted native
  json::Value service;       // external service (object), else null
  json::Value capabilities;  // object, or null when absent
  json::Value modules;       // sandboxed code or kPythonNative: {SPECIFIER: MODULE ID} (issue 17), or null when absent
  json::Value definition;    // the whole manifest as given (what is hashed)
};

// Validates a manifest. Errc::invalid_manifest with `where` the JSON pointer of
// the offending field (e.g. "/parameters") and a message naming the rule.
Result<Manifest> parse_manifest(const json::Value& definition);

// The revision id of a manifest: content_id_of(definition) (DESIGN §2).
Result<std::string> revision_id(const Manifest& manifest);

// True when installing the manifest gives code host authority, so it needs
// explicit trust (R6): trusted-native tools, and external services started
// as local commands (MCP over stdio).
bool needs_trust(const Manifest& manifest);

// Why installing such a manifest needs --trust, for people (R6).
std::string trust_required_message(const Manifest& manifest);

// The settings revision of a tool without settings: content id of "{}".
// Per-tool settings objects are content-addressed like manifests.
std::string empty_settings_revision();

// The native id of executePython (= native::python::kPythonId), the one
// trusted-native tool that may name modules: pure-Python wheels (issue 17).
inline constexpr std::string_view kPythonNative = "taskyon.executePython";

// A `modules` key: an npm package name (npm's rules for new packages: lower
// case, URL-safe, at most 214 characters, an optional "@scope/"), which tool
// code passes to require(). At most kMaxModules entries.
inline constexpr std::size_t kMaxModules = 32;
bool is_module_specifier(std::string_view name);

// True if `name` matches ^[a-zA-Z0-9_-]{1,64}$.
bool is_valid_tool_name(std::string_view name);

}  // namespace taskyon::registry
