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
// straight into a SHA-256 context (canonical_sink.h) instead of a string.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <charconv>
#include <cstring>

#include "taskyon/base/ascii.h"
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

// True if the UTF-8 text is well-formed (an ASCII run is checked in one pass).
bool is_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    if (!next_code_point(s, i)) return false;
  }
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

// Word-at-a-time scanning (base/ascii.h). Each test is the classic "has a
// zero byte" bit trick; it has no false negatives, so a clean word really is
// clean.
using ascii::kHighBits;
using ascii::kOnes;
using ascii::load8;

// Nonzero if a byte of w is '"', '\\', below 0x20 or at or above 0x80.
constexpr std::uint64_t needs_look(std::uint64_t w) {
  const std::uint64_t quote = w ^ (kOnes * '"');
  const std::uint64_t backslash = w ^ (kOnes * '\\');
  return (((w - kOnes * 0x20) & ~w) | ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | w) &
         kHighBits;
}

// A byte JSON.stringify copies as it is: printable ASCII other than '"' and '\\'.
constexpr bool is_plain(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

// The first byte at or after p that is not plain, or end.
const char* skip_plain(const char* p, const char* end) {
  while (end - p >= 8 && !needs_look(load8(p))) p += 8;
  while (p != end && is_plain(static_cast<unsigned char>(*p))) ++p;
  return p;
}

// True if a byte of s is at or above 0x80.
bool has_high_byte(std::string_view s) {
  const char* p = s.data();
  const char* const end = p + s.size();
  std::uint64_t any = 0;
  for (; end - p >= 8; p += 8) any |= load8(p);
  for (; p != end; ++p) any |= static_cast<unsigned char>(*p);
  return (any & kHighBits) != 0;
}

template <typename Sink>
void write_escape(Sink& out, unsigned char c) {
  switch (c) {
    case '"': out.append("\\\"", 2); break;
    case '\\': out.append("\\\\", 2); break;
    case '\b': out.append("\\b", 2); break;
    case '\f': out.append("\\f", 2); break;
    case '\n': out.append("\\n", 2); break;
    case '\r': out.append("\\r", 2); break;
    case '\t': out.append("\\t", 2); break;
    default: {
      const char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
      out.append(u, 6);
    }
  }
}

// A JSON string as JSON.stringify writes it (RFC 8785 §3.2.2.2): the two-letter
// escapes \" \\ \b \f \n \r \t, \u00xx in lower-case hex for the other
// controls below U+0020, every other character (DEL, U+2028, non-ASCII) as
// its UTF-8 bytes. With `comma` a ',' goes first, with `colon` a ':' after it
// (a member name). The bytes between two escapes are copied in one piece; a
// string with none (the usual case) is one copy into the sink. False if `s`
// is not UTF-8.
template <typename Sink>
bool write_string(Sink& out, std::string_view s, bool comma = false, bool colon = false) {
  const char* const begin = s.data();
  const char* const end = begin + s.size();
  const char* next = skip_plain(begin, end);
  const std::size_t extra = 2 + comma + colon;
  if (next == end && s.size() <= Sink::kSize - extra) {
    char* o = out.room(s.size() + extra);
    char* const start = o;
    if (comma) *o++ = ',';
    *o++ = '"';
    std::memcpy(o, begin, s.size());
    o += s.size();
    *o++ = '"';
    if (colon) *o++ = ':';
    out.wrote(static_cast<std::size_t>(o - start));
    return true;
  }
  if (comma) out.push(',');
  out.push('"');
  const char* run = begin;  // start of the bytes not yet written
  while (next != end) {
    const unsigned char c = static_cast<unsigned char>(*next);
    if (c >= 0x80) {
      std::size_t i = static_cast<std::size_t>(next - begin);
      if (!next_code_point(s, i)) return false;
      next = skip_plain(begin + i, end);
      continue;
    }
    out.append(run, static_cast<std::size_t>(next - run));
    write_escape(out, c);
    run = ++next;
    next = skip_plain(next, end);
  }
  out.append(run, static_cast<std::size_t>(end - run));
  out.push('"');
  if (colon) out.push(':');
  return true;
}

// True if writing the integer with this magnitude as a double (RFC 8785
// §3.2.2.3) keeps it: the double is the integer exactly, or its RFC 8785 form
// is the integer's own decimal text (what parse() gives for canonical text
// such as 1152921504606847000).
constexpr std::uint64_t kExactIntegers = std::uint64_t{1} << 53;  // every integer up to 2^53 is a double

bool integer_survives(std::uint64_t magnitude) {
  if (magnitude <= kExactIntegers) return true;
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

constexpr std::size_t kMapOrder = static_cast<std::size_t>(-1);

// An open array or object; `next` counts the elements already started.
// Objects are walked in their map's order (`it`), or, when a name makes UTF-16
// order differ from it, in the writer's `sorted_` from index `sorted`.
struct Frame {
  bool object = false;
  std::size_t size = 0;
  std::size_t next = 0;
  const Value* elements = nullptr;  // an array's
  Value::object_t::const_iterator it{};
  std::size_t sorted = kMapOrder;
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
        if (top.sorted != kMapOrder) sorted_.resize(top.sorted);
        stack_.pop_back();
        continue;
      }
      const bool comma = top.next > 0;
      const Value* child = nullptr;
      if (top.object) {
        const std::string* name = nullptr;
        if (top.sorted == kMapOrder) {
          name = &top.it->first;
          child = &top.it->second;
          ++top.it;
        } else {
          name = sorted_[top.sorted + top.next].name;
          child = sorted_[top.sorted + top.next].value;
        }
        write_string(out_, *name, comma, true);  // checked when the frame was opened
      } else {
        if (comma) out_.push(',');
        child = top.elements + top.next;
      }
      ++top.next;
      if (auto failed = start(*child)) return failed;
    }
    out_.flush();
    return std::nullopt;
  }

 private:
  // Writes a scalar, or opens a container and pushes its frame.
  std::optional<Error> start(const Value& v) {
    switch (v.type()) {
      case Value::value_t::string:
        if (!write_string(out_, *v.get_ptr<const std::string*>())) {
          return error("string is not valid UTF-8 (RFC 8785 §3.1 needs Unicode text)", pointer());
        }
        return std::nullopt;
      case Value::value_t::number_integer: {
        const std::int64_t n = *v.get_ptr<const std::int64_t*>();
        const std::uint64_t magnitude = n < 0 ? 0 - static_cast<std::uint64_t>(n) : static_cast<std::uint64_t>(n);
        if (magnitude <= kExactIntegers) return integer(n);  // the double is n; its text is n's digits
        if (!integer_survives(magnitude)) return inexact(std::to_string(n), static_cast<double>(n));
        return number(static_cast<double>(n));
      }
      case Value::value_t::number_unsigned: {
        const std::uint64_t n = *v.get_ptr<const std::uint64_t*>();
        if (n <= kExactIntegers) return integer(static_cast<std::int64_t>(n));
        if (!integer_survives(n)) return inexact(std::to_string(n), static_cast<double>(n));
        return number(static_cast<double>(n));
      }
      case Value::value_t::number_float: return number(*v.get_ptr<const double*>());
      case Value::value_t::object: return open_object(v);
      case Value::value_t::array: {
        const auto& elements = *v.get_ptr<const Value::array_t*>();
        out_.push('[');
        stack_.push_back(Frame{false, elements.size(), 0, elements.data(), {}, kMapOrder});
        return std::nullopt;
      }
      case Value::value_t::boolean:
        if (*v.get_ptr<const bool*>()) {
          out_.append("true", 4);
        } else {
          out_.append("false", 5);
        }
        return std::nullopt;
      case Value::value_t::null: out_.append("null", 4); return std::nullopt;
      case Value::value_t::binary: return error("a binary value has no JSON form", pointer());
      case Value::value_t::discarded: break;
    }
    return error("a discarded value has no JSON form", pointer());
  }

  std::optional<Error> open_object(const Value& v) {
    const auto& map = *v.get_ptr<const Value::object_t*>();
    Frame frame{true, map.size(), 0, nullptr, map.begin(), kMapOrder};
    // ASCII names (the usual case) are UTF-8 and keep the map's order.
    bool reorder = false;
    for (const auto& [name, value] : map) {
      if (!has_high_byte(name)) continue;
      if (!is_utf8(name)) {
        std::string where = pointer();
        append_pointer_token(where, name);
        return error("member name is not valid UTF-8 (RFC 8785 §3.1 needs Unicode text)", where);
      }
      reorder = reorder || may_reorder(name);
    }
    if (reorder) {
      frame.sorted = sorted_.size();
      for (const auto& [name, value] : map) sorted_.push_back(Member{&name, &value});
      // Member names are unique, so the order is total and std::sort is
      // deterministic (std::stable_sort's temporary buffer is deprecated
      // API in libstdc++ 12, an error for clang-19 under -Werror).
      std::sort(sorted_.begin() + static_cast<std::ptrdiff_t>(frame.sorted), sorted_.end(),
                [](const Member& a, const Member& b) { return utf16_less(*a.name, *b.name); });
    }
    out_.push('{');
    stack_.push_back(frame);
    return std::nullopt;
  }

  // |n| <= 2^53: the double is n and its Number::toString is n's digits.
  std::optional<Error> integer(std::int64_t n) {
    constexpr std::size_t kMax = 21;  // "-9223372036854775808"
    char* o = out_.room(kMax);
    out_.wrote(static_cast<std::size_t>(std::to_chars(o, o + kMax, n).ptr - o));
    return std::nullopt;
  }

  std::optional<Error> number(double d) {
    if (!std::isfinite(d)) {
      auto text = format_number(d);  // the NaN / Infinity message
      return error(text ? std::string("not a finite number") : text.error().message, pointer());
    }
    // An integral double of at most 2^53 writes as that integer (its digits
    // are the shortest that round-trip: every other decimal is >= 1 away);
    // -0 is "0" both ways.
    if (std::fabs(d) <= static_cast<double>(kExactIntegers) && d == std::trunc(d)) {
      return integer(static_cast<std::int64_t>(d));
    }
    char* o = out_.room(detail::kNumberTextMax);
    const std::size_t length = detail::write_number(o, d);
    if (length == 0) return error("std::to_chars failed on a finite double", pointer());
    out_.wrote(length);
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
        append_pointer_token(out, f.sorted == kMapOrder ? std::prev(f.it)->first : *sorted_[f.sorted + f.next - 1].name);
      } else {
        out += "/" + std::to_string(f.next - 1);
      }
    }
    return out;
  }

  Sink& out_;
  std::vector<Frame> stack_;
  std::vector<Member> sorted_;  // the sorted members of the open objects that need it, outermost first
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

Result<void> canonicalize_into(const Value& value, std::string& out) {
#if defined(__cpp_exceptions)
  try {
#endif
    AppendSink sink;
    sink.out = &out;
    if (auto failed = Writer<AppendSink>(sink).run(value)) return std::unexpected(std::move(*failed));
    return {};
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
