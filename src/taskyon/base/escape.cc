#include "taskyon/base/escape.h"

#include <cstdint>

namespace taskyon {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_u(std::string& out, std::uint32_t cp) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 0xf];
}

bool is_format(std::uint32_t cp) {
  return (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2069) ||
         cp == 0xfeff;
}

// The length of the valid UTF-8 sequence at s[i] and its code point; 0 when
// it is not one (overlong, surrogate, truncated, past U+10FFFF).
std::size_t decode(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (len == 0 || c > 0xf4 || i + len > s.size()) return 0;
  cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (b(k) & 0x3f);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

enum class Mode { text, text_keep_newlines, json_dump };

std::string escape(std::string_view text, Mode mode) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\n' && mode != Mode::text) out += '\n';
      else if (c == '\n') out += "\\n";
      else if (c == '\\' && mode == Mode::json_dump) out += '\\';
      else if (c == '\\') out += "\\\\";
      else if (c < 0x20 || c == 0x7f) append_u(out, c);
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    const std::size_t len = decode(text, i, cp);
    if (len == 0 && mode == Mode::json_dump) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (len == 0) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
      ++i;
      continue;
    }
    if ((cp >= 0x80 && cp <= 0x9f) || is_format(cp)) append_u(out, cp);
    else out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

}  // namespace

std::string escape_terminal(std::string_view text, Newlines newlines) {
  return escape(text, newlines == Newlines::keep ? Mode::text_keep_newlines : Mode::text);
}

std::string escape_json_dump(std::string_view dump) { return escape(dump, Mode::json_dump); }

}  // namespace taskyon
