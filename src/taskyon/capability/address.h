// IP addresses and where they may be reached from the fetch capability
// (DESIGN §6 (2), issue 5 M6). Decisions only: nothing here does I/O.
//
// classify() answers one question for one address: is it a globally reachable
// unicast target, and if not, which registered range refuses it. The ranges are
// the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890) with
// "Globally Reachable: False", plus multicast, reserved space, known cloud
// metadata endpoints, and these stances (docs/fetch-policy.md):
//   * IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4
//     2002::/16, Teredo 2001::/32 (and all of 2001::/23), IPv4-compatible ::/96
//     and IPv4-translated ::ffff:0:0:0/96 are refused whole, whatever IPv4
//     address they embed: tool code that means an IPv4 host uses its literal.
//   * IPv6 outside 2000::/3 (the only block IANA allocates as global unicast)
//     is refused; so are 192.0.0.9/32 and 192.0.0.10/32, anycast protocol
//     endpoints (PCP, TURN) that IANA lists as reachable inside the refused
//     192.0.0.0/24.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace taskyon::capability {

// An IPv4 or IPv6 address as a value (no zone id: a fetch target never has one).
class IpAddress {
 public:
  using Pieces = std::array<std::uint16_t, 8>;  // IPv6, most significant first

  IpAddress() = default;  // 0.0.0.0
  static IpAddress v4(std::uint32_t address) { return IpAddress(address); }
  static IpAddress v6(const Pieces& pieces) { return IpAddress(pieces); }

  // Strict text forms, as resolvers and people write answers: dotted-quad
  // decimal IPv4 ("93.184.215.14", no leading zeros, exactly four parts), or an
  // RFC 4291 IPv6 text form without brackets or zone ("::1", "64:ff9b::1.2.3.4").
  // Not the URL host parser: "0x7f.1" and "[::1]" are refused here.
  static std::optional<IpAddress> parse(std::string_view text);

  bool is_v4() const { return !v6_; }
  bool is_v6() const { return v6_; }
  std::uint32_t v4_value() const { return v4_; }  // meaningful when is_v4()
  const Pieces& v6_pieces() const { return pieces_; }  // meaningful when is_v6()

  // "127.0.0.1"; IPv6 as the WHATWG URL Standard serializes it (RFC 5952
  // compression, lower-case hex, no dotted tail): "::ffff:7f00:1".
  std::string to_string() const;

  friend bool operator==(const IpAddress&, const IpAddress&) = default;

 private:
  explicit IpAddress(std::uint32_t v4) : v4_(v4) {}
  explicit IpAddress(const Pieces& pieces) : v6_(true), pieces_(pieces) {}

  bool v6_ = false;
  std::uint32_t v4_ = 0;
  Pieces pieces_{};
};

// Why an address is not a fetch target. The spelling of these classes is the
// reason_class vocabulary of ../shared/corpora/ssrf_public.json.
enum class AddressClass : std::uint8_t {
  global,           // globally reachable unicast: allowed
  unspecified,      // 0.0.0.0/8, ::/128
  loopback,         // 127.0.0.0/8, ::1/128
  private_network,  // RFC 1918, CGNAT, ULA fc00::/7, and every other IPv4 special-purpose range
  link_local,       // 169.254.0.0/16, fe80::/10
  metadata,         // a cloud instance metadata or platform endpoint
  ipv6_special,     // IPv6 special-purpose, embedding, translation and non-2000::/3 space
};

// "global", "unspecified", "loopback", "private", "link_local", "metadata", "ipv6_special".
std::string_view address_class_name(AddressClass cls);

// One registered range.
struct AddressRange {
  AddressClass cls;
  std::string_view prefix;  // "127.0.0.0/8", "::ffff:0:0/96"; empty for the global verdict
  std::string_view name;    // "Loopback", "IPv4-mapped Address"
  std::string_view source;  // "RFC 1122", "AWS EC2 IMDS documentation"
};

// The most specific refusing range that contains `address`, or a range with
// cls == AddressClass::global when the address is a permitted target. The
// result refers to static storage. Cost: one pass over a table of ~30 entries.
const AddressRange& classify(const IpAddress& address);

// The IPv4 address an IPv6 address carries, for explaining a refusal:
// IPv4-mapped, -compatible and -translated forms, NAT64 64:ff9b::/96, 6to4
// 2002::/16 (bits 16-47) and Teredo 2001::/32 (client, bits 96-127 inverted).
std::optional<IpAddress> embedded_ipv4(const IpAddress& address);

}  // namespace taskyon::capability
