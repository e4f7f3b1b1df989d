// WHATWG URL Standard §3.5 host parser for special schemes, and §3.3 domain to
// ASCII on libidn2. Known differences from browsers and Node are listed in
// docs/fetch-policy.md ("Conformance"); all of them refuse a host that Node
// accepts, never the other way round.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>

#include <idn2.h>

#include "taskyon/base/ascii.h"
#include "taskyon/capability/url.h"
#include "taskyon/capability/url_parts.h"

namespace taskyon::capability {
namespace detail {
namespace {

constexpr bool is_ascii_alpha_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }

// Forbidden domain code points: the forbidden host code points, C0 controls,
// U+0025 (%) and U+007F. Only ASCII can be forbidden.
constexpr bool is_forbidden_domain(unsigned char c) {
  switch (c) {
    case 0x00: case '\t': case '\n': case '\r': case ' ': case '#': case '/': case ':': case '<': case '>':
    case '?': case '@': case '[': case '\\': case ']': case '^': case '|': case '%': case 0x7f:
      return true;
    default:
      return c < 0x20;
  }
}

using ascii::hex_value;

// What domain_to_ascii()'s ASCII fast path does with a byte, one table
// lookup per byte.
enum DomainByte : std::uint8_t { kKeep, kLower, kForbidden, kNotAscii, kDot, kHyphen };
constexpr auto kDomainBytes = [] {
  std::array<std::uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const auto u = static_cast<unsigned char>(c);
    t[u] = u >= 0x80 ? kNotAscii : is_forbidden_domain(u) ? kForbidden : is_ascii_alpha_upper(u) ? kLower : kKeep;
  }
  t['.'] = kDot;
  t['-'] = kHyphen;
  return t;
}();

// Percent-decode (§1.3): "%XX" becomes the byte; any other "%" stays.
std::string percent_decode(std::string_view input) {
  std::string out;
  out.reserve(input.size());
  for (std::size_t i = 0; i < input.size(); ++i) {
    if (input[i] == '%' && i + 2 < input.size()) {
      const int hi = hex_value(input[i + 1]), lo = hex_value(input[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(input[i]);
  }
  return out;
}

// UTS #46 §5 (IdnaMappingTable) "mapped" entries whose image is one ASCII
// letter, digit or full stop: fullwidth digits and Latin letters (U+FF10-FF19,
// U+FF21-FF3A, U+FF41-FF5A), circled Latin letters (U+24B6-24E9), and the
// full stops U+3002, U+FF0E, U+FF61 (UTS #46 §2.3 label separators). 0 for any
// other code point.
constexpr char simple_mapping(char32_t cp) {
  if (cp >= 0xff10 && cp <= 0xff19) return static_cast<char>('0' + (cp - 0xff10));
  if (cp >= 0xff21 && cp <= 0xff3a) return static_cast<char>('a' + (cp - 0xff21));
  if (cp >= 0xff41 && cp <= 0xff5a) return static_cast<char>('a' + (cp - 0xff41));
  if (cp >= 0x24b6 && cp <= 0x24cf) return static_cast<char>('a' + (cp - 0x24b6));
  if (cp >= 0x24d0 && cp <= 0x24e9) return static_cast<char>('a' + (cp - 0x24d0));
  if (cp == 0x3002 || cp == 0xff0e || cp == 0xff61) return '.';
  return 0;
}

// The UTS #46 result for a domain whose every non-ASCII code point has a
// simple_mapping, when the mapped string is ASCII letters, digits and dots
// only, in labels of 1 to 63 bytes (none "xn--"), at most 253 bytes: such a
// string is NFC, holds no joiner, no bidi and no hyphen, so ToASCII (UTS #46
// §4.2, CheckHyphens = false, UseSTD3ASCIIRules = false) returns the mapping
// itself, as libidn2 does (the IdnaFastPath tests compare both on every
// mapped code point). nullopt: not such a domain; libidn2 decides.
std::optional<std::string> simply_mapped(std::string_view domain) {
  std::string out;
  out.reserve(domain.size());
  const auto* p = reinterpret_cast<const unsigned char*>(domain.data());
  std::size_t label = 0;
  for (std::size_t i = 0; i < domain.size();) {
    char c = static_cast<char>(p[i]);
    if (p[i] < 0x80) {
      ++i;
      if (is_ascii_alpha_upper(p[i - 1])) c = static_cast<char>(c + 0x20);
    } else {
      // is_utf8() has passed: the lead byte gives the length.
      if (p[i] < 0xe0 || p[i] >= 0xf0 || i + 3 > domain.size()) return std::nullopt;
      const char32_t cp = static_cast<char32_t>((p[i] & 0x0f) << 12 | (p[i + 1] & 0x3f) << 6 | (p[i + 2] & 0x3f));
      c = simple_mapping(cp);
      if (c == 0) return std::nullopt;
      i += 3;
    }
    if (c == '.') {
      if (label == 0) return std::nullopt;
      label = 0;
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      if (++label > 63) return std::nullopt;  // no '-' is kept, so no label is "xn--"
    } else {
      return std::nullopt;
    }
    out += c;
  }
  if (label == 0 || out.size() > 253) return std::nullopt;
  return out;
}

// The usual IPv4 literal: four decimal parts of 1-3 digits, no leading zero
// (that would be octal), each at most 255 ("93.184.215.14"). Its address in
// one pass, as the IPv4 parser would return it; nullopt for any other
// spelling ("127.1", "0x7f.1", "127.0.0.1.", "010.0.0.1"), which that parser
// then judges. The input holds only digits and dots.
std::optional<std::uint32_t> dotted_decimal(std::string_view input) {
  std::uint32_t address = 0;
  unsigned part = 0, digits = 0, dots = 0;
  for (char c : input) {
    if (c == '.') {
      if (digits == 0 || ++dots > 3) return std::nullopt;
      address = address << 8 | part;
      part = digits = 0;
      continue;
    }
    if (digits == 1 && part == 0) return std::nullopt;
    part = part * 10 + static_cast<unsigned>(c - '0');
    if (part > 255) return std::nullopt;
    ++digits;
  }
  if (digits == 0 || dots != 3) return std::nullopt;
  return address << 8 | part;
}

}  // namespace

bool is_utf8(std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xbf;  // bounds of the second byte
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c == 0xe0) len = 3, lo = 0xa0;
    else if (c == 0xed) len = 3, hi = 0x9f;  // no surrogates
    else if (c >= 0xe1 && c <= 0xef) len = 3;
    else if (c == 0xf0) len = 4, lo = 0x90;
    else if (c >= 0xf1 && c <= 0xf3) len = 4;
    else if (c == 0xf4) len = 4, hi = 0x8f;  // <= U+10FFFF
    else return false;
    if (i + len > n) return false;
    if (s[i + 1] < lo || s[i + 1] > hi) return false;
    for (std::size_t k = 2; k < len; ++k)
      if (s[i + k] < 0x80 || s[i + k] > 0xbf) return false;
    i += len;
  }
  return true;
}

std::expected<std::string, Failure> domain_to_ascii(std::string_view domain) {
  // One pass over the ASCII fast path: with beStrict = false, an ASCII domain
  // with no label starting "xn--" (any case) converts by ASCII lower-casing.
  // A forbidden code point fails here already: UTS #46 (UseSTD3ASCIIRules =
  // false) passes ASCII through, so the check after it would fail too.
  std::string out(domain.size(), '\0');
  bool idna = false;
  std::size_t label_start = 0;
  for (std::size_t i = 0; i < domain.size(); ++i) {
    const auto c = static_cast<unsigned char>(domain[i]);
    const std::uint8_t kind = kDomainBytes[c];
    if (kind == kKeep || kind == kLower) {  // letters, digits and the other allowed ASCII
      out[i] = static_cast<char>(kind == kLower ? c + 0x20 : c);
      continue;
    }
    if (kind == kNotAscii) {
      idna = true;
      break;
    }
    if (kind == kForbidden) return std::unexpected(Failure{"domain-invalid-code-point"});
    if (kind == kDot) label_start = i + 1;
    if (kind == kHyphen && i == label_start + 3 && out[i - 1] == '-' && out[i - 2] == 'n' && out[i - 3] == 'x') {
      idna = true;  // an A-label: checked as Punycode
      break;
    }
    out[i] = static_cast<char>(c);
  }
  if (idna) {
    if (auto mapped = simply_mapped(domain)) return std::move(*mapped);
    return domain_to_ascii_idn2(domain);
  }
  if (out.empty()) return std::unexpected(Failure{"domain-to-ASCII"});
  return out;
}

std::expected<std::string, Failure> domain_to_ascii_idn2(std::string_view domain) {
  std::string out;
  {
    // UTS #46 ToASCII, nontransitional ("faß" stays "faß"), with input NFC.
    // libidn2 cannot see past a NUL; NUL is forbidden anyway.
    if (domain.find('\0') != std::string_view::npos) return std::unexpected(Failure{"domain-invalid-code-point"});
    const std::string input(domain);
    char* ascii = nullptr;
    const int rc = idn2_to_ascii_8z(input.c_str(), &ascii, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
    std::unique_ptr<char, decltype(&std::free)> owned(ascii, &std::free);
    if (rc != IDN2_OK || ascii == nullptr) return std::unexpected(Failure{"domain-to-ASCII"});
    out.assign(ascii);
    for (unsigned char c : out)
      if (is_forbidden_domain(c)) return std::unexpected(Failure{"domain-invalid-code-point"});
  }
  if (out.empty()) return std::unexpected(Failure{"domain-to-ASCII"});
  return out;
}

}  // namespace detail

Result<Host> detail::parse_utf8_host(std::string_view input) {
  auto failure = [&](detail::Failure name, std::string_view what) {
    std::string message;
    message.reserve(name.size() + 2 + what.size());
    detail::append_all(message, name, ": ", what);
    return fail(Errc::bad_usage, std::move(message), std::string(input));
  };
  if (input.empty()) return failure("host-missing", "the host is empty");
  Host host;
  if (input.front() == '[') {
    if (input.size() < 2 || input.back() != ']') return failure("IPv6-unclosed", "an IPv6 address lacks its closing ]");
    auto pieces = detail::parse_ipv6(input.substr(1, input.size() - 2));
    if (!pieces) return failure(pieces.error(), "not a valid IPv6 address");
    host.kind = HostKind::ipv6;
    host.address = IpAddress::v6(*pieces);
    return host;
  }
  // The common literal "93.184.215.14": digits and dots need no decoding or
  // IDNA (domain to ASCII would return them unchanged).
  const bool digits_and_dots =
      std::all_of(input.begin(), input.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
  if (digits_and_dots) {
    if (auto v4 = detail::dotted_decimal(input)) {
      host.kind = HostKind::ipv4;
      host.address = IpAddress::v4(*v4);
      return host;
    }
  }
  if (digits_and_dots && detail::ends_in_a_number(input)) {
    auto v4 = detail::parse_ipv4(input);
    if (!v4) return failure(v4.error(), "the host ends in a number but is not a valid IPv4 address");
    host.kind = HostKind::ipv4;
    host.address = IpAddress::v4(*v4);
    return host;
  }
  std::string decoded;
  std::string_view domain = input;
  if (input.find('%') != std::string_view::npos) {
    decoded = detail::percent_decode(input);
    if (!detail::is_utf8(decoded)) return failure("domain-to-ASCII", "the percent-decoded host is not UTF-8");
    domain = decoded;
  }
  auto ascii = detail::domain_to_ascii(domain);
  if (!ascii) {
    return failure(ascii.error(), ascii.error() == "domain-to-ASCII"
                                      ? "IDNA (UTS #46) processing refuses the host"
                                      : "the host holds a forbidden code point");
  }
  if (detail::ends_in_a_number(*ascii)) {
    auto v4 = detail::parse_ipv4(*ascii);
    if (!v4) return failure(v4.error(), "the host ends in a number but is not a valid IPv4 address");
    host.kind = HostKind::ipv4;
    host.address = IpAddress::v4(*v4);
    return host;
  }
  host.kind = HostKind::domain;
  host.domain = std::move(*ascii);
  return host;
}

Result<Host> parse_host(std::string_view input) {
  if (!detail::is_utf8(input))
    return fail(Errc::bad_usage, "domain-to-ASCII: the host is not UTF-8", std::string(input));
  return detail::parse_utf8_host(input);
}

std::string Host::serialize() const {
  std::string out;
  append_to(out);
  return out;
}

void Host::append_to(std::string& out) const {
  switch (kind) {
    case HostKind::none:
    case HostKind::empty:
      break;
    case HostKind::domain:
      out += domain;
      break;
    case HostKind::ipv4:
      detail::append_ipv4(out, address.v4_value());
      break;
    case HostKind::ipv6:
      out += '[';
      detail::append_ipv6(out, address.v6_pieces());
      out += ']';
      break;
  }
}

}  // namespace taskyon::capability
