// ASCII-only character helpers for protocol text (URL schemes and hosts, IP
// literals, HTTP field names): no locale and no Unicode case folding, as the
// WHATWG URL Standard's "ASCII lowercase" (Infra §4.7) and RFC 9110 §5.1's
// case-insensitive field names require.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace taskyon::ascii {

// Word at a time: eight bytes in a std::uint64_t, in portable C++ (the wasm
// build compiles it too), for scans over long runs of plain bytes (JSON
// strings in json/canonical.cc, URLs in capability/url.cc).
inline constexpr std::uint64_t kOnes = 0x0101010101010101u;      // 0x01 in every byte
inline constexpr std::uint64_t kHighBits = 0x8080808080808080u;  // 0x80 in every byte

// The eight bytes at p, unaligned.
inline std::uint64_t load8(const char* p) {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// Nonzero when a byte of x is zero. It never misses one, but may also flag
// a byte above a real zero, so callers ask only "any?".
constexpr std::uint64_t has_zero_byte(std::uint64_t x) { return (x - kOnes) & ~x & kHighBits; }

constexpr char to_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 0x20) : c; }
constexpr char to_upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 0x20) : c; }

// The value of a hex digit (0-9, a-f, A-F), -1 for any other byte.
constexpr int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `a` and `b` are equal once ASCII letters are lowercased.
constexpr bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (to_lower(a[i]) != to_lower(b[i])) return false;
  return true;
}

}  // namespace taskyon::ascii
