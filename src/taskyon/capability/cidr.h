// Address blocks in CIDR notation (RFC 4632 §3.1 for IPv4, RFC 4291 §2.3 for
// IPv6): the test-only allow rule of the fetch capability (fetch.h,
// NetworkRules::allow) names the loopback server's address with one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "taskyon/capability/address.h"

namespace taskyon::capability {

struct Cidr {
  IpAddress network;         // host bits zero
  std::uint8_t prefix = 0;   // 0..32 for IPv4, 0..128 for IPv6

  // "127.0.0.1/32", "::1/128", "10.0.0.0/8"; the address in IpAddress::parse's
  // strict form, then "/" and a decimal length without leading zeros. A bare
  // address means the whole address (/32, /128). Host bits must be zero
  // ("127.0.0.1/8" is refused: it would say a block and look like an address).
  static std::optional<Cidr> parse(std::string_view text);

  // True when `address` is in the block. An IPv4 block never contains an IPv6
  // address, not even an IPv4-mapped one (and the other way round).
  bool contains(const IpAddress& address) const;

  std::string to_string() const;  // "127.0.0.1/32"

  friend bool operator==(const Cidr&, const Cidr&) = default;
};

}  // namespace taskyon::capability
