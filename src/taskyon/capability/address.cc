// The refused ranges. Sources: IANA IPv4 Special-Purpose Address Registry and
// IANA IPv6 Special-Purpose Address Registry (RFC 6890 and updates; the
// "Globally Reachable" column), IANA IPv4 Multicast and IPv6 Address Space
// registries, and the cloud providers' metadata documentation. Order matters:
// the first match wins, so more specific entries come first.
#include <array>
#include <cstdint>
#include <iterator>

#include "taskyon/capability/address.h"
#include "taskyon/capability/url_parts.h"

namespace taskyon::capability {
namespace {

using enum AddressClass;

struct V4Range {
  std::uint32_t base;
  int length;
  AddressRange range;
};

constexpr std::uint32_t v4(unsigned a, unsigned b, unsigned c, unsigned d) { return a << 24 | b << 16 | c << 8 | d; }

constexpr V4Range kV4[] = {
    // Cloud metadata and platform endpoints (named, so a reason says what they are).
    {v4(169, 254, 169, 254), 32, {metadata, "169.254.169.254/32", "cloud instance metadata service (AWS, GCP, Azure, OCI, DigitalOcean, OpenStack, Hetzner)", "AWS EC2 IMDS, Google Cloud metadata server, Azure IMDS documentation"}},
    {v4(169, 254, 170, 2), 32, {metadata, "169.254.170.2/32", "Amazon ECS task metadata and credentials endpoint", "Amazon ECS task IAM roles documentation; PayloadsAllTheThings (AWS ECS)"}},
    {v4(169, 254, 170, 23), 32, {metadata, "169.254.170.23/32", "Amazon EKS Pod Identity Agent", "Amazon EKS Pod Identity documentation"}},
    {v4(100, 100, 100, 200), 32, {metadata, "100.100.100.200/32", "Alibaba Cloud instance metadata service", "Alibaba Cloud ECS instance metadata documentation; PayloadsAllTheThings"}},
    {v4(168, 63, 129, 16), 32, {metadata, "168.63.129.16/32", "Azure WireServer platform address (a public address)", "Microsoft Learn: What is IP address 168.63.129.16?"}},
    {v4(192, 0, 0, 192), 32, {metadata, "192.0.0.192/32", "Oracle Cloud Classic metadata service", "PayloadsAllTheThings (Oracle Cloud)"}},
    // IANA IPv4 Special-Purpose Address Registry, Globally Reachable = False.
    {v4(0, 0, 0, 0), 8, {unspecified, "0.0.0.0/8", "\"This network\"", "RFC 791, RFC 1122"}},
    {v4(10, 0, 0, 0), 8, {private_network, "10.0.0.0/8", "Private-Use", "RFC 1918"}},
    {v4(100, 64, 0, 0), 10, {private_network, "100.64.0.0/10", "Shared Address Space (carrier-grade NAT)", "RFC 6598"}},
    {v4(127, 0, 0, 0), 8, {loopback, "127.0.0.0/8", "Loopback", "RFC 1122"}},
    {v4(169, 254, 0, 0), 16, {link_local, "169.254.0.0/16", "Link Local", "RFC 3927"}},
    {v4(172, 16, 0, 0), 12, {private_network, "172.16.0.0/12", "Private-Use", "RFC 1918"}},
    // 192.0.0.0/24 whole, including 192.0.0.9 (PCP anycast) and 192.0.0.10
    // (TURN anycast), which IANA lists as reachable: protocol endpoints, never
    // an HTTPS origin.
    {v4(192, 0, 0, 0), 29, {private_network, "192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335"}},
    {v4(192, 0, 0, 8), 32, {private_network, "192.0.0.8/32", "IPv4 dummy address", "RFC 7600"}},
    {v4(192, 0, 0, 170), 31, {private_network, "192.0.0.170/31", "NAT64/DNS64 Discovery", "RFC 8880"}},
    {v4(192, 0, 0, 0), 24, {private_network, "192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890"}},
    {v4(192, 0, 2, 0), 24, {private_network, "192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737"}},
    {v4(192, 88, 99, 0), 24, {private_network, "192.88.99.0/24", "Deprecated 6to4 Relay Anycast", "RFC 7526"}},
    {v4(192, 168, 0, 0), 16, {private_network, "192.168.0.0/16", "Private-Use", "RFC 1918"}},
    {v4(198, 18, 0, 0), 15, {private_network, "198.18.0.0/15", "Benchmarking", "RFC 2544"}},
    {v4(198, 51, 100, 0), 24, {private_network, "198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737"}},
    {v4(203, 0, 113, 0), 24, {private_network, "203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737"}},
    {v4(224, 0, 0, 0), 4, {private_network, "224.0.0.0/4", "Multicast", "RFC 5771"}},
    {v4(255, 255, 255, 255), 32, {private_network, "255.255.255.255/32", "Limited Broadcast", "RFC 8190, RFC 919"}},
    {v4(240, 0, 0, 0), 4, {private_network, "240.0.0.0/4", "Reserved", "RFC 1112"}},
};

// First octets that some IPv4 entry covers.
constexpr auto kV4FirstOctet = [] {
  std::array<bool, 256> covers{};
  for (const auto& r : kV4) {
    const unsigned first = r.base >> 24;
    const unsigned span = r.length >= 8 ? 1u : 1u << (8 - r.length);
    for (unsigned k = 0; k < span; ++k) covers[first + k] = true;
  }
  return covers;
}();

// IPv6 as two 64-bit halves.
struct V6Range {
  std::uint64_t hi, lo;
  int length;
  AddressRange range;
};

constexpr std::uint64_t h(unsigned a, unsigned b = 0, unsigned c = 0, unsigned d = 0) {
  return std::uint64_t{a} << 48 | std::uint64_t{b} << 32 | std::uint64_t{c} << 16 | d;
}

constexpr V6Range kV6[] = {
    {h(0xfd00, 0x0ec2), h(0, 0, 0, 0x254), 128, {metadata, "fd00:ec2::254/128", "AWS EC2 instance metadata service (IPv6)", "AWS EC2 IMDS documentation"}},
    {h(0xfd00, 0x0ec2), h(0, 0, 0, 0x23), 128, {metadata, "fd00:ec2::23/128", "Amazon EKS Pod Identity Agent (IPv6)", "Amazon EKS Pod Identity documentation"}},
    {0, 0, 128, {unspecified, "::/128", "Unspecified Address", "RFC 4291"}},
    {0, 1, 128, {loopback, "::1/128", "Loopback Address", "RFC 4291"}},
    {0, h(0, 0xffff), 96, {ipv6_special, "::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291"}},
    {0, h(0xffff), 96, {ipv6_special, "::ffff:0:0:0/96", "IPv4-translated Address", "RFC 2765"}},
    {0, 0, 96, {ipv6_special, "::/96", "IPv4-compatible Address (deprecated)", "RFC 4291 §2.5.5.1"}},
    {h(0x64, 0xff9b), 0, 96, {ipv6_special, "64:ff9b::/96", "IPv4-IPv6 Translation, NAT64", "RFC 6052"}},
    {h(0x64, 0xff9b, 1), 0, 48, {ipv6_special, "64:ff9b:1::/48", "IPv4-IPv6 Translation, local use", "RFC 8215"}},
    {h(0x100), 0, 64, {ipv6_special, "100::/64", "Discard-Only Address Block", "RFC 6666"}},
    {h(0x100, 0, 0, 1), 0, 64, {ipv6_special, "100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780"}},
    {h(0x2001, 0), 0, 32, {ipv6_special, "2001::/32", "TEREDO", "RFC 4380"}},
    {h(0x2001, 2), 0, 48, {ipv6_special, "2001:2::/48", "Benchmarking", "RFC 5180"}},
    {h(0x2001, 0x10), 0, 28, {ipv6_special, "2001:10::/28", "Deprecated ORCHID", "RFC 4843"}},
    {h(0x2001, 0x20), 0, 28, {ipv6_special, "2001:20::/28", "ORCHIDv2", "RFC 7343"}},
    {h(0x2001), 0, 23, {ipv6_special, "2001::/23", "IETF Protocol Assignments", "RFC 2928"}},
    {h(0x2001, 0x0db8), 0, 32, {ipv6_special, "2001:db8::/32", "Documentation", "RFC 3849"}},
    {h(0x2002), 0, 16, {ipv6_special, "2002::/16", "6to4", "RFC 3056"}},
    {h(0x3fff), 0, 20, {ipv6_special, "3fff::/20", "Documentation", "RFC 9637"}},
    {h(0x5f00), 0, 16, {ipv6_special, "5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602"}},
    {h(0xfc00), 0, 7, {private_network, "fc00::/7", "Unique-Local", "RFC 4193"}},
    {h(0xfe80), 0, 10, {link_local, "fe80::/10", "Link-Local Unicast", "RFC 4291"}},
    {h(0xfec0), 0, 10, {ipv6_special, "fec0::/10", "Site-Local (deprecated)", "RFC 3879"}},
    {h(0xff00), 0, 8, {ipv6_special, "ff00::/8", "Multicast", "RFC 4291"}},
};

constexpr AddressRange kGlobal{global, "", "globally reachable", ""};
constexpr AddressRange kNotGlobalUnicast{ipv6_special, "outside 2000::/3",
                                         "not Global Unicast (reserved or unallocated space)",
                                         "IANA IPv6 Address Space registry"};

constexpr std::uint64_t mask64(int bits) {  // the top `bits` bits of 64 set
  return bits <= 0 ? 0 : bits >= 64 ? ~std::uint64_t{0} : ~std::uint64_t{0} << (64 - bits);
}

// The table's masks, computed once at compile time.
struct V6Mask {
  std::uint64_t hi, lo;
};
constexpr auto kV6Masks = [] {
  std::array<V6Mask, std::size(kV6)> masks{};
  for (std::size_t i = 0; i < std::size(kV6); ++i) {
    const int length = kV6[i].length;
    masks[i] = {mask64(length > 64 ? 64 : length), mask64(length > 64 ? length - 64 : 0)};
  }
  return masks;
}();

std::uint64_t hi_of(const IpAddress::Pieces& p) { return h(p[0], p[1], p[2], p[3]); }
std::uint64_t lo_of(const IpAddress::Pieces& p) { return h(p[4], p[5], p[6], p[7]); }

bool is_decimal_octet(std::string_view s) {
  if (s.empty() || s.size() > 3 || (s.size() > 1 && s[0] == '0')) return false;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  return v <= 255;
}

}  // namespace

std::string_view address_class_name(AddressClass cls) {
  switch (cls) {
    case global: return "global";
    case unspecified: return "unspecified";
    case loopback: return "loopback";
    case private_network: return "private";
    case link_local: return "link_local";
    case metadata: return "metadata";
    case ipv6_special: return "ipv6_special";
  }
  return "unknown";
}

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  if (text.find(':') != std::string_view::npos) {
    auto pieces = detail::parse_ipv6(text);
    if (!pieces) return std::nullopt;
    return IpAddress::v6(*pieces);
  }
  std::uint32_t value = 0;
  int parts = 0;
  while (true) {
    const auto dot = text.find('.');
    const std::string_view part = text.substr(0, dot);
    if (!is_decimal_octet(part) || ++parts > 4) return std::nullopt;
    unsigned octet = 0;
    for (char c : part) octet = octet * 10 + static_cast<unsigned>(c - '0');
    value = value << 8 | octet;
    if (dot == std::string_view::npos) break;
    text.remove_prefix(dot + 1);
  }
  if (parts != 4) return std::nullopt;
  return IpAddress::v4(value);
}

std::string IpAddress::to_string() const {
  std::string out;
  if (v6_) detail::append_ipv6(out, pieces_);
  else detail::append_ipv4(out, v4_);
  return out;
}

const AddressRange& classify(const IpAddress& address) {
  if (address.is_v4()) {
    const std::uint32_t a = address.v4_value();
    if (!kV4FirstOctet[a >> 24]) return kGlobal;  // most public addresses stop here
    for (const auto& r : kV4)
      if ((a & (~std::uint32_t{0} << (32 - r.length))) == r.base) return r.range;  // every length is 4..32
    return kGlobal;
  }
  const auto& p = address.v6_pieces();
  // Global unicast 2000::/3 outside the few refused blocks in it (2001::/23,
  // 2001:db8::/32, 2002::/16, 3fff::/20) needs no table scan.
  if ((p[0] & 0xe000) == 0x2000 && p[0] != 0x2001 && p[0] != 0x2002 && p[0] != 0x3fff) return kGlobal;
  const std::uint64_t hi = hi_of(p), lo = lo_of(p);
  for (std::size_t i = 0; i < std::size(kV6); ++i)
    if ((hi & kV6Masks[i].hi) == kV6[i].hi && (lo & kV6Masks[i].lo) == kV6[i].lo) return kV6[i].range;
  if ((p[0] & 0xe000) != 0x2000) return kNotGlobalUnicast;
  return kGlobal;
}

std::optional<IpAddress> embedded_ipv4(const IpAddress& address) {
  if (address.is_v4()) return std::nullopt;
  const auto& p = address.v6_pieces();
  const std::uint64_t hi = hi_of(p), lo = lo_of(p);
  const auto low32 = static_cast<std::uint32_t>(lo);
  const std::uint32_t high_lo = static_cast<std::uint32_t>(lo >> 32);
  if (hi == 0 && (high_lo == 0xffff || high_lo == 0xffff0000u)) return IpAddress::v4(low32);  // mapped, translated
  if (hi == 0 && high_lo == 0 && low32 > 1) return IpAddress::v4(low32);                         // compatible
  if (hi == h(0x64, 0xff9b) && high_lo == 0) return IpAddress::v4(low32);                        // NAT64 /96
  if (p[0] == 0x2002) return IpAddress::v4(static_cast<std::uint32_t>(p[1]) << 16 | p[2]);      // 6to4
  if (p[0] == 0x2001 && p[1] == 0) return IpAddress::v4(~low32);                                // Teredo client
  return std::nullopt;
}

}  // namespace taskyon::capability
