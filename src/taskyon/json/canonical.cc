// RFC 8785 (JCS) serialization of a Value.
//
// Iterative (an explicit stack, no recursion), so a deeply nested value built
// in code cannot overflow the call stack. Every string and member name is
// checked to be UTF-8 (RFC 3629) on the way: nlohmann keeps whatever bytes a
// program put in a std::string.
//
// Speed (issue 19): text is appended in runs (a string's bytes up to the next
// one that needs an escape, a number formatted in a stack buffer), members are
// taken in the order nlohmann's std::map already keeps them (UTF-8 byte order
// = code point order) and re-sorted only when a name has a character at or
// above U+E000, the one place UTF-16 order differs, and the bytes can go
// straight into a SHA-256 context (canonical_sha256.h) instead of a string.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <charconv>
#include <cstring>

#include "taskyon/json/canonical_sink.h"
#include "taskyon/json/json.h"
#include "taskyon/json/number_text.h"

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

// Eight bytes of `s` from `i` (a memcpy: no alignment or aliasing assumed).
std::uint64_t word_at(std::string_view s, std::size_t i) {
  std::uint64_t w;
  std::memcpy(&w, s.data() + i, sizeof w);
  return w;
}

constexpr std::uint64_t kOnes = 0x0101010101010101ull;
constexpr std::uint64_t kHighs = 0x8080808080808080ull;

// Whether any byte of `w` is zero (the classic SWAR test: exact for "any",
// byte order does not matter). Portable C++: the wasm build compiles this too.
constexpr bool has_zero_byte(std::uint64_t w) { return ((w - kOnes) & ~w & kHighs) != 0; }

// Whether none of the eight bytes needs more than copying into a JSON string
// (RFC 8785 §3.2.2.2): each is ASCII (< 0x80), not a control (< 0x20), not
// '"' and not '\\'. The fast path of write_string and is_utf8.
constexpr bool plain_ascii_word(std::uint64_t w) {
  if ((w & kHighs) != 0) return false;                     // a byte >= 0x80
  if (((w - 0x20 * kOnes) & ~w & kHighs) != 0) return false;  // a byte < 0x20 (all are < 0x80 here)
  return !has_zero_byte(w ^ (0x22 * kOnes)) && !has_zero_byte(w ^ (0x5C * kOnes));
}

// True if the UTF-8 text is well-formed (an ASCII run is checked in one pass).
bool is_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    if (i + 8 <= s.size() && (word_at(s, i) & kHighs) == 0) {
      i += 8;
      continue;
    }
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    if (!next_code_point(s, i)) return false;
  }
  return true;
}

// True if every byte is below 0x80 (eight at a time).
bool is_ascii(std::string_view s) {
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8)
    if ((word_at(s, i) & kHighs) != 0) return false;
  for (; i < s.size(); ++i)
    if (static_cast<unsigned char>(s[i]) >= 0x80) return false;
  return true;
}

// A name byte at or above 0xEE starts U+E000..U+FFFF (or is not UTF-8): only
// then can UTF-16 order differ from the byte order nlohmann's map keeps.
bool may_reorder(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0xEE) return true;
  return false;
}

// Member names compare as UTF-16 code unit sequences (RFC 8785 §3.2.3). At the
// first differing character, UTF-16 puts U+10000..U+10FFFF (surrogates
// D800..DFFF) below U+E000..U+FFFF; everywhere else it is code point order,
// which is UTF-8 byte order. Both names are valid UTF-8.
bool utf16_less(std::string_view a, std::string_view b) {
  const auto [pa, pb] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  if (pa == a.end() || pb == b.end()) return pb != b.end();  // a prefix sorts first
  std::size_t i = static_cast<std::size_t>(pa - a.begin());
  while (i > 0 && (static_cast<unsigned char>(a[i]) & 0xC0) == 0x80) --i;  // start of the character
  std::size_t j = i;
  const auto rank = [](std::optional<char32_t> cp) -> std::uint32_t {
    if (!cp) return 0;
    return *cp >= 0xE000 && *cp <= 0xFFFF ? *cp + 0x200000 : *cp;
  };
  return rank(next_code_point(a, i)) < rank(next_code_point(b, j));
}

// A JSON string as JSON.stringify writes it (RFC 8785 §3.2.2.2): the two-letter
// escapes \" \\ \b \f \n \r \t, \u00xx in lower-case hex for the other
// controls below U+0020, every other character (DEL, U+2028, non-ASCII) as
// its UTF-8 bytes. False if `s` is not UTF-8.
template <typename Sink>
bool write_string(Sink& out, std::string_view s) {
  out.push('"');
  std::size_t run = 0;  // start of the bytes not yet written
  for (std::size_t i = 0; i < s.size();) {
    if (i + 8 <= s.size() && plain_ascii_word(word_at(s, i))) {  // eight plain bytes at once
      i += 8;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      if (!next_code_point(s, i)) return false;
      continue;
    }
    out.append(s.substr(run, i - run));
    ++i;
    run = i;
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      default: {
        const char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out.append(std::string_view(u, 6));
      }
    }
  }
  out.append(s.substr(run));
  out.push('"');
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
  const std::string* name;
  const Value* value;
};

// An open array or object; `next` counts the elements already started.
// Objects are walked in their map's order (`it`), or in `members` when a name
// makes UTF-16 order differ from it.
struct Frame {
  const Value* container;
  bool object = false;
  std::size_t size = 0;
  std::size_t next = 0;
  Value::object_t::const_iterator it{};
  std::vector<Member> members;
};

template <typename Sink>
class Writer {
 public:
  explicit Writer(Sink& out) : out_(out) {}

  std::optional<Error> run(const Value& root) {
    if (auto failed = start(root)) return failed;
    while (!stack_.empty()) {
      Frame& top = stack_.back();
      if (top.next == top.size) {
        out_.push(top.object ? '}' : ']');
        stack_.pop_back();
        continue;
      }
      if (top.next > 0) out_.push(',');
      const Value* child = nullptr;
      if (top.object) {
        const std::string* name = nullptr;
        if (top.members.empty()) {
          name = &top.it->first;
          child = &top.it->second;
          ++top.it;
        } else {
          name = top.members[top.next].name;
          child = top.members[top.next].value;
        }
        write_string(out_, *name);  // checked when the frame was opened
        out_.push(':');
      } else {
        child = &(*top.container)[top.next];
      }
      ++top.next;
      if (auto failed = start(*child)) return failed;
    }
    return std::nullopt;
  }

 private:
  // Writes a scalar, or opens a container and pushes its frame.
  std::optional<Error> start(const Value& v) {
    switch (v.type()) {
      case Value::value_t::null: out_.append("null"); return std::nullopt;
      case Value::value_t::boolean: out_.append(v.get<bool>() ? "true" : "false"); return std::nullopt;
      case Value::value_t::number_float: return number(v.get<double>());
      case Value::value_t::number_integer: {
        const auto n = v.get<std::int64_t>();
        const std::uint64_t magnitude = n < 0 ? 0 - static_cast<std::uint64_t>(n) : static_cast<std::uint64_t>(n);
        if (magnitude <= (std::uint64_t{1} << 53)) return integer(n);  // the double is n; its text is n's digits
        if (!integer_survives(magnitude)) return inexact(std::to_string(n), static_cast<double>(n));
        return number(static_cast<double>(n));
      }
      case Value::value_t::number_unsigned: {
        const auto n = v.get<std::uint64_t>();
        if (n <= (std::uint64_t{1} << 53)) return integer(static_cast<std::int64_t>(n));
        if (!integer_survives(n)) return inexact(std::to_string(n), static_cast<double>(n));
        return number(static_cast<double>(n));
      }
      case Value::value_t::string:
        if (!write_string(out_, v.get_ref<const std::string&>())) {
          return error("string is not valid UTF-8 (RFC 8785 §3.1 needs Unicode text)", pointer());
        }
        return std::nullopt;
      case Value::value_t::array:
        out_.push('[');
        stack_.push_back(Frame{&v, false, v.size(), 0, {}, {}});
        return std::nullopt;
      case Value::value_t::object: return open_object(v);
      case Value::value_t::binary: return error("a binary value has no JSON form", pointer());
      case Value::value_t::discarded: break;
    }
    return error("a discarded value has no JSON form", pointer());
  }

  std::optional<Error> open_object(const Value& v) {
    const auto& map = v.get_ref<const Value::object_t&>();
    Frame frame{&v, true, map.size(), 0, map.begin(), {}};
    bool reorder = false;
    for (const auto& [name, value] : map) {
      if (is_ascii(name)) continue;  // valid UTF-8, and UTF-16 order is byte order
      if (!is_utf8(name)) {
        std::string where = pointer();
        append_pointer_token(where, name);
        return error("member name is not valid UTF-8 (RFC 8785 §3.1 needs Unicode text)", where);
      }
      reorder = reorder || may_reorder(name);
    }
    if (reorder) {
      frame.members.reserve(map.size());
      for (const auto& [name, value] : map) frame.members.push_back(Member{&name, &value});
      // Member names are unique, so the order is total and std::sort is
      // deterministic (std::stable_sort's temporary buffer is deprecated
      // API in libstdc++ 12, an error for clang-19 under -Werror).
      std::sort(frame.members.begin(), frame.members.end(),
                [](const Member& a, const Member& b) { return utf16_less(*a.name, *b.name); });
    }
    out_.push('{');
    stack_.push_back(std::move(frame));
    return std::nullopt;
  }

  std::optional<Error> integer(std::int64_t n) {
    char buf[24];
    const auto end = std::to_chars(buf, buf + sizeof buf, n).ptr;
    out_.append(std::string_view(buf, static_cast<std::size_t>(end - buf)));
    return std::nullopt;
  }

  std::optional<Error> number(double d) {
    if (!std::isfinite(d)) {
      auto text = format_number(d);  // the NaN / Infinity message
      return error(text ? std::string("not a finite number") : text.error().message, pointer());
    }
    char buf[detail::kNumberTextMax];
    const std::size_t length = detail::write_number(buf, d);
    if (length == 0) return error("std::to_chars failed on a finite double", pointer());
    out_.append(std::string_view(buf, length));
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
      if (f.object) {
        append_pointer_token(out, f.members.empty() ? std::prev(f.it)->first : *f.members[f.next - 1].name);
      } else {
        out += "/" + std::to_string(f.next - 1);
      }
    }
    return out;
  }

  Sink& out_;
  std::vector<Frame> stack_;
};

}  // namespace

Result<std::string> canonicalize(const Value& value) {
#if defined(__cpp_exceptions)  // wasm/ builds without exceptions: a throw there is a trap
  try {
#endif
    StringSink sink;
    if (auto failed = Writer<StringSink>(sink).run(value)) return std::unexpected(std::move(*failed));
    return std::move(sink.out);
#if defined(__cpp_exceptions)
  } catch (const std::exception& e) {
    return fail(Errc::internal, std::string("canonicalization failed: ") + e.what());
  }
#endif
}

Result<std::string> content_id_of(const Value& value) {
#if defined(__cpp_exceptions)  // wasm/ builds without exceptions: a throw there is a trap
  try {
#endif
    Sha256Sink sink;
    if (auto failed = Writer<Sha256Sink>(sink).run(value)) return std::unexpected(std::move(*failed));
    return "sha256:" + sink.hex();
#if defined(__cpp_exceptions)
  } catch (const std::exception& e) {
    return fail(Errc::internal, std::string("canonicalization failed: ") + e.what());
  }
#endif
}

}  // namespace taskyon::json
