// RFC 8785 (JCS) serialization of a Value.
//
// Recursive for the first 64 levels of nesting, iterative (an explicit stack)
// below them, so a deeply nested value built in code cannot overflow the call
// stack. Every string and member name is checked to be UTF-8 (RFC 3629) on
// the way: nlohmann keeps whatever bytes a program put in a std::string.
//
// Speed (issue 19): text is appended in runs (a string's bytes up to the next
// one that needs an escape, found 16 or 8 bytes at a time; a number formatted
// in place), members are taken in the order nlohmann's std::map already keeps
// them (UTF-8 byte order = code point order) and re-sorted only from a name
// with a character at or above U+E000 on, the one place UTF-16 order differs,
// and the bytes can go straight into a SHA-256 context (canonical_sink.h)
// instead of a string.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <charconv>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
[[gnu::always_inline]] constexpr std::uint64_t needs_look(std::uint64_t w) {
  const std::uint64_t quote = w ^ (kOnes * '"');
  const std::uint64_t backslash = w ^ (kOnes * '\\');
  return (((w - kOnes * 0x20) & ~w) | ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | w) &
         kHighBits;
}

// memcpy of n < 8 bytes, inline.
[[gnu::always_inline]] inline void copy_short(char* to, const char* from, std::size_t n) {
  if (n >= 4) {  // two 4-byte moves, overlapping when n < 8
    std::memcpy(to, from, 4);
    std::memcpy(to + n - 4, from + n - 4, 4);
  } else {
    for (std::size_t i = 0; i < n; ++i) to[i] = from[i];
  }
}

// memcpy of n bytes, inline for the short names and strings that make up
// most of a document (a call into libc's memmove costs more than the copy).
[[gnu::always_inline]] inline void copy_bytes(char* to, const char* from, std::size_t n) {
  if (n > 16) {
    std::memcpy(to, from, n);
  } else if (n >= 8) {  // two 8-byte moves, overlapping when n < 16
    std::memcpy(to, from, 8);
    std::memcpy(to + n - 8, from + n - 8, 8);
  } else {
    copy_short(to, from, n);
  }
}

// The index of the first byte of a word that needs_look() flagged (in memory
// order). The flag of the first such byte is exact: the tests' false flags
// come only from a borrow out of a byte below them.
inline unsigned first_flagged(std::uint64_t look) {
  if constexpr (std::endian::native == std::endian::little) return static_cast<unsigned>(std::countr_zero(look)) / 8;
  return static_cast<unsigned>(std::countl_zero(look)) / 8;
}

// The n < 8 bytes at p as a word in memory order, the bytes past them plain
// ('a'). Built in registers from overlapping loads (bytes copied to memory
// and read back as a word would wait for the stores to drain).
[[gnu::always_inline]] inline std::uint64_t tail_word(const char* p, unsigned n) {
  const auto byte = [&](unsigned at) { return std::uint64_t{static_cast<unsigned char>(p[at])}; };
  std::uint64_t w = 0;
  if (n >= 4) {
    std::uint32_t low = 0, high = 0;
    std::memcpy(&low, p, 4);
    std::memcpy(&high, p + n - 4, 4);  // overlaps `low` when n < 8: the same bytes
    if constexpr (std::endian::native == std::endian::little) {
      w = low | (std::uint64_t{high} << (8 * (n - 4)));
    } else {
      w = (std::uint64_t{low} << 32) | (std::uint64_t{high} << (8 * (8 - n)));
    }
  } else {
    for (unsigned at : {0u, n / 2, n - 1}) {  // every byte of 1 to 3
      w |= std::endian::native == std::endian::little ? byte(at) << (8 * at) : byte(at) << (8 * (7 - at));
    }
  }
  const std::uint64_t pad = std::endian::native == std::endian::little ? ~std::uint64_t{0} << (8 * n)
                                                                       : ~std::uint64_t{0} >> (8 * n);
  return w | (kOnes * 'a' & pad);
}

// The first byte at or after p that is not plain, or end. A tail shorter
// than a word is read as one, padded with plain bytes, so a short name costs
// one test instead of a loop over its bytes.
[[gnu::always_inline]] inline const char* skip_plain(const char* p, const char* end) {
#if defined(__SSE2__)  // x86-64's baseline: 16 bytes per step for the long strings
  const __m128i space = _mm_set1_epi8(0x20);
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // A signed compare: bytes at or above 0x80 are negative, so below 0x20 too.
    const __m128i look = _mm_or_si128(_mm_cmplt_epi8(v, space),
                                      _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(look));
    if (mask != 0) return p + std::countr_zero(mask);
    p += 16;
  }
#endif
  for (; end - p >= 8; p += 8) {
    if (const std::uint64_t look = needs_look(load8(p))) return p + first_flagged(look);
  }
  if (p == end) return end;
  const std::uint64_t look = needs_look(tail_word(p, static_cast<unsigned>(end - p)));
  return look ? p + first_flagged(look) : end;
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
// its UTF-8 bytes. The bytes between two escapes are copied in one piece; a
// string with none (the usual case) is one copy into the sink. not_utf8 if
// the string is not UTF-8. A member name that may_reorder() is not written
// (may_reorder is returned): the caller sorts first. That test runs only for
// a name that is not all plain ASCII, so an ASCII name is read once.
enum class Wrote { ok, not_utf8, may_reorder };

// The string from `next`, its first byte that is not plain, on: escapes and
// the UTF-8 check. Out of line: most strings never get here.
template <typename Sink>
[[gnu::noinline]] Wrote write_string_rest(Sink& out, std::string_view s, const char* next, bool comma, bool colon) {
  const char* const begin = s.data();
  const char* const end = begin + s.size();
  if (comma) out.push(',');
  out.push('"');
  const char* run = begin;  // start of the bytes not yet written
  while (next != end) {
    const unsigned char c = static_cast<unsigned char>(*next);
    if (c >= 0x80) {
      std::size_t i = static_cast<std::size_t>(next - begin);
      if (!next_code_point(s, i)) return Wrote::not_utf8;
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
  return Wrote::ok;
}

// What a string is written as: a value, or a member name (with ':' after it
// and ',' before it when `comma`) in the map's order (may_reorder is checked)
// or in an order already sorted.
enum class As { value, name, sorted_name };

template <As kAs, typename Sink>
[[gnu::always_inline]] inline Wrote write_string(Sink& out, std::string_view s, bool comma = false) {
  constexpr bool kName = kAs != As::value;
  const char* const begin = s.data();
  const char* const end = begin + s.size();
  const char* const next = skip_plain(begin, end);
  if (next == end && s.size() <= Sink::kSize - 4) {  // all plain: one copy
    char* o = out.room(s.size() + 4);
    char* const start = o;
    if (kName && comma) *o++ = ',';
    *o++ = '"';
    copy_bytes(o, begin, s.size());
    o += s.size();
    *o++ = '"';
    if (kName) *o++ = ':';
    out.wrote(static_cast<std::size_t>(o - start));
    return Wrote::ok;
  }
  if (kAs == As::name && may_reorder(s)) return Wrote::may_reorder;
  return write_string_rest(out, s, next, kName && comma, kName);
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
// Objects are walked in their map's order (`it`) until a name may make UTF-16
// order differ from it; the members from there on are then taken from the
// writer's `sorted_`, `sorted` being the index of the next one and `base`
// where this frame's run of sorted_ starts.
struct Frame {
  bool object = false;
  std::size_t size = 0;
  std::size_t next = 0;
  const Value* elements = nullptr;  // an array's
  Value::object_t::const_iterator it{};
  const Value::object_t* map = nullptr;  // an object's
  std::size_t sorted = kMapOrder;
  std::size_t base = 0;
};

// Errors are kept in the writer (error_) and the steps return false: an
// std::optional<Error> returned by every value's step costs more than the
// writing of a short member.
template <typename Sink>
class Writer {
 public:
  explicit Writer(Sink& out) : out_(out) {}

  std::optional<Error> run(const Value& root) {
    if (!write(root, 0)) return std::move(error_);
    out_.flush();
    return std::nullopt;
  }

 private:
  // Containers nested deeper than this are written by deep() with an
  // explicit stack; above it, by plain recursion, which keeps a container's
  // place in registers and costs about half as much per value. 64 levels of
  // write/object/array frames take a few KiB of stack.
  static constexpr int kRecursionDepth = 64;

  // Writes v. On an error, each level adds its member name or index in
  // front of error_'s pointer on the way out (unwound).
  bool write(const Value& v, int depth) {
    switch (v.type()) {
      case Value::value_t::object:
        if (depth == kRecursionDepth) return deep(v);
        return object(*v.get_ptr<const Value::object_t*>(), depth + 1);
      case Value::value_t::array:
        if (depth == kRecursionDepth) return deep(v);
        return array(*v.get_ptr<const Value::array_t*>(), depth + 1);
      default: return start(v);  // a scalar: no frame
    }
  }

  bool array(const Value::array_t& elements, int depth) {
    out_.push('[');
    for (std::size_t i = 0; i < elements.size(); ++i) {
      if (i > 0) out_.push(',');
      if (!write(elements[i], depth)) return unwound(i);
    }
    out_.push(']');
    return true;
  }

  // Members in the map's order until a name may_reorder (see member()), the
  // rest sorted.
  bool object(const Value::object_t& map, int depth) {
    out_.push('{');
    bool comma = false;
    auto it = map.begin();
    for (; it != map.end(); ++it, comma = true) {
      const Wrote wrote = write_string<As::name>(out_, it->first, comma);
      if (wrote == Wrote::may_reorder) break;
      if (wrote == Wrote::not_utf8) return bad_name_at(it->first);
      if (!write(it->second, depth)) return unwound(it->first);
    }
    if (it != map.end()) {
      for (auto rest = it; rest != map.end(); ++rest) {
        if (!is_utf8(rest->first)) return bad_name_at(rest->first);
      }
      const std::size_t base = sort_members(it, map.end());
      const std::size_t end = sorted_.size();
      for (std::size_t i = base; i < end; ++i, comma = true) {
        const Member m = sorted_[i];  // a copy: writing the value may grow sorted_
        write_string<As::sorted_name>(out_, *m.name, comma);  // checked above
        if (!write(*m.value, depth)) return unwound(*m.name);
      }
      sorted_.resize(base);
    }
    out_.push('}');
    return true;
  }

  // The member `name` of the object being written has a name that is not
  // UTF-8; false.
  bool bad_name_at(std::string_view name) {
    bad_name();
    return unwound(name);
  }

  // Puts the member's name (or the element's index) in front of the error's
  // pointer; always false.
  bool unwound(std::string_view name) {
    std::string token;
    append_pointer_token(token, name);
    error_->where.insert(0, token);
    return false;
  }
  bool unwound(std::size_t index) {
    error_->where.insert(0, "/" + std::to_string(index));
    return false;
  }

  // Pushes the members [from, to) to sorted_ in UTF-16 order (RFC 8785
  // §3.2.3) and returns the index of the first; their names are UTF-8.
  std::size_t sort_members(Value::object_t::const_iterator from, Value::object_t::const_iterator to) {
    const std::size_t base = sorted_.size();
    for (auto it = from; it != to; ++it) sorted_.push_back(Member{&it->first, &it->second});
    // Member names are unique, so the order is total and std::sort is
    // deterministic (std::stable_sort's temporary buffer is deprecated API in
    // libstdc++ 12, an error for clang-19 under -Werror).
    std::sort(sorted_.begin() + static_cast<std::ptrdiff_t>(base), sorted_.end(),
              [](const Member& a, const Member& b) { return utf16_less(*a.name, *b.name); });
    return base;
  }

  // Writes the container v, however deep, with the explicit stack_ (empty on
  // entry and on a successful return); error_'s pointer is from v on.
  bool deep(const Value& v) {
    if (!start(v)) return false;
    while (!stack_.empty()) {
      Frame& top = stack_.back();
      if (top.next == top.size) {
        out_.push(top.object ? '}' : ']');
        if (top.sorted != kMapOrder) sorted_.resize(top.base);
        stack_.pop_back();
        continue;
      }
      const bool comma = top.next > 0;
      const Value* child = nullptr;
      if (top.object) {
        child = member(top, comma);
        if (child == nullptr) return false;
      } else {
        if (comma) out_.push(',');
        child = top.elements + top.next;
        ++top.next;
      }
      if (!start(*child)) return false;
    }
    return true;
  }

  // Writes the next member's name of the object on top and returns its value,
  // or nullptr (error_ set) if a name is not UTF-8.
  //
  // No pass ahead over the names: the map keeps them in UTF-8 byte order,
  // which is UTF-16 order (RFC 8785 §3.2.3) unless, at the first character
  // where two names differ, the first has one in U+E000..U+FFFF and the other
  // one above U+FFFF. So a pair out of UTF-16 order needs, in its earlier
  // name, a byte at or above 0xEE (may_reorder), and the names before the
  // first such name are in place whatever follows. From that name on, the
  // rest are checked and sorted.
  const Value* member(Frame& top, bool comma) {
    if (top.sorted == kMapOrder) {
      const auto it = top.it;
      const Wrote wrote = write_string<As::name>(out_, it->first, comma);
      if (wrote != Wrote::may_reorder) {
        ++top.it;
        ++top.next;
        return wrote == Wrote::ok ? &it->second : bad_name();
      }
      if (!sort_rest(top)) return nullptr;
    }
    const Member& m = sorted_[top.sorted];
    ++top.sorted;
    ++top.next;
    write_string<As::sorted_name>(out_, *m.name, comma);  // checked by sort_rest
    return m.value;
  }

  // Moves the members not yet written to sorted_, in UTF-16 order, after
  // checking that every name among them is UTF-8 (utf16_less needs it).
  bool sort_rest(Frame& top) {
    const auto& map = *top.map;
    for (auto it = top.it; it != map.end(); ++it) {
      if (!is_utf8(it->first)) {
        top.it = std::next(it);  // pointer() names this member
        return bad_name() != nullptr;
      }
    }
    top.base = top.sorted = sort_members(top.it, map.end());
    return true;
  }

  // The member that pointer() names last has a name that is not UTF-8.
  const Value* bad_name() {
    fail("member name is not valid UTF-8 (RFC 8785 §3.1 needs Unicode text)");
    return nullptr;
  }

  // Writes a scalar, or opens a container and pushes its frame.
  bool start(const Value& v) {
    switch (v.type()) {
      case Value::value_t::string:
        if (write_string<As::value>(out_, *v.get_ptr<const std::string*>()) == Wrote::ok) return true;
        return fail("string is not valid UTF-8 (RFC 8785 §3.1 needs Unicode text)");
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
      case Value::value_t::object: {
        const auto& map = *v.get_ptr<const Value::object_t*>();
        out_.push('{');
        stack_.push_back(Frame{true, map.size(), 0, nullptr, map.begin(), &map, kMapOrder, 0});
        return true;
      }
      case Value::value_t::array: {
        const auto& elements = *v.get_ptr<const Value::array_t*>();
        out_.push('[');
        stack_.push_back(Frame{false, elements.size(), 0, elements.data(), {}, nullptr, kMapOrder, 0});
        return true;
      }
      case Value::value_t::boolean:
        if (*v.get_ptr<const bool*>()) {
          out_.append("true", 4);
        } else {
          out_.append("false", 5);
        }
        return true;
      case Value::value_t::null: out_.append("null", 4); return true;
      case Value::value_t::binary: return fail("a binary value has no JSON form");
      case Value::value_t::discarded: break;
    }
    return fail("a discarded value has no JSON form");
  }

  // |n| <= 2^53: the double is n and its Number::toString is n's digits.
  bool integer(std::int64_t n) {
    constexpr std::size_t kMax = 21;  // "-9223372036854775808"
    char* o = out_.room(kMax);
    out_.wrote(static_cast<std::size_t>(std::to_chars(o, o + kMax, n).ptr - o));
    return true;
  }

  bool number(double d) {
    if (!std::isfinite(d)) {
      auto text = format_number(d);  // the NaN / Infinity message
      return fail(text ? std::string("not a finite number") : text.error().message);
    }
    // An integral double of at most 2^53 writes as that integer (its digits
    // are the shortest that round-trip: every other decimal is >= 1 away);
    // -0 is "0" both ways.
    if (std::fabs(d) <= static_cast<double>(kExactIntegers) && d == std::trunc(d)) {
      return integer(static_cast<std::int64_t>(d));
    }
    char* o = out_.room(detail::kNumberTextMax);
    const std::size_t length = detail::write_number(o, d);
    if (length == 0) return fail("std::to_chars failed on a finite double");
    out_.wrote(length);
    return true;
  }

  bool inexact(const std::string& n, double d) {
    return fail("integer " + n + " would be written as the IEEE 754 double " + format_number(d).value_or("?") +
                " (RFC 8785 §3.2.2.3)");
  }

  // Keeps the error, at the value being written; always false.
  bool fail(std::string message) {
    error_ = Error{Errc::not_canonical, std::move(message), pointer()};
    return false;
  }

  // JSON pointer (RFC 6901) of the value being written: every open frame has
  // started its element next - 1.
  std::string pointer() const {
    std::string out;
    for (const Frame& f : stack_) {
      if (f.object) {
        append_pointer_token(out, f.sorted == kMapOrder ? std::prev(f.it)->first : *sorted_[f.sorted - 1].name);
      } else {
        out += "/" + std::to_string(f.next - 1);
      }
    }
    return out;
  }

  Sink& out_;
  std::vector<Frame> stack_;
  std::vector<Member> sorted_;  // the sorted members of the open objects that need it, outermost first
  std::optional<Error> error_;
};

}  // namespace

Result<std::string> canonicalize(const Value& value) {
#if defined(__cpp_exceptions)  // wasm/ builds without exceptions: a throw there is a trap
  try {
#endif
    std::string out;
    StringSink sink(out);
    if (auto failed = Writer<StringSink>(sink).run(value)) return std::unexpected(std::move(*failed));
    return out;
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
    const std::size_t held = out.size();
    StringSink sink(out);
    if (auto failed = Writer<StringSink>(sink).run(value)) {
      out.resize(held);  // as it was
      return std::unexpected(std::move(*failed));
    }
    return {};
#if defined(__cpp_exceptions)
  } catch (const std::exception& e) {
    return fail(Errc::internal, std::string("canonicalization failed: ") + e.what());
  }
#endif
}

Result<std::size_t> canonical_size(const Value& value) {
#if defined(__cpp_exceptions)
  try {
#endif
    CountSink sink;
    if (auto failed = Writer<CountSink>(sink).run(value)) return std::unexpected(std::move(*failed));
    return sink.count();
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
