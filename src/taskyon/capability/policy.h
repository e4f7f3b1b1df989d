// The fetch policy (DESIGN §6, issue 5 M4-M7): what tool code may fetch.
//
// The host decides a fetch in this order: (1) the tool identity bound to the
// channel; (2) the URL policy; (3) the method class; (4) the grant for
// (revision, origin, access class); (5) the request. This file is steps 2 and
// 3, as values: decide_url() never fails and never does I/O; a refusal is a
// Decision, not an Error. docs/fetch-policy.md lists every rule with its source.
//
// The URL policy, first refusal wins:
//   malformed     the WHATWG URL parser fails (url.h), or the URL is too long
//   scheme        the scheme is not https, or the port is on the Fetch
//                 standard's bad-port list (kBadPorts)
//   credentials   the URL has a username or a password
//   <name>        the host is a refused name: localhost, *.localhost (loopback)
//                 or a cloud metadata name (metadata); kBlockedNames
//   <address>     a literal address, or any resolved address, that classify()
//                 (address.h) refuses: loopback, private, link_local,
//                 unspecified, metadata or ipv6_special
//   encoding_trick  the host is refused by name or literal address, and its
//                 spelling in the input differs from its canonical form
//                 (beyond ASCII case): "0x7f.1", "127.0.0.1.", "loc%61lhost",
//                 full-width or circled letters. IPv6 literals are judged by
//                 their address class whatever their spelling.
//   unresolved    a domain host resolved to no address (fail closed)
// Test-only admission: an address inside one of the `allow` blocks passes the
// address rules (not the name rules: `localhost` stays refused). Empty in
// production; tests and diagnostics name their loopback server with it.
// A domain is allowed only if it resolved to at least one address and every
// address is globally reachable: one refused answer refuses the name.
//
// The method class (Fetch standard "normalize" and "forbidden method"):
// a method must be an RFC 9110 token; a byte-case-insensitive match for
// DELETE, GET, HEAD, OPTIONS, POST or PUT is upper-cased, any other token is
// kept as given; GET, HEAD and OPTIONS are read, every other token is write;
// CONNECT, TRACE and TRACK (any case) and non-tokens are reject. The verdict
// judges the URL only: a reject refuses the request whatever the verdict.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/capability/address.h"
#include "taskyon/capability/cidr.h"
#include "taskyon/capability/url.h"

namespace taskyon::capability {

enum class Verdict : std::uint8_t { allow, deny };
enum class Access : std::uint8_t { read, write, reject };

// The classes of ../shared/corpora/ssrf_public.json, spelled as there
// (reason_class_name), plus `unresolved`, which the corpus never needs.
enum class ReasonClass : std::uint8_t {
  ok,
  scheme,
  credentials,
  malformed,
  loopback,
  private_network,  // "private"
  link_local,
  metadata,
  unspecified,
  ipv6_special,
  encoding_trick,
  unresolved,
};

std::string_view verdict_name(Verdict verdict);          // "allow", "deny"
std::string_view access_name(Access access);             // "read", "write", "reject"
std::string_view reason_class_name(ReasonClass reason);  // "ok", "scheme", ..., "private", ...
ReasonClass reason_class_of(AddressClass cls);           // the class an address refusal reports

struct MethodClass {
  Access access = Access::reject;
  std::string method;    // normalized ("Get" -> "GET", "patch" stays); as given when not a token
  std::string_view why;  // one phrase with its source, static storage
};

// Fetch-standard method normalization and the read/write/reject class.
MethodClass classify_method(std::string_view method);

// Names refused before resolution, compared with the URL's ASCII host after
// one trailing dot is removed. Any other name is judged by its addresses.
struct BlockedName {
  std::string_view name;  // exact name; with subdomains, also every name ending in "." + name
  bool subdomains;
  ReasonClass cls;        // loopback or metadata
  std::string_view what;
  std::string_view source;
};
// Sources: RFC 6761; the providers' documentation as collected in
// swisskyrepo/PayloadsAllTheThings, "SSRF URL for Cloud Instances".
inline constexpr BlockedName kBlockedNames[] = {
    {"localhost", true, ReasonClass::loopback, "the loopback name", "RFC 6761 §6.3"},
    {"metadata.google.internal", false, ReasonClass::metadata, "the Google Cloud metadata server",
     "Google Cloud metadata server documentation; PayloadsAllTheThings"},
    {"metadata", false, ReasonClass::metadata, "the Google Cloud metadata server's short name",
     "Google Cloud metadata server documentation; PayloadsAllTheThings"},
    {"instance-data", false, ReasonClass::metadata, "the AWS EC2 metadata service alias", "PayloadsAllTheThings (AWS)"},
    {"rancher-metadata", false, ReasonClass::metadata, "the Rancher metadata service",
     "Rancher 1.6 metadata service documentation; PayloadsAllTheThings"},
    {"metadata.packet.net", false, ReasonClass::metadata, "the Packet (Equinix Metal) metadata service",
     "PayloadsAllTheThings (Packetcloud)"},
};

// The entry refusing `ascii_host`, or nullptr.
const BlockedName* blocked_name(std::string_view ascii_host);

// The Fetch standard's bad ports (§2.9 port blocking), with their services.
struct BadPort {
  std::uint16_t port;
  std::string_view service;
};
// The entry for `port`, or nullptr.
const BadPort* bad_port(std::uint16_t port);

struct Decision {
  Verdict verdict = Verdict::deny;  // the URL policy's verdict on the target
  Access access = Access::reject;   // the method class
  ReasonClass reason_class = ReasonClass::malformed;  // ok when the verdict is allow
  std::string reason;               // which rule, range or name decided, in one sentence
  std::string method;               // the normalized method
  std::string_view method_reason;   // why the method has its class (static storage)
  std::string href;                 // the canonical URL handed to libcurl; empty if not parsed.
                                    // Never holds credentials (a URL with any is refused anyway).
  std::string origin;               // "https://example.com"; what a grant names
  std::string host;                 // the serialized host ("example.com", "[::1]")
  // decide_url_unresolved() only: the host is a domain that passed every rule
  // before resolution; decide_addresses() judges its answers and clears this.
  bool awaiting_resolution = false;

  // True when the request may go on to the grant check: allowed URL, and a
  // method that is not refused.
  bool admits() const { return verdict == Verdict::allow && access != Access::reject; }
};

// Answers of a resolver for one ASCII host name (A and AAAA, any order);
// empty when the name does not resolve.
using Resolver = std::function<std::vector<IpAddress>(std::string_view ascii_host)>;

// Decides `url` (the exact string tool code passed to fetch) and `method`.
// `resolved` is every address the URL's domain resolves to; it is ignored for
// a literal-address host. Costs one URL parse; nothing else allocates much.
// `allow`: the test-only admission above (empty: none).
Decision decide_url(std::string_view url, std::string_view method, std::span<const IpAddress> resolved,
                    std::span<const Cidr> allow = {});

// The same, asking `resolve` for the host's addresses only when the host is a
// domain that passed every check that comes before resolution.
Decision decide_url(std::string_view url, std::string_view method, const Resolver& resolve,
                    std::span<const Cidr> allow = {});

// DESIGN §6 order, first half: every rule that needs no name resolution (URL,
// scheme, port, credentials, refused names, literal addresses, method class).
// A domain host that passes them is `allow` with awaiting_resolution set and a
// reason saying its addresses are still to be judged; the caller checks the
// grant, then resolves the name and calls decide_addresses(). Never resolves.
Decision decide_url_unresolved(std::string_view url, std::string_view method, std::span<const Cidr> allow = {});

// Second half: the address rules on `resolved` (every answer for d.host), for
// a Decision from decide_url_unresolved() that is awaiting resolution
// (anything else is left as it is). Sets the verdict, class and reason as
// decide_url() would; the reason names the refused address.
void decide_addresses(Decision& d, std::span<const IpAddress> resolved, std::span<const Cidr> allow = {});

// The test-only allow block that admits `address`, or nullptr.
const Cidr* admitted_by(const IpAddress& address, std::span<const Cidr> allow);

}  // namespace taskyon::capability
