#include "taskyon/registry/schema_words.h"

#include <charconv>
#include <string_view>

#include <fmt/format.h>

namespace taskyon::registry::words {
namespace {

std::string type_name(const json::Value& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

std::string article(const std::string& type) {
  if (type == "null") return "null";
  return (type == "integer" || type == "array" || type == "object" ? "an " : "a ") + type;
}

// "a number or a string" from a schema's "type" (a name or a list of names).
std::string expected_types(const json::Value& type) {
  if (type.is_string()) return article(type.get<std::string>());
  std::string out;
  if (!type.is_array()) return out;
  for (std::size_t i = 0; i < type.size(); ++i) {
    if (!type[i].is_string()) return {};
    out += (i == 0 ? "" : i + 1 == type.size() ? " or " : ", ") + article(type[i].get<std::string>());
  }
  return out;
}

// The name after `marker` up to the last single quote of `s` (valijson ends
// its messages with 'NAME'.), so a name holding a quote stays whole.
std::string quoted(const std::string& s, std::string_view marker) {
  const auto a = s.find(marker);
  const auto b = s.rfind('\'');
  if (a == std::string::npos || b == std::string::npos || b < a + marker.size()) return {};
  return s.substr(a + marker.size(), b - a - marker.size());
}

std::string shown(const json::Value& v) {
  std::string text = v.dump(-1, ' ', false, json::Value::error_handler_t::replace);
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

// Unicode code points of UTF-8 text: what JSON Schema's minLength/maxLength
// count (draft-07 validation §6.3.1), not bytes.
std::size_t code_points(const std::string& text) {
  std::size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

// What valijson's size messages counted, for "got …": characters, items or
// properties of `value`; empty when `value` is not of that kind.
std::string size_of(const json::Value* value, std::string_view unit) {
  if (value == nullptr) return {};
  if (unit == "characters" && value->is_string()) return fmt::format(", got {}", code_points(value->get<std::string>()));
  if (unit == "items" && value->is_array()) return fmt::format(", got {}", value->size());
  if (unit == "properties" && value->is_object()) return fmt::format(", got {}", value->size());
  return {};
}

}  // namespace

std::vector<std::string> path_parts(const std::vector<std::string>& context) {
  std::vector<std::string> parts;
  for (const auto& part : context) {
    if (part == "<root>") continue;
    std::string p = part;
    if (p.size() >= 2 && p.front() == '[' && p.back() == ']') p = p.substr(1, p.size() - 2);
    if (p.size() >= 2 && p.front() == '"' && p.back() == '"') p = p.substr(1, p.size() - 2);
    parts.push_back(std::move(p));
  }
  return parts;
}

const json::Value* value_at(const json::Value& root, const std::vector<std::string>& parts) {
  const json::Value* at = &root;
  for (const auto& part : parts) {
    if (at->is_object()) {
      auto it = at->find(part);
      if (it == at->end()) return nullptr;
      at = &*it;
    } else if (at->is_array()) {
      std::size_t index = 0;
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
      if (ec != std::errc{} || end != part.data() + part.size() || index >= at->size()) return nullptr;
      at = &(*at)[index];
    } else {
      return nullptr;
    }
  }
  return at;
}

const json::Value* schema_at(const json::Value& schema, const std::vector<std::string>& parts) {
  const json::Value* at = &schema;
  for (const auto& part : parts) {
    if (!at->is_object()) return nullptr;
    if (auto props = at->find("properties"); props != at->end() && props->is_object() && props->contains(part)) {
      at = &(*props)[part];
    } else if (auto items = at->find("items"); items != at->end() && items->is_object()) {
      at = &*items;
    } else if (auto more = at->find("additionalProperties"); more != at->end() && more->is_object()) {
      at = &*more;
    } else {
      return nullptr;
    }
  }
  return at->is_object() ? at : nullptr;
}

std::string plain(const std::string& d, const json::Value* value, const json::Value* schema) {
  const auto keyword = [&](const char* name) -> const json::Value* {
    if (schema == nullptr) return nullptr;
    auto it = schema->find(name);
    return it == schema->end() ? nullptr : &*it;
  };
  if (d.starts_with("Value type not permitted by 'type' constraint")) {
    const json::Value* type = keyword("type");
    const std::string want = type ? expected_types(*type) : std::string{};
    const std::string got = value ? type_name(*value) : std::string{};
    if (!want.empty() && !got.empty()) return fmt::format("expected {}, got {}", want, got);
    if (!got.empty()) return fmt::format("{} is not a type allowed here", got);
    return "a value of a type not allowed here";
  }
  if (d.starts_with("Missing required property"))
    return fmt::format("the required property \"{}\" is missing", quoted(d, "property '"));
  if (d.starts_with("Object contains a property that could not be validated"))
    return fmt::format("\"{}\" is not a parameter of this tool (no additional properties are allowed)",
                       quoted(d, "constraints: '"));
  if (d.starts_with("Failed to match against any enum values")) {
    if (const json::Value* options = keyword("enum"); options && options->is_array())
      return fmt::format("{} is not one of the allowed values {}", value ? shown(*value) : "the value", shown(*options));
    return "not one of the allowed values";
  }
  if (d.starts_with("Failed to match expected value set by 'const' constraint")) {
    if (const json::Value* c = keyword("const")) return fmt::format("must be exactly {}", shown(*c));
    return "not the one allowed value";
  }
  if (d.starts_with("Failed to match regex specified by 'pattern' constraint")) {
    if (const json::Value* p = keyword("pattern"); p && p->is_string())
      return fmt::format("does not match the pattern {}", shown(*p));
    return "does not match the required pattern";
  }
  // Bounds (draft-07 validation §6.2, §6.3, §6.4, §6.5): the schema's own
  // number, not valijson's std::to_string ("14.000000"), and what came.
  const auto bound = [&](std::initializer_list<const char*> names) -> std::string {
    for (const char* name : names)
      if (const json::Value* k = keyword(name); k && k->is_number()) return shown(*k);
    return {};
  };
  const std::string got = value && value->is_number() ? ", got " + shown(*value) : std::string{};
  struct Bound {
    std::string_view prefix;
    const char* words;
    std::initializer_list<const char*> keywords;
  };
  for (const Bound& b : {Bound{"Expected number less than or equal to", "must be at most {}", {"maximum"}},
                         Bound{"Expected number less than", "must be less than {}", {"exclusiveMaximum", "maximum"}},
                         Bound{"Expected number greater than or equal to", "must be at least {}", {"minimum"}},
                         Bound{"Expected number greater than", "must be greater than {}", {"exclusiveMinimum", "minimum"}},
                         Bound{"Value should be a multiple of", "must be a multiple of {}", {"multipleOf"}}}) {
    if (!d.starts_with(b.prefix)) continue;
    const std::string n = bound(b.keywords);
    if (!n.empty()) return fmt::format(fmt::runtime(b.words), n) + got;
    break;
  }
  struct Size {
    std::string_view prefix;
    const char* words;  // "{}" is the bound with its noun: "1 item", "2 items"
    const char* keyword;
    std::string_view unit;  // the plural noun; the singular drops its last letter(s)
  };
  for (const Size& z : {Size{"String should be no fewer than", "must be at least {} long", "minLength", "characters"},
                        Size{"String should be no more than", "must be at most {} long", "maxLength", "characters"},
                        Size{"Array should contain no fewer than", "must have at least {}", "minItems", "items"},
                        Size{"Array should contain no more than", "must have at most {}", "maxItems", "items"},
                        Size{"Object should have no fewer than", "must have at least {}", "minProperties", "properties"},
                        Size{"Object should have no more than", "must have at most {}", "maxProperties", "properties"}}) {
    if (!d.starts_with(z.prefix)) continue;
    const std::string n = bound({z.keyword});
    if (n.empty()) break;
    const std::string noun = n != "1"                ? std::string(z.unit)
                             : z.unit == "properties" ? std::string("property")
                                                      : std::string(z.unit.substr(0, z.unit.size() - 1));
    return fmt::format(fmt::runtime(z.words), n + " " + noun) + size_of(value, z.unit);
  }
  return d;
}

}  // namespace taskyon::registry::words
