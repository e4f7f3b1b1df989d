#include "taskyon/capability/cidr.h"

#include <charconv>

namespace taskyon::capability {
namespace {

// Bit `i` (0 = most significant) of an address of either family.
bool bit(const IpAddress& a, int i) {
  if (a.is_v4()) return (a.v4_value() >> (31 - i)) & 1u;
  return (a.v6_pieces()[static_cast<std::size_t>(i / 16)] >> (15 - i % 16)) & 1u;
}

}  // namespace

std::optional<Cidr> Cidr::parse(std::string_view text) {
  const auto slash = text.find('/');
  auto address = IpAddress::parse(text.substr(0, slash));
  if (!address) return std::nullopt;
  const int width = address->is_v4() ? 32 : 128;
  int length = width;
  if (slash != std::string_view::npos) {
    const std::string_view digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), length);
    if (ec != std::errc() || end != digits.data() + digits.size() || length < 0 || length > width) return std::nullopt;
  }
  for (int i = length; i < width; ++i)
    if (bit(*address, i)) return std::nullopt;
  return Cidr{*address, static_cast<std::uint8_t>(length)};
}

bool Cidr::contains(const IpAddress& address) const {
  if (address.is_v4() != network.is_v4()) return false;
  for (int i = 0; i < prefix; ++i)
    if (bit(address, i) != bit(network, i)) return false;
  return true;
}

std::string Cidr::to_string() const { return network.to_string() + "/" + std::to_string(prefix); }

}  // namespace taskyon::capability
