// The C ABI of abi.h: parse the input, call the rule, wrap the answer.
// Written for a build without exceptions (wasm/): no nlohmann accessor that
// throws (at(), get<>() on a wrong type) is used on input.
#include "taskyon/abi/abi.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/capability/decision_json.h"
#include "taskyon/capability/policy.h"
#include "taskyon/capability/url.h"
#include "taskyon/json/json.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/registry/schema.h"

namespace {

using taskyon::Errc;
using taskyon::Error;
using taskyon::json::Value;
namespace cap = taskyon::capability;
namespace reg = taskyon::registry;

// Sorted members (nlohmann's std::map), no invalid UTF-8 can stop the dump.
std::string dump(const Value& v) { return v.dump(-1, ' ', false, Value::error_handler_t::replace); }

char* hand_out(const std::string& text, size_t* out_len) {
  char* out = taskyon_alloc(text.size() + 1);
  if (!out) {
    if (out_len) *out_len = 0;
    return nullptr;
  }
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  if (out_len) *out_len = text.size();
  return out;
}

Value error_value(const Error& e) {
  return Value{{"ok", false},
               {"error", {{"code", std::string(taskyon::code_name(e.code))}, {"message", e.message}, {"where", e.where}}}};
}

template <typename Rule>
char* answer(const char* in, size_t in_len, size_t* out_len, Rule rule) {
  const std::string_view text = in ? std::string_view(in, in_len) : std::string_view();
  taskyon::Result<Value> r = [&]() -> taskyon::Result<Value> {
    auto input = taskyon::json::parse(text);
    if (!input) return std::unexpected(input.error());
    return rule(*input);
  }();
  return hand_out(dump(r ? Value{{"ok", true}, {"value", std::move(*r)}} : error_value(r.error())), out_len);
}

std::unexpected<Error> shape(std::string message, std::string where) {
  return taskyon::fail(Errc::bad_usage, std::move(message), std::move(where));
}

taskyon::Result<std::string> string_member(const Value& in, const char* name, const char* fallback = nullptr) {
  if (!in.is_object()) return shape("the input must be a JSON object", "");
  auto it = in.find(name);
  if (it == in.end()) {
    if (fallback) return std::string(fallback);
    return shape(std::string("the input needs \"") + name + "\" (a string)", std::string("/") + name);
  }
  if (!it->is_string()) return shape(std::string("\"") + name + "\" must be a string", std::string("/") + name);
  return it->get_ref<const std::string&>();
}

Value text_or_null(const std::string& s) { return s.empty() ? Value() : Value(s); }

std::string_view host_kind_name(cap::HostKind kind) {
  switch (kind) {
    case cap::HostKind::none: return "none";
    case cap::HostKind::empty: return "empty";
    case cap::HostKind::domain: return "domain";
    case cap::HostKind::ipv4: return "ipv4";
    case cap::HostKind::ipv6: return "ipv6";
  }
  return "none";
}

taskyon::Result<Value> rule_canonicalize(const Value& in) {
  auto text = taskyon::json::canonicalize(in);
  if (!text) return std::unexpected(text.error());
  std::string id = taskyon::json::content_id(*text);
  return Value{{"canonical", std::move(*text)}, {"id", std::move(id)}};
}

taskyon::Result<Value> rule_manifest(const Value& in) {
  auto m = reg::parse_manifest(in);
  if (!m) return std::unexpected(m.error());
  auto id = reg::revision_id(*m);
  if (!id) return std::unexpected(id.error());
  return Value{{"revision", *id},
               {"name", m->name},
               {"execution", std::string(reg::execution_name(m->execution))},
               {"needsTrust", reg::needs_trust(*m)}};
}

taskyon::Result<Value> rule_validate_arguments(const Value& in) {
  if (!in.is_object()) return shape("the input must be a JSON object", "");
  auto args = in.find("arguments");
  if (args == in.end()) return shape("the input needs \"arguments\"", "/arguments");
  Value parameters;
  if (auto def = in.find("manifest"); def != in.end()) {
    auto m = reg::parse_manifest(*def);  // checks the parameters schema too
    if (!m) return std::unexpected(m.error());
    parameters = std::move(m->parameters);
  } else if (auto p = in.find("parameters"); p != in.end()) {
    if (auto ok = reg::check_parameters_schema(*p); !ok) return std::unexpected(ok.error());
    parameters = *p;
  } else {
    return shape("the input needs \"parameters\" (a JSON Schema) or \"manifest\"", "/parameters");
  }
  if (auto ok = reg::validate_arguments(parameters, *args); !ok) return std::unexpected(ok.error());
  return Value{{"valid", true}};
}

taskyon::Result<Value> rule_parse_url(const Value& in) {
  auto text = string_member(in, "url");
  if (!text) return std::unexpected(text.error());
  auto url = cap::parse_url(*text);
  if (!url) return std::unexpected(url.error());
  return Value{{"href", text_or_null(url->href())},
               {"origin", text_or_null(url->origin())},
               {"scheme", url->scheme},
               {"special", url->special()},
               {"host", url->special() ? Value(url->host.serialize()) : Value()},
               {"hostKind", std::string(host_kind_name(url->host.kind))},
               {"hostInput", url->special() ? Value(url->host_input) : Value()},
               {"port", url->port ? Value(*url->port) : Value()},
               {"path", url->special() ? Value(url->path) : Value()},
               {"query", url->query ? Value(*url->query) : Value()},
               {"fragment", url->fragment ? Value(*url->fragment) : Value()},
               {"hasCredentials", url->has_credentials()}};
}

taskyon::Result<Value> rule_decide_fetch(const Value& in) {
  auto url = string_member(in, "url");
  if (!url) return std::unexpected(url.error());
  auto method = string_member(in, "method", "GET");
  if (!method) return std::unexpected(method.error());
  cap::Decision d;
  if (auto list = in.find("resolved"); list != in.end()) {
    if (!list->is_array()) return shape("\"resolved\" must be an array of IP address strings", "/resolved");
    std::vector<cap::IpAddress> answers;
    for (std::size_t i = 0; i < list->size(); ++i) {
      const Value& a = (*list)[i];
      auto ip = a.is_string() ? cap::IpAddress::parse(a.get_ref<const std::string&>()) : std::nullopt;
      if (!ip)
        return shape("\"resolved\" entries must be IPv4 (dotted decimal) or IPv6 address text",
                     "/resolved/" + std::to_string(i));
      answers.push_back(*ip);
    }
    d = cap::decide_url(*url, *method, answers);
  } else {
    d = cap::decide_url_unresolved(*url, *method);
  }
  Value out = cap::decision_json(d);
  out["awaitingResolution"] = d.awaiting_resolution;
  return out;
}

taskyon::Result<Value> rule_info(const Value&) {
#if defined(__wasm__)
  const char* build = "wasm32-wasi";
#else
  const char* build = "native";
#endif
  return Value{{"abi", 1}, {"idna", true}, {"build", build}};
}

}  // namespace

extern "C" {

char* taskyon_alloc(size_t size) { return static_cast<char*>(std::malloc(size ? size : 1)); }
void taskyon_free(char* buffer) { std::free(buffer); }

char* taskyon_canonicalize(const char* in, size_t in_len, size_t* out_len) {
  return answer(in, in_len, out_len, rule_canonicalize);
}
char* taskyon_manifest(const char* in, size_t in_len, size_t* out_len) { return answer(in, in_len, out_len, rule_manifest); }
char* taskyon_validate_arguments(const char* in, size_t in_len, size_t* out_len) {
  return answer(in, in_len, out_len, rule_validate_arguments);
}
char* taskyon_parse_url(const char* in, size_t in_len, size_t* out_len) {
  return answer(in, in_len, out_len, rule_parse_url);
}
char* taskyon_decide_fetch(const char* in, size_t in_len, size_t* out_len) {
  return answer(in, in_len, out_len, rule_decide_fetch);
}
char* taskyon_info(const char* in, size_t in_len, size_t* out_len) { return answer(in, in_len, out_len, rule_info); }

}  // extern "C"
