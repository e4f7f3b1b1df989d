// Internal to src/taskyon/capability: the WHATWG URL Standard's host pieces
// (https://url.spec.whatwg.org/#host-parsing), shared by url.cc, host.cc and
// address.cc. Failures are the standard's validation-error names
// ("IPv4-too-many-parts"), static strings.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include "taskyon/capability/address.h"
#include "taskyon/capability/url.h"

namespace taskyon::capability::detail {

using Failure = std::string_view;  // a WHATWG validation-error name

// IPv4 number parser, ends-in-a-number checker, IPv4 parser (§3.5).
bool ends_in_a_number(std::string_view input);
std::expected<std::uint32_t, Failure> parse_ipv4(std::string_view input);

// IPv6 parser (§3.5), input without the brackets.
std::expected<IpAddress::Pieces, Failure> parse_ipv6(std::string_view input);

// IPv4 and IPv6 serializers (§3.6).
void append_ipv4(std::string& out, std::uint32_t address);
void append_ipv6(std::string& out, const IpAddress::Pieces& pieces);

// Domain to ASCII (§3.3) with beStrict = false: ASCII input with no "xn--"
// label is lower-cased here; anything else goes through libidn2's UTS #46
// processing (nontransitional, NFC). Then the forbidden-domain-code-point check.
// A non-ASCII domain whose code points all map to ASCII letters, digits or
// full stops under UTS #46 (fullwidth, circled, "。") is mapped here too; see
// simply_mapped() in host.cc for the exact conditions.
std::expected<std::string, Failure> domain_to_ascii(std::string_view domain_utf8);
// The libidn2 path of domain_to_ascii() alone, for any domain: what the fast
// paths above must agree with (tests compare them).
std::expected<std::string, Failure> domain_to_ascii_idn2(std::string_view domain_utf8);

// Whether the URL parser percent-encodes the userinfo (parse_url() does).
enum class Userinfo : bool { encoded, as_written };

// parse_url() for the fetch policy, which refuses a URL with any username or
// password whatever they hold. With Userinfo::as_written the username and
// password are kept as written, each empty exactly when its encoded form
// would be, so a long userinfo ("https://@@@@...@example.com/") costs no
// encoding pass; every other field is parse_url()'s. Named apart, so that an
// unqualified parse_url() in detail code (a unity batch sees this header)
// still finds the public one.
Result<Url> parse_url_with(std::string_view input, const UrlLimits& limits, Userinfo userinfo);

// parse_host() for input already known to be UTF-8 (the URL parser checks
// the whole input once).
Result<Host> parse_utf8_host(std::string_view input);

// True for a well-formed UTF-8 sequence (no overlongs, surrogates, or > U+10FFFF).
bool is_utf8(std::string_view bytes);

// Appends each piece (a string, string_view or char) in turn: a message built
// without parsing a format string (the parser's failures and the policy's
// frequent reasons are on every refused decision's path; issue 19).
template <typename... Pieces>
void append_all(std::string& out, const Pieces&... pieces) {
  (out += ... += pieces);
}

}  // namespace taskyon::capability::detail
