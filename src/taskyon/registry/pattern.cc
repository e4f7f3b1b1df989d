#include "taskyon/registry/pattern.h"

#include <re2/re2.h>

#include <fmt/format.h>

namespace taskyon::registry {
namespace {

std::unexpected<Error> refuse(std::string_view ecma, std::string_view why) {
  const std::string shown = ecma.size() > 80 ? fmt::format("{}… ({} bytes)", ecma.substr(0, 64), ecma.size())
                                             : std::string(ecma);
  return fail(Errc::invalid_manifest, fmt::format("pattern \"{}\" {}", shown, why));
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// JSON pointer escaping of one reference token (RFC 6901 §3).
std::string token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

}  // namespace

Result<std::string> to_re2_syntax(std::string_view p) {
  if (p.size() > kMaxPatternBytes)
    return refuse(p, fmt::format("has {} bytes; a pattern is at most {} bytes", p.size(), kMaxPatternBytes));
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  std::size_t depth = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      if (i + 1 >= p.size()) return refuse(p, "ends with a lone backslash");
      const char e = p[++i];
      if (e >= '1' && e <= '9')
        return refuse(p, in_class ? fmt::format("uses an octal escape (\\{}), which is not supported", e)
                                  : fmt::format("uses a backreference (\\{}); RE2 matches in linear time and has no "
                                                "backreferences",
                                                e));
      if (e == 'k' && i + 1 < p.size() && p[i + 1] == '<')
        return refuse(p, "uses a named backreference (\\k<…>); RE2 matches in linear time and has no backreferences");
      if (e == '0') {
        if (i + 1 < p.size() && is_digit(p[i + 1])) return refuse(p, "uses an octal escape (\\0…), which is not supported");
        out += "\\x00";
      } else if (e == 'u') {
        if (i + 1 < p.size() && p[i + 1] == '{') {
          const auto close = p.find('}', i + 2);
          if (close == std::string_view::npos || close == i + 2 || close - i - 2 > 6)
            return refuse(p, "has a malformed \\u{…} escape");
          for (std::size_t k = i + 2; k < close; ++k)
            if (!is_hex(p[k])) return refuse(p, "has a malformed \\u{…} escape");
          out += fmt::format("\\x{{{}}}", p.substr(i + 2, close - i - 2));
          i = close;
        } else {
          if (i + 4 >= p.size() || !is_hex(p[i + 1]) || !is_hex(p[i + 2]) || !is_hex(p[i + 3]) || !is_hex(p[i + 4]))
            return refuse(p, "has a malformed \\uXXXX escape");
          out += fmt::format("\\x{{{}}}", p.substr(i + 1, 4));
          i += 4;
        }
      } else if (e == 'c') {
        if (i + 1 >= p.size() || !is_alpha(p[i + 1])) return refuse(p, "has a malformed \\cX control escape");
        out += fmt::format("\\x{:02x}", static_cast<unsigned>(p[i + 1]) % 32);
        ++i;
      } else if (e == 'b' && in_class) {
        out += "\\x08";  // [\b] is a backspace
      } else if (e == 'x') {
        if (i + 2 >= p.size() || !is_hex(p[i + 1]) || !is_hex(p[i + 2])) return refuse(p, "has a malformed \\xHH escape");
        out += "\\x";
        out += p.substr(i + 1, 2);
        i += 2;
      } else if (e == 'p' || e == 'P') {
        out += '\\';
        out += e;  // \p{Greek}: RE2 knows scripts and general categories
      } else if (e == 's' || (e == 'S' && !in_class)) {
        // ECMA-262's white space and line terminators (RE2's \s is ASCII only).
        constexpr std::string_view kSpace =
            "\\t\\n\\v\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}";
        if (in_class) out += kSpace;
        else out += fmt::format("[{}{}]", e == 'S' ? "^" : "", kSpace);
      } else if (std::string_view("dDwWStnrfvbB").find(e) != std::string_view::npos) {
        out += '\\';
        out += e;
      } else if (is_alpha(e)) {
        out += e;  // identity escape: \a is "a" in ECMA-262 (RE2 would read \A, \z, \Q as operators)
      } else if (static_cast<unsigned char>(e) >= 0x80) {
        out += e;  // an escaped non-ASCII character is the character itself (its UTF-8 bytes follow as-is)
      } else {
        out += '\\';
        out += e;  // escaped punctuation is literal in both
      }
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      if (c == '[') {
        out += "\\[";  // ECMA has no [:alpha:] classes; RE2 would read one
        continue;
      }
      out += c;
      continue;
    }
    switch (c) {
      case '[':
        if (p.substr(i, 3) == "[^]") {
          out += "[\\x{0}-\\x{10FFFF}]";
          i += 2;
        } else if (p.substr(i, 2) == "[]") {
          out += "[^\\x{0}-\\x{10FFFF}]";
          i += 1;
        } else {
          in_class = true;
          out += '[';
          if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
        }
        break;
      case '(':
        if (++depth > kMaxPatternNesting)
          return refuse(p, fmt::format("nests groups deeper than {}", kMaxPatternNesting));
        if (i + 1 < p.size() && p[i + 1] == '?') {
          const auto rest = p.substr(i + 2);
          if (rest.starts_with(":")) {
            out += "(?:";
            i += 2;
          } else if (rest.starts_with("=") || rest.starts_with("!")) {
            return refuse(p, fmt::format("uses a lookahead (?{}…); RE2 matches in linear time and has no lookaround",
                                         rest.front()));
          } else if (rest.starts_with("<=") || rest.starts_with("<!")) {
            return refuse(p, fmt::format("uses a lookbehind (?{}…); RE2 matches in linear time and has no lookaround",
                                         rest.substr(0, 2)));
          } else if (rest.starts_with("<")) {
            out += "(?P<";
            i += 2;
          } else {
            return refuse(p, "uses an inline flag group (?…), which ECMA-262 does not have");
          }
        } else {
          out += '(';
        }
        break;
      case ')':
        if (depth > 0) --depth;
        out += ')';
        break;
      case '.':
        out += "[^\\n\\r\\x{2028}\\x{2029}]";  // ECMA-262's `.` excludes every line terminator
        break;
      default:
        out += c;
    }
  }
  return out;
}

Result<Pattern> Pattern::compile(std::string_view ecma) {
  auto syntax = to_re2_syntax(ecma);
  if (!syntax) return std::unexpected(syntax.error());
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(kMaxPatternProgramBytes);
  options.set_encoding(RE2::Options::EncodingUTF8);
  auto re = std::make_shared<const RE2>(*syntax, options);
  if (!re->ok()) {
    if (re->error_code() == RE2::ErrorPatternTooLarge)
      return refuse(ecma, fmt::format("compiles to more than RE2's {} bytes", kMaxPatternProgramBytes));
    return refuse(ecma, fmt::format("is not a regular expression RE2 can match: {}", re->error()));
  }
  Pattern out;
  out.re_ = std::move(re);
  return out;
}

bool Pattern::search(std::string_view subject) const {
  return RE2::PartialMatch(re2::StringPiece(subject.data(), subject.size()), *re_);
}

Result<void> check_schema_patterns(const json::Value& schema, const std::string& pointer) {
  if (schema.is_array()) {
    for (std::size_t i = 0; i < schema.size(); ++i)
      if (auto r = check_schema_patterns(schema[i], fmt::format("{}/{}", pointer, i)); !r) return r;
    return {};
  }
  if (!schema.is_object()) return {};
  for (const auto& [key, value] : schema.items()) {
    const std::string at = pointer + "/" + token(key);
    if (key == "enum" || key == "const" || key == "default" || key == "examples") continue;  // data, not schemas
    if (key == "pattern" && value.is_string()) {
      if (auto p = Pattern::compile(value.get_ref<const std::string&>()); !p)
        return fail(p.error().code, p.error().message, at);
      continue;
    }
    // JSON Schema draft-07 §6.2.1: "multipleOf" MUST be a number strictly
    // greater than 0 (valijson divides by it unchecked).
    if (key == "multipleOf" && (!value.is_number() || !(value.get<double>() > 0)))
      return fail(Errc::invalid_manifest, "\"multipleOf\" must be a number greater than 0 (JSON Schema draft-07 6.2.1)",
                  at);
    if ((key == "patternProperties" || key == "properties" || key == "definitions" || key == "dependencies") &&
        value.is_object()) {
      for (const auto& [name, sub] : value.items()) {
        const std::string sub_at = at + "/" + token(name);
        if (key == "patternProperties")
          if (auto p = Pattern::compile(name); !p) return fail(p.error().code, p.error().message, sub_at);
        if (auto r = check_schema_patterns(sub, sub_at); !r) return r;
      }
      continue;
    }
    if (auto r = check_schema_patterns(value, at); !r) return r;
  }
  return {};
}

}  // namespace taskyon::registry
