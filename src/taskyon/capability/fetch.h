// The mediated fetch (DESIGN §6 (2)-(3), issue 5 M4-M13): one HTTPS request
// on behalf of tool code, after the policy said yes. docs/fetch-policy.md,
// "The request", lists every libcurl option and why.
//
// Order, first refusal wins (the Decision and the failure code say which):
//   1. URL policy      decide_url_unresolved() (policy.h): every rule that
//                      needs no DNS                            -> policy_blocked
//                      (a URL that does not parse               -> invalid_request)
//   2. method class    CONNECT, TRACE, TRACK                   -> policy_blocked
//                      (not an RFC 9110 token                  -> invalid_request)
//   3. grant           GrantLookup(origin, access); none       -> denied
//                      Nothing was resolved yet (DESIGN §6, M6): an ungranted
//                      origin causes no DNS query.
//   3b. resolution     a domain only: FetchContext::resolve on a worker,
//                      bounded by total_timeout and the deadline -> timeout,
//                      *cancelled -> cancelled; no answer -> network; every
//                      A/AAAA answer must pass decide_addresses() -> policy_blocked
//                      (the tool's message names the rule, not the address;
//                      FetchFailure::detail keeps it for the audit log)
//   4. headers         invalid names or values (CR, LF, NUL)   -> invalid_request
//                      headers that smuggle authority or framing
//                      (kRefusedHeaders)                       -> policy_blocked
//                      {{secret:NAME}} placeholders are filled from
//                      SecretLookup(origin, NAME) only now; unknown -> denied
//   5. limits          body larger than max_request_bytes      -> too_large
//   6. the transfer    libcurl, https only, pinned to the checked addresses,
//                      each connect checked again (DNS rebinding -> policy_blocked);
//                      no proxy, cookies, netrc, HTTP auth or redirects;
//                      timeouts -> timeout, body over max_response_bytes -> too_large,
//                      *cancelled -> cancelled, anything else -> network.
// A 3xx is a response (its Location header as received). A response with any
// status is a success: HTTP errors are the tool's to read.
// Secrets never appear in a FetchFailure, a Decision or a log line.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/capability/cidr.h"
#include "taskyon/capability/policy.h"

namespace taskyon::capability {

struct Header {
  std::string name, value;
  friend bool operator==(const Header&, const Header&) = default;
};

// Limits of one request; these are the defaults, a grant may set others.
struct FetchLimits {
  std::chrono::milliseconds connect_timeout{10000};  // TCP + TLS handshake
  std::chrono::milliseconds total_timeout{30000};    // the whole transfer (capped by FetchContext::deadline)
  std::size_t max_response_bytes = 10u << 20;        // response body bytes, enforced while streaming
  std::size_t max_request_bytes = 1u << 20;          // request body bytes
};

// TEST-ONLY network admission, empty in production (the default). Tests and
// `tycli diagnostics` admit their loopback server (src/taskyon/loopback/) with it.
struct NetworkRules {
  // Addresses inside these blocks pass the address rules, at decision and at
  // connect time. Names stay refused: `localhost` is never admitted.
  std::vector<Cidr> allow;
  // A PEM file of trust anchors that REPLACES the system CA store (CAINFO, no
  // CAPATH). Empty: the system store.
  std::string ca_file;
  // TESTS ONLY, to prove the connect-time check: pin a domain-name URL's
  // transfer to these addresses instead of the ones the decision checked
  // (what DNS rebinding would do; ignored for literal-address URLs). The connect-time check refuses every address the decision
  // did not check, so a non-empty list can only make a fetch fail.
  std::vector<IpAddress> unchecked_pin_for_tests;
};

struct HttpRequest {
  std::string url;               // as tool code wrote it; parsed once by the policy
  std::string method = "GET";    // normalized as the Fetch standard does
  std::vector<Header> headers;   // in order; values may hold {{secret:NAME}}
  std::string body;              // bytes; must be empty for GET and HEAD
};

struct HttpResponse {
  int status = 0;
  std::string status_text;       // the reason phrase ("OK"); empty when the server sent none
  std::vector<Header> headers;   // as received, in order, names as sent (Set-Cookie included)
  std::string body;              // bytes, at most max_response_bytes
  std::string url;               // the canonical URL that was fetched (Decision::href)
};

// Stable codes (M13), spelled as in the sandbox's cap_error frames.
inline constexpr std::string_view kDenied = "denied";                  // no grant, unknown secret
inline constexpr std::string_view kPolicyBlocked = "policy_blocked";  // URL, method, header or connect-time refusal
inline constexpr std::string_view kTimeout = "timeout";                // connect or total timeout, or the call's deadline
inline constexpr std::string_view kTooLarge = "too_large";             // request or response body over its limit
inline constexpr std::string_view kCancelled = "cancelled";            // FetchContext::cancelled was set
inline constexpr std::string_view kNetwork = "network";                // DNS, TCP, TLS (verification included), HTTP framing
inline constexpr std::string_view kInvalidRequest = "invalid_request";  // malformed URL, method or header

struct FetchFailure {
  std::string code;     // one of the codes above
  std::string message;  // one sentence for the tool author; never holds a secret nor a resolved address
  std::string detail;   // for the audit log only (may name resolved addresses); empty: the message says all
};

// Whether (origin, access) is granted, and with which limits; nullopt: no grant.
// `origin` is Decision::origin ("https://api.example.com", "https://127.0.0.1:8443").
using GrantLookup = std::function<std::optional<FetchLimits>(std::string_view origin, Access access)>;
// The secret NAME stored for `origin`; nullopt: none. Called only after the grant passed.
using SecretLookup = std::function<std::optional<std::string>(std::string_view origin, std::string_view name)>;

struct FetchContext {
  GrantLookup grant;    // empty: nothing is granted
  SecretLookup secret;  // empty: no secrets
  NetworkRules rules;   // test-only admission; empty in production
  // Empty: the system resolver (resolve_system). Called only for a domain
  // whose origin is granted, on a worker thread that may outlive fetch() when
  // the bound passes: it must own what it captures (shared_ptr, values).
  Resolver resolve;
  const std::atomic<bool>* cancelled = nullptr;  // set from another thread: the transfer stops, code "cancelled"
  std::optional<std::chrono::steady_clock::time_point> deadline;  // the sandbox call's deadline; caps total_timeout
};

struct FetchResult {
  Decision decision;  // what the policy said (audit log); href and origin, never a secret
  std::expected<HttpResponse, FetchFailure> response;
};

// One request as described above. Never throws; blocking, but bounded by the
// timeouts and the deadline, name resolution included; safe to call from
// several threads at once (one libcurl easy handle per call, no reuse).
FetchResult fetch(const HttpRequest& request, const FetchContext& context);

// The system resolver: getaddrinfo(AF_UNSPEC, SOCK_STREAM), every A and AAAA
// answer once, in the resolver's order; empty when the name does not resolve.
std::vector<IpAddress> resolve_system(std::string_view ascii_host);

// Request headers refused because they would smuggle authority or framing past
// the host (compared ASCII case-insensitively; "proxy-" is a prefix). Sources:
// the Fetch standard's forbidden request-header names (cookies, Host, hop-by-hop
// and framing headers, Proxy-*, method overrides) and RFC 9110 §7.6.1.
struct RefusedHeader {
  std::string_view name;
  bool prefix;
  std::string_view why;
};
inline constexpr RefusedHeader kRefusedHeaders[] = {
    {"cookie", false, "cookies are ambient credentials (M9); a tool sends its own credentials via {{secret:NAME}}"},
    {"cookie2", false, "cookies are ambient credentials (M9)"},
    {"host", false, "the host comes from the checked URL only"},
    {"proxy-", true, "proxy headers address a proxy, and there is none"},
    {"connection", false, "a hop-by-hop header (RFC 9110 §7.6.1)"},
    {"keep-alive", false, "a hop-by-hop header (RFC 9110 §7.6.1)"},
    {"transfer-encoding", false, "message framing is libcurl's (RFC 9112 §6.1)"},
    {"content-length", false, "message framing is libcurl's (RFC 9112 §6.2)"},
    {"te", false, "a hop-by-hop header (RFC 9110 §10.1.4)"},
    {"trailer", false, "a hop-by-hop header (RFC 9110 §6.6.2)"},
    {"upgrade", false, "a protocol switch is not a fetch (RFC 9110 §7.8)"},
    {"expect", false, "Expect changes framing (RFC 9110 §10.1.1)"},
    {"x-http-method", false, "a method override would let a read grant write"},
    {"x-http-method-override", false, "a method override would let a read grant write"},
    {"x-method-override", false, "a method override would let a read grant write"},
};

// The entry refusing header `name`, or nullptr.
const RefusedHeader* refused_header(std::string_view name);

}  // namespace taskyon::capability
