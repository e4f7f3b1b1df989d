// URLs as tool code's `fetch` understands them: the WHATWG URL Standard's basic
// URL parser (https://url.spec.whatwg.org/), for absolute URLs without a base.
//
// A URL is parsed once, here; the policy judges the parsed value and the fetch
// module hands libcurl only href(), so the check and the request cannot read
// the same string two ways (libcurl's RFC 3986 parser sees host 127.0.0.1 in
// "https://a.example\@127.0.0.1/"; the standard, and we, see a.example).
//
// Scope: the special schemes (http, https, ws, wss, ftp, file) are parsed in
// full: pre-processing (leading/trailing C0 control or space stripped, ASCII
// tab and newline removed anywhere), backslash as slash, userinfo, the host
// parser (percent-decoding, UTS #46 through libidn2, forbidden code points,
// IPv4 in decimal/octal/hex/short forms, IPv6 with compression and dotted
// tails), port, path with dot segments, query and fragment with their
// percent-encode sets. Any other scheme ("gopher:", "data:", "blob:") is
// recognized, not parsed: the Url holds its scheme only.
//
// Limits: input at most UrlLimits::max_input_bytes (64 KiB by default; RFC 9110
// asks clients to support at least 8000 octets) and valid UTF-8. Known
// differences from Node's URL (ada) are in docs/fetch-policy.md; each one is a
// host we refuse that Node accepts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "taskyon/base/error.h"
#include "taskyon/capability/address.h"

namespace taskyon::capability {

enum class HostKind : std::uint8_t {
  none,    // no host: a non-special URL, which is not parsed
  empty,   // the empty host of "file:///etc/passwd"
  domain,  // an ASCII domain after IDNA, lower case ("xn--mnchen-3ya.de", "localhost.")
  ipv4,
  ipv6,
};

struct Host {
  HostKind kind = HostKind::none;
  std::string domain;  // kind == domain
  IpAddress address;   // kind == ipv4 or ipv6

  bool is_address() const { return kind == HostKind::ipv4 || kind == HostKind::ipv6; }
  // The host serializer: "example.com", "127.0.0.1", "[::1]", "" (empty, none).
  std::string serialize() const;
  void append_to(std::string& out) const;
};

enum class Scheme : std::uint8_t { http, https, ws, wss, ftp, file, other };

struct Url {
  std::string scheme;                 // ASCII lower case, without ':'
  Scheme kind = Scheme::other;
  std::string username;               // percent-encoded (userinfo set)
  std::string password;               // percent-encoded (userinfo set)
  Host host;
  std::optional<std::uint16_t> port;  // none when absent or the scheme's default
  std::string path;                   // serialized path: "/a/b", "/" (special URLs always have one)
  std::optional<std::string> query;   // without '?', percent-encoded
  std::optional<std::string> fragment;  // without '#', percent-encoded
  // The host as written in the input, after tab/newline removal and before
  // percent-decoding and IDNA ("0x7f.1", "loc%61lhost", "ⓛⓞⓒⓐⓛⓗⓞⓢⓣ"): what a
  // reason may quote when an odd spelling hides the real target.
  std::string host_input;

  bool special() const { return kind != Scheme::other; }
  bool has_credentials() const { return !username.empty() || !password.empty(); }
  // The scheme's default port (443 for https, 80 for http/ws, 443 wss, 21 ftp; 0 file, other).
  std::uint16_t default_port() const;
  std::uint16_t port_or_default() const { return port ? *port : default_port(); }

  // The URL serializer (href); empty for a non-special URL, which is not parsed.
  std::string href() const;
  // The ASCII serialization of a special non-file URL's origin:
  // "https://example.com", "https://[::1]:8443"; empty for file and non-special URLs.
  std::string origin() const;
};

struct UrlLimits {
  std::size_t max_input_bytes = 64 * 1024;  // before pre-processing
};

// The basic URL parser (no base URL, no state override). Errc::bad_usage for a
// failure; the message starts with the standard's validation-error name
// ("port-out-of-range: ...") and never quotes the input, which may hold
// credentials (`where` is empty). Also a failure: input that is not UTF-8 or
// longer than the limit.
[[nodiscard]] Result<Url> parse_url(std::string_view input, const UrlLimits& limits = {});

// The host parser for a special scheme, on a host as it would appear in a URL
// ("Example.COM", "[::1]", "0x7f.1", "münchen.de"). Errc::bad_usage on failure,
// with the host in `where`.
[[nodiscard]] Result<Host> parse_host(std::string_view input);

}  // namespace taskyon::capability
