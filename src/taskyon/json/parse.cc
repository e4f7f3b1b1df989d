// Strict JSON text (RFC 8259) into a Value, through nlohmann's SAX interface.
//
// nlohmann's lexer already refuses: invalid UTF-8 and unescaped control
// characters in strings (RFC 8259 §7-8), lone surrogates in \u escapes, number
// syntax outside RFC 8259 §6, comments (off by default), trailing content
// (strict mode), and numbers that overflow a double (1e400, error 406).
// It does silently, and we guard here:
//   * duplicate member names: the last one wins          -> refused (RFC 8259 §4, I-JSON RFC 7493 §2.3)
//   * a NUL byte ends the input: "1\0junk" parses as 1    -> refused
//   * a leading UTF-8 byte order mark is skipped          -> refused (RFC 8259 §8.1 makes it optional)
//   * an integer beyond 64 bits becomes a rounded double  -> not_canonical
//   * an integer within 64 bits is kept exactly, though a double cannot hold it
//     (9007199254740993)                                   -> not_canonical (RFC 8785 §3.2.2.3)
// and it has no nesting or size limit: ParseLimits adds them.
//
// An integer literal passes if its double is that integer exactly, or if it is
// already the RFC 8785 form of its double (1152921504606847000 for 2^60):
// canonical output must parse back to itself.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "taskyon/json/json.h"

namespace taskyon::json {
namespace {

// RFC 6901 reference token: "~" -> "~0", "/" -> "~1".
void append_pointer_token(std::string& pointer, std::string_view token) {
  pointer.push_back('/');
  for (char c : token) {
    if (c == '~') {
      pointer += "~0";
    } else if (c == '/') {
      pointer += "~1";
    } else {
      pointer.push_back(c);
    }
  }
}

// Printable ASCII kept, every other byte as \xNN, so that an error message is
// valid UTF-8 whatever the input was.
std::string printable(std::string_view bytes) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xf]);
    }
  }
  return out;
}

// Why an integer literal (its digits, no sign) cannot be read as a double
// without changing it, or nullopt if it can: RFC 8785 §3.2.2.3 reads it as the
// nearest double, which is fine if that double is the integer exactly, or if
// its RFC 8785 form is the literal itself (so canonical text always parses
// back: 295147905179352830000 is how JCS writes 2^68).
std::optional<std::string> integer_change(std::string_view magnitude) {
  double d = 0;
  const auto parsed = std::from_chars(magnitude.data(), magnitude.data() + magnitude.size(), d);
  if (parsed.ec != std::errc() || parsed.ptr != magnitude.data() + magnitude.size()) {
    return "is out of range of an IEEE 754 double";
  }
  char exact[400];  // fixed notation, no fraction digits: the double's exact value (DBL_MAX has 309 digits)
  const auto printed = std::to_chars(exact, exact + sizeof exact, d, std::chars_format::fixed, 0);
  if (printed.ec == std::errc() && std::string_view(exact, printed.ptr) == magnitude) return std::nullopt;
  auto canonical = format_number(d);
  if (canonical && *canonical == magnitude) return std::nullopt;
  return "would be read as the IEEE 754 double " + canonical.value_or("?");
}

// Builds the Value and enforces what nlohmann does not. Each callback returns
// false to stop the parse after recording `error`.
class StrictBuilder {
 public:
  explicit StrictBuilder(const ParseLimits& limits) : limits_(limits) {}

  bool null() { return add(Value(nullptr)); }
  bool boolean(bool b) { return add(Value(b)); }
  bool number_integer(Value::number_integer_t n) {
    const std::uint64_t magnitude = n < 0 ? 0 - static_cast<std::uint64_t>(n) : static_cast<std::uint64_t>(n);
    return check_integer(magnitude) && add(Value(n));
  }
  bool number_unsigned(Value::number_unsigned_t n) { return check_integer(n) && add(Value(n)); }
  bool number_float(Value::number_float_t d, const std::string& literal) {
    // nlohmann hands integers beyond 64 bits to strtod; the literal tells.
    const std::string_view magnitude =
        std::string_view(literal).substr(!literal.empty() && literal[0] == '-' ? 1 : 0);
    if (!magnitude.empty() && magnitude.find_first_not_of("0123456789") == std::string_view::npos) {
      if (auto change = integer_change(magnitude)) return inexact(literal, *change);
    }
    return add(Value(d));
  }
  bool string(std::string& s) { return add(Value(std::move(s))); }
  bool binary(Value::binary_t&) {  // never produced by the JSON text parser
    return stop(fail(Errc::internal, "binary value from a JSON text parser"));
  }

  bool start_object(std::size_t) { return open(Value::object()); }
  bool start_array(std::size_t) { return open(Value::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& name) {
    Frame& top = stack_.back();
    if (top.value->contains(name)) {
      const std::string object_pointer = container_pointer();
      std::string member_pointer = object_pointer;
      append_pointer_token(member_pointer, name);
      return stop(fail(Errc::invalid_json,
                       "duplicate member name " + Value(name).dump() + " in the object at \"" + object_pointer +
                           "\" (RFC 8259 §4: names must be unique)",
                       member_pointer));
    }
    top.key = std::move(name);
    return true;
  }

  // `position` counts the bytes read, the offending one included.
  bool parse_error(std::size_t position, const std::string&, const nlohmann::json::exception& e) {
    std::string at = "byte " + std::to_string(position > 0 ? position - 1 : 0);
    // e.what() is "[json.exception.<kind>.<id>] [parse error at line L, column C: ]<detail>".
    std::string_view detail = e.what();
    if (const auto bracket = detail.find("] "); bracket != std::string_view::npos) detail.remove_prefix(bracket + 2);
    constexpr std::string_view kAt = "parse error at ";
    if (const auto colon = detail.find(": "); detail.starts_with(kAt) && colon != std::string_view::npos) {
      at += " (" + std::string(detail.substr(kAt.size(), colon - kAt.size())) + ")";
      detail.remove_prefix(colon + 2);
    }
    if (e.id == 406) {  // out_of_range.406: the number is beyond the double range
      return stop(fail(Errc::not_canonical,
                       "number ending at " + at + " is beyond the IEEE 754 double range (RFC 8785 §3.2.2.3): " +
                           printable(detail),
                       pointer()));
    }
    return stop(fail(Errc::invalid_json, "invalid JSON at " + at + ": " + printable(detail), pointer()));
  }

  Result<Value> finish(bool completed) {
    if (error_) return std::unexpected(std::move(*error_));
    if (!completed) return fail(Errc::internal, "JSON parser stopped without an error");
    return std::move(root_);
  }

 private:
  struct Frame {
    Value* value;     // the open array or object
    std::string key;  // for an object: the name of the member being read
  };

  // JSON pointer (RFC 6901) of the innermost open array or object.
  std::string container_pointer() const {
    std::string out;
    for (std::size_t i = 0; i + 1 < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      if (f.value->is_object()) {
        append_pointer_token(out, f.key);
      } else {
        out += "/" + std::to_string(f.value->size() - 1);  // the open child is its last element
      }
    }
    return out;
  }

  // JSON pointer of the value being read: the pending member, or the next element.
  std::string pointer() const {
    std::string out = container_pointer();
    if (stack_.empty()) return out;
    const Frame& top = stack_.back();
    if (top.value->is_object()) {
      append_pointer_token(out, top.key);
    } else {
      out += "/" + std::to_string(top.value->size());
    }
    return out;
  }

  // Stores `v` where the value being read belongs; returns its place.
  Value& place(Value v) {
    if (stack_.empty()) return root_ = std::move(v);
    Frame& top = stack_.back();
    if (top.value->is_object()) return (*top.value)[top.key] = std::move(v);
    top.value->push_back(std::move(v));
    return top.value->back();
  }

  bool add(Value v) {
    place(std::move(v));
    return true;
  }

  bool open(Value container) {
    if (stack_.size() >= limits_.max_depth) {
      return stop(fail(Errc::invalid_json,
                       "nesting deeper than " + std::to_string(limits_.max_depth) + " arrays and objects",
                       pointer()));
    }
    Value& slot = place(std::move(container));
    stack_.push_back(Frame{&slot, {}});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  bool check_integer(std::uint64_t magnitude) {
    char buf[24];
    const auto printed = std::to_chars(buf, buf + sizeof buf, magnitude);
    const std::string digits(buf, printed.ptr);
    auto change = integer_change(digits);
    return !change || inexact(digits, *change);
  }

  bool inexact(const std::string& literal, const std::string& change) {
    return stop(fail(Errc::not_canonical,
                     "integer " + literal + " " + change +
                         " (RFC 8785 §3.2.2.3 reads numbers as doubles); write it as a string",
                     pointer()));
  }

  bool stop(std::unexpected<Error> e) {
    error_ = std::move(e.error());
    return false;
  }

  const ParseLimits& limits_;
  Value root_;
  std::vector<Frame> stack_;
  std::optional<Error> error_;
};

}  // namespace

Result<Value> parse(std::string_view text, const ParseLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return fail(Errc::invalid_json, "JSON text of " + std::to_string(text.size()) + " bytes exceeds the limit of " +
                                        std::to_string(limits.max_bytes) + " bytes");
  }
  if (text.starts_with("\xEF\xBB\xBF")) {
    return fail(Errc::invalid_json, "invalid JSON at byte 0: byte order mark (RFC 8259 §8.1)");
  }
  // A NUL is never valid JSON: not whitespace, and raw in a string it is an
  // unescaped control character. nlohmann would read it as the end of input.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    return fail(Errc::invalid_json, "invalid JSON at byte " + std::to_string(nul) + ": NUL byte");
  }
#if defined(__cpp_exceptions)  // wasm/ builds without exceptions: a throw there is a trap
  try {
#endif
    StrictBuilder builder(limits);
    const bool completed = Value::sax_parse(text.begin(), text.end(), &builder);
    return builder.finish(completed);
#if defined(__cpp_exceptions)
  } catch (const std::exception& e) {
    return fail(Errc::internal, std::string("JSON parser failed: ") + printable(e.what()));
  }
#endif
}

std::size_t depth(const Value& value, std::size_t stop_after) {
  // Depth-first over containers, each with its own level; scalars add nothing.
  std::vector<std::pair<const Value*, std::size_t>> todo{{&value, 1}};
  std::size_t deepest = 0;
  while (!todo.empty()) {
    const auto [v, level] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    deepest = std::max(deepest, level);
    if (deepest > stop_after) return stop_after + 1;
    for (const auto& child : *v)
      if (child.is_structured()) todo.emplace_back(&child, level + 1);
  }
  return deepest;
}

}  // namespace taskyon::json
