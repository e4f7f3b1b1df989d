// The native functions of this host. Each is small enough to review in full:
// that is the bar for code that runs with host authority.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "taskyon/native/native.h"
#include "taskyon/native/python.h"

namespace taskyon::native {
namespace {

using json::Value;

Value object_schema(Value properties, Value required) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)},
          {"additionalProperties", false}};
}

void sort_by_id(std::vector<NativeFunction>& fns) {
  std::sort(fns.begin(), fns.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
}

// The natives every machine has (no detection needed).
const std::vector<NativeFunction>& always() {
  static const std::vector<NativeFunction> fns = [] {
    std::vector<NativeFunction> v;
    v.push_back({"taskyon.sha256", "SHA-256 of a UTF-8 text, as 64 lower-case hex digits.",
                 object_schema({{"text", {{"type", "string"}}}}, {"text"}),
                 [](const Value& args, const Context&) -> Result<Value> {
                   return json::sha256_hex(args.at("text").get<std::string>());
                 }});
    v.push_back({"taskyon.canonical_json",
                 "The RFC 8785 canonical form of a JSON value and its content id (sha256:…), as Taskyon hashes "
                 "tools and tasks.",
                 object_schema({{"value", Value::object()}}, {"value"}),
                 [](const Value& args, const Context&) -> Result<Value> {
                   auto canonical = json::canonicalize(args.at("value"));
                   if (!canonical) return std::unexpected(canonical.error());
                   return Value{{"canonical", *canonical}, {"id", json::content_id(*canonical)}};
                 }});
    sort_by_id(v);
    return v;
  }();
  return fns;
}

}  // namespace

std::string_view isolation_name(PythonIsolation isolation) {
  return isolation == PythonIsolation::strict ? "strict" : "host";
}

Result<void> Session::approve(const std::string& id, std::string_view question, std::string_view how_to_approve) {
  std::lock_guard lock(mu_);
  if (settings_.preapproved.contains(id)) return {};
  if (auto it = answers_.find(id); it != answers_.end()) {
    if (it->second) return {};
    return fail(Errc::bad_usage, fmt::format("P2: you declined {} for this session", id), id);
  }
  if (!settings_.ask) {
    return fail(Errc::bad_usage,
                fmt::format("P2: {} needs your approval before its first run in a session: {}", id, how_to_approve),
                id);
  }
  const bool yes = settings_.ask(question);
  answers_[id] = yes;
  if (!yes) return fail(Errc::bad_usage, fmt::format("P2: you declined {} for this session", id), id);
  return {};
}

void Session::warn_once(const std::string& key, std::string_view line) {
  Warn warn;
  {
    std::lock_guard lock(mu_);
    if (!settings_.warn || !warned_.insert(key).second) return;
    warn = settings_.warn;
  }
  warn(line);
}

Session::Ask ask_on_terminal() {
  if (::isatty(STDIN_FILENO) != 1 || ::isatty(STDERR_FILENO) != 1) return {};
  return [](std::string_view question) {
    std::cerr << question << " " << std::flush;
    std::string line;
    if (!std::getline(std::cin, line)) return false;
    std::string answer;
    for (char c : line)
      if (!std::isspace(static_cast<unsigned char>(c))) answer += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return answer == "y" || answer == "yes";
  };
}

const std::vector<NativeFunction>& all() {
  static const std::vector<NativeFunction> offered = [] {
    std::vector<NativeFunction> v = always();
    if (python::interpreter()) v.push_back(python::function());  // P1
    sort_by_id(v);
    return v;
  }();
  return offered;
}

const NativeFunction* find(std::string_view id) {
  // Only the Python id needs detection (running python3 once).
  const auto& fns = id == python::kPythonId ? all() : always();
  for (const auto& f : fns)
    if (f.id == id) return &f;
  return nullptr;
}

std::optional<std::string> unavailable(std::string_view id) {
  if (id != python::kPythonId) return std::nullopt;
  const auto& found = python::interpreter();
  if (found) return std::nullopt;
  return fmt::format("P1: {} is not offered on this machine: {}. Install Python 3 (Debian: apt install python3) "
                     "and make sure `python3` is on PATH",
                     id, found.error().message);
}

Value manifest_for(const NativeFunction& function, std::string_view name) {
  return {{"name", name},
          {"description", function.description},
          {"parameters", function.parameters},
          {"execution", "trusted-native"},
          {"native", function.id}};
}

}  // namespace taskyon::native
