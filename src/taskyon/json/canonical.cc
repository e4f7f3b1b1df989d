// RFC 8785 (JCS) serialization of a Value.
//
// Iterative (an explicit stack, no recursion), so a deeply nested value built
// in code cannot overflow the call stack. Every string and member name is
// checked to be UTF-8 (RFC 3629) on the way: nlohmann keeps whatever bytes a
// program put in a std::string.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/json/json.h"

namespace taskyon::json {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// The code point of the UTF-8 sequence at s[i], advancing i past it, or
// nullopt if the bytes there are not well-formed UTF-8 (RFC 3629 §4: no
// overlong forms, no surrogates U+D800..U+DFFF, nothing above U+10FFFF).
std::optional<char32_t> next_code_point(std::string_view s, std::size_t& i) {
  const auto byte = [&](std::size_t at) { return static_cast<unsigned char>(s[at]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) {
    ++i;
    return lead;
  }
  std::size_t length = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, cp = lead & 0x1F, min = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, cp = lead & 0x0F, min = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return std::nullopt;
  }
  if (s.size() - i < length) return std::nullopt;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
  i += length;
  return cp;
}

// Member names compare as UTF-16 code unit sequences (RFC 8785 §3.2.3).
std::optional<std::u16string> to_utf16(std::string_view s) {
  std::u16string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto cp = next_code_point(s, i);
    if (!cp) return std::nullopt;
    if (*cp < 0x10000) {
      out.push_back(static_cast<char16_t>(*cp));
    } else {
      out.push_back(static_cast<char16_t>(0xD800 + ((*cp - 0x10000) >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + ((*cp - 0x10000) & 0x3FF)));
    }
  }
  return out;
}

// A JSON string as JSON.stringify writes it (RFC 8785 §3.2.2.2): the two-letter
// escapes \" \\ \b \f \n \r \t, \u00xx in lower-case hex for the other
// controls below U+0020, every other character (DEL, U+2028, non-ASCII) as
// its UTF-8 bytes. False if `s` is not UTF-8.
bool write_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t start = i;
      if (!next_code_point(s, i)) return false;
      out.append(s, start, i - start);
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return true;
}

// True if writing the integer with this magnitude as a double (RFC 8785
// §3.2.2.3) keeps it: the double is the integer exactly, or its RFC 8785 form
// is the integer's own decimal text (what parse() gives for canonical text
// such as 1152921504606847000).
bool integer_survives(std::uint64_t magnitude) {
  if (magnitude <= (std::uint64_t{1} << 53)) return true;
  const double d = static_cast<double>(magnitude);
  if (d < 18446744073709551616.0 && static_cast<std::uint64_t>(d) == magnitude) return true;
  const auto text = format_number(d);
  return text && *text == std::to_string(magnitude);
}

// RFC 6901 reference token; bytes that are not UTF-8 (only possible in the
// offending name itself) are shown as \xNN so that the pointer stays text.
void append_pointer_token(std::string& pointer, std::string_view token) {
  pointer.push_back('/');
  for (std::size_t i = 0; i < token.size();) {
    const std::size_t start = i;
    if (!next_code_point(token, i)) {
      const unsigned char c = static_cast<unsigned char>(token[i++]);
      pointer += "\\x";
      pointer.push_back(kHex[c >> 4]);
      pointer.push_back(kHex[c & 0xF]);
    } else if (token[start] == '~') {
      pointer += "~0";
    } else if (token[start] == '/') {
      pointer += "~1";
    } else {
      pointer.append(token, start, i - start);
    }
  }
}

struct Member {
  std::u16string sort_key;
  const std::string* name;
  const Value* value;
};

// An open array or object; `next` counts the elements already started.
struct Frame {
  const Value* container;
  std::vector<Member> members;  // objects only, in RFC 8785 §3.2.3 order
  std::size_t next = 0;
};

class Writer {
 public:
  Result<std::string> run(const Value& root) {
    if (auto failed = start(root)) return std::unexpected(std::move(*failed));
    while (!stack_.empty()) {
      Frame& top = stack_.back();
      const bool object = top.container->is_object();
      const std::size_t size = object ? top.members.size() : top.container->size();
      if (top.next == size) {
        out_.push_back(object ? '}' : ']');
        stack_.pop_back();
        continue;
      }
      if (top.next > 0) out_.push_back(',');
      const Value* child = nullptr;
      if (object) {
        const Member& m = top.members[top.next];
        write_string(out_, *m.name);  // checked when the frame was opened
        out_.push_back(':');
        child = m.value;
      } else {
        child = &(*top.container)[top.next];
      }
      ++top.next;
      if (auto failed = start(*child)) return std::unexpected(std::move(*failed));
    }
    return std::move(out_);
  }

 private:
  // Writes a scalar, or opens a container and pushes its frame.
  std::optional<Error> start(const Value& v) {
    switch (v.type()) {
      case Value::value_t::null: out_ += "null"; return std::nullopt;
      case Value::value_t::boolean: out_ += v.get<bool>() ? "true" : "false"; return std::nullopt;
      case Value::value_t::number_float: return number(v.get<double>());
      case Value::value_t::number_integer: {
        const auto n = v.get<std::int64_t>();
        const std::uint64_t magnitude = n < 0 ? 0 - static_cast<std::uint64_t>(n) : static_cast<std::uint64_t>(n);
        if (!integer_survives(magnitude)) return inexact(std::to_string(n), static_cast<double>(n));
        return number(static_cast<double>(n));
      }
      case Value::value_t::number_unsigned: {
        const auto n = v.get<std::uint64_t>();
        if (!integer_survives(n)) return inexact(std::to_string(n), static_cast<double>(n));
        return number(static_cast<double>(n));
      }
      case Value::value_t::string:
        if (!write_string(out_, v.get_ref<const std::string&>())) {
          return error("string is not valid UTF-8 (RFC 8785 §3.1 needs Unicode text)", pointer());
        }
        return std::nullopt;
      case Value::value_t::array:
        out_.push_back('[');
        stack_.push_back(Frame{&v, {}});
        return std::nullopt;
      case Value::value_t::object: return open_object(v);
      case Value::value_t::binary: return error("a binary value has no JSON form", pointer());
      case Value::value_t::discarded: break;
    }
    return error("a discarded value has no JSON form", pointer());
  }

  std::optional<Error> open_object(const Value& v) {
    Frame frame{&v, {}};
    frame.members.reserve(v.size());
    for (const auto& [name, value] : v.get_ref<const Value::object_t&>()) {
      auto sort_key = to_utf16(name);
      if (!sort_key) {
        std::string where = pointer();
        append_pointer_token(where, name);
        return error("member name is not valid UTF-8 (RFC 8785 §3.1 needs Unicode text)", where);
      }
      frame.members.push_back(Member{std::move(*sort_key), &name, &value});
    }
    std::sort(frame.members.begin(), frame.members.end(),
              [](const Member& a, const Member& b) { return a.sort_key < b.sort_key; });
    out_.push_back('{');
    stack_.push_back(std::move(frame));
    return std::nullopt;
  }

  std::optional<Error> number(double d) {
    auto text = format_number(d);
    if (!text) return error(text.error().message, pointer());
    out_ += *text;
    return std::nullopt;
  }

  std::optional<Error> inexact(const std::string& n, double d) {
    return error("integer " + n + " would be written as the IEEE 754 double " + format_number(d).value_or("?") +
                     " (RFC 8785 §3.2.2.3)",
                 pointer());
  }

  static std::optional<Error> error(std::string message, std::string where) {
    return Error{Errc::not_canonical, std::move(message), std::move(where)};
  }

  // JSON pointer (RFC 6901) of the value being written: every open frame has
  // started its element next - 1.
  std::string pointer() const {
    std::string out;
    for (const Frame& f : stack_) {
      if (f.container->is_object()) {
        append_pointer_token(out, *f.members[f.next - 1].name);
      } else {
        out += "/" + std::to_string(f.next - 1);
      }
    }
    return out;
  }

  std::string out_;
  std::vector<Frame> stack_;
};

}  // namespace

Result<std::string> canonicalize(const Value& value) {
  try {
    return Writer().run(value);
  } catch (const std::exception& e) {
    return fail(Errc::internal, std::string("canonicalization failed: ") + e.what());
  }
}

}  // namespace taskyon::json
