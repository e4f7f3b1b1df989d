// WHATWG URL Standard §3.5 IPv6 parser and §3.6 IPv6 serializer, step by step.
#include <cstddef>
#include <optional>
#include <utility>

#include "taskyon/base/ascii.h"
#include "taskyon/capability/url_parts.h"

namespace taskyon::capability::detail {
namespace {

using ascii::hex_value;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::expected<IpAddress::Pieces, Failure> parse_ipv6(std::string_view input) {
  IpAddress::Pieces address{};
  std::size_t piece_index = 0;
  std::optional<std::size_t> compress;
  std::size_t p = 0;
  const std::size_t n = input.size();
  auto at = [&](std::size_t i) { return i < n ? input[i] : '\0'; };  // '\0' stands for EOF

  if (at(p) == ':') {
    if (at(p + 1) != ':') return std::unexpected(Failure{"IPv6-invalid-compression"});
    p += 2;
    ++piece_index;
    compress = piece_index;
  }
  while (p < n) {
    if (piece_index == 8) return std::unexpected(Failure{"IPv6-too-many-pieces"});
    if (input[p] == ':') {
      if (compress) return std::unexpected(Failure{"IPv6-multiple-compression"});
      ++p;
      ++piece_index;
      compress = piece_index;
      continue;
    }
    unsigned value = 0;
    std::size_t length = 0;
    while (length < 4 && p < n && hex_value(input[p]) >= 0) {
      value = value * 0x10 + static_cast<unsigned>(hex_value(input[p]));
      ++p;
      ++length;
    }
    if (at(p) == '.') {
      if (length == 0) return std::unexpected(Failure{"IPv4-in-IPv6-invalid-code-point"});
      p -= length;
      if (piece_index > 6) return std::unexpected(Failure{"IPv4-in-IPv6-too-many-pieces"});
      int numbers_seen = 0;
      while (p < n) {
        std::optional<unsigned> ipv4_piece;
        if (numbers_seen > 0) {
          if (input[p] == '.' && numbers_seen < 4) ++p;
          else return std::unexpected(Failure{"IPv4-in-IPv6-invalid-code-point"});
        }
        if (!is_digit(at(p))) return std::unexpected(Failure{"IPv4-in-IPv6-invalid-code-point"});
        while (is_digit(at(p))) {
          const unsigned number = static_cast<unsigned>(input[p] - '0');
          if (!ipv4_piece) ipv4_piece = number;
          else if (*ipv4_piece == 0) return std::unexpected(Failure{"IPv4-in-IPv6-invalid-code-point"});
          else ipv4_piece = *ipv4_piece * 10 + number;
          if (*ipv4_piece > 255) return std::unexpected(Failure{"IPv4-in-IPv6-out-of-range-part"});
          ++p;
        }
        address[piece_index] = static_cast<std::uint16_t>(address[piece_index] * 0x100 + *ipv4_piece);
        ++numbers_seen;
        if (numbers_seen == 2 || numbers_seen == 4) ++piece_index;
      }
      if (numbers_seen != 4) return std::unexpected(Failure{"IPv4-in-IPv6-too-few-parts"});
      break;
    }
    if (at(p) == ':') {
      ++p;
      if (p == n) return std::unexpected(Failure{"IPv6-invalid-code-point"});
    } else if (p < n) {
      return std::unexpected(Failure{"IPv6-invalid-code-point"});
    }
    address[piece_index] = static_cast<std::uint16_t>(value);
    ++piece_index;
  }
  if (compress) {
    std::size_t swaps = piece_index - *compress;
    piece_index = 7;
    while (piece_index != 0 && swaps > 0) {
      std::swap(address[piece_index], address[*compress + swaps - 1]);
      --piece_index;
      --swaps;
    }
  } else if (piece_index != 8) {
    return std::unexpected(Failure{"IPv6-too-few-pieces"});
  }
  return address;
}

void append_ipv6(std::string& out, const IpAddress::Pieces& pieces) {
  // The first longest run of two or more zero pieces is compressed.
  std::optional<std::size_t> compress;
  std::size_t best = 1;
  for (std::size_t i = 0; i < 8;) {
    if (pieces[i] != 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < 8 && pieces[j] == 0) ++j;
    if (j - i > best) {
      best = j - i;
      compress = i;
    }
    i = j;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  char buf[40];  // "ffff:" * 7 + "ffff"
  char* w = buf;
  for (std::size_t i = 0; i < 8; ++i) {
    if (compress && i == *compress) {
      if (i == 0) *w++ = ':';
      *w++ = ':';
      i += best - 1;
      continue;
    }
    const unsigned v = pieces[i];
    bool started = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
      const unsigned d = (v >> shift) & 0xf;
      if (d || started || shift == 0) {
        *w++ = kHex[d];
        started = true;
      }
    }
    if (i != 7) *w++ = ':';
  }
  out.append(buf, w);
}

}  // namespace taskyon::capability::detail
