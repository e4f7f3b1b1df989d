// WHATWG URL Standard §3.5: the IPv4 number parser, the ends-in-a-number
// checker and the IPv4 parser; §3.6 the IPv4 serializer.
#include <array>
#include <cstdint>
#include <optional>

#include "taskyon/capability/url_parts.h"

namespace taskyon::capability::detail {
namespace {

// Anything above this is out of range for every part, so parsing saturates
// here instead of overflowing on "0x" followed by a hundred digits.
constexpr std::uint64_t kSaturated = std::uint64_t{1} << 33;

int digit_value(char c, int radix) {
  int v = -1;
  if (c >= '0' && c <= '9') v = c - '0';
  else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
  else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
  return v >= 0 && v < radix ? v : -1;
}

// IPv4 number parser: "0x" prefix is hex, a leading "0" octal, else decimal;
// "0x" alone is 0. nullopt is failure.
std::optional<std::uint64_t> parse_number(std::string_view input) {
  if (input.empty()) return std::nullopt;
  int radix = 10;
  if (input.size() >= 2 && input[0] == '0' && (input[1] == 'x' || input[1] == 'X')) {
    input.remove_prefix(2);
    radix = 16;
  } else if (input.size() >= 2 && input[0] == '0') {
    input.remove_prefix(1);
    radix = 8;
  }
  std::uint64_t value = 0;
  if (radix == 10) {  // the usual case, without the general digit table
    for (char c : input) {
      const auto d = static_cast<unsigned>(c - '0');
      if (d > 9) return std::nullopt;
      value = value * 10 + d;
      if (value > kSaturated) value = kSaturated;
    }
    return value;
  }
  for (char c : input) {
    const int d = digit_value(c, radix);
    if (d < 0) return std::nullopt;
    value = value * static_cast<std::uint64_t>(radix) + static_cast<std::uint64_t>(d);
    if (value > kSaturated) value = kSaturated;
  }
  return value;
}

}  // namespace

bool ends_in_a_number(std::string_view input) {
  // The last part, ignoring one empty trailing part ("1.2.3.4." ends in "4").
  if (!input.empty() && input.back() == '.') {
    input.remove_suffix(1);
    if (input.empty()) return false;  // "." splits into ["", ""]: two parts, last empty
  }
  const auto dot = input.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? input : input.substr(dot + 1);
  if (last.empty()) return false;
  bool digits = true;
  for (char c : last) digits = digits && c >= '0' && c <= '9';
  if (digits) return true;
  return parse_number(last).has_value();
}

std::expected<std::uint32_t, Failure> parse_ipv4(std::string_view input) {
  std::array<std::uint64_t, 4> numbers{};
  std::size_t count = 0;
  if (!input.empty() && input.back() == '.') input.remove_suffix(1);  // one empty last part is dropped
  for (std::size_t start = 0;;) {
    std::size_t dot = start;
    while (dot < input.size() && input[dot] != '.') ++dot;
    if (count == 4) return std::unexpected(Failure{"IPv4-too-many-parts"});
    auto n = parse_number(input.substr(start, dot - start));
    if (!n) return std::unexpected(Failure{"IPv4-non-numeric-part"});
    numbers[count++] = *n;
    if (dot == input.size()) break;
    start = dot + 1;
  }
  for (std::size_t i = 0; i + 1 < count; ++i)
    if (numbers[i] > 255) return std::unexpected(Failure{"IPv4-out-of-range-part"});
  const std::uint64_t last = numbers[count - 1];
  if (last >= (std::uint64_t{1} << (8 * (5 - count)))) return std::unexpected(Failure{"IPv4-out-of-range-part"});
  std::uint64_t address = last;
  for (std::size_t i = 0; i + 1 < count; ++i) address += numbers[i] << (8 * (3 - i));
  return static_cast<std::uint32_t>(address);
}

void append_ipv4(std::string& out, std::uint32_t address) {
  char buf[16];
  char* p = buf;
  for (int shift = 24; shift >= 0; shift -= 8) {
    unsigned octet = (address >> shift) & 0xff;
    if (octet >= 100) *p++ = static_cast<char>('0' + octet / 100);
    if (octet >= 10) *p++ = static_cast<char>('0' + octet / 10 % 10);
    *p++ = static_cast<char>('0' + octet % 10);
    if (shift) *p++ = '.';
  }
  out.append(buf, p);
}

}  // namespace taskyon::capability::detail
