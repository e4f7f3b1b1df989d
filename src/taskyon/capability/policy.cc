// The fetch policy's rules in the order policy.h lists them.
#include <algorithm>
#include <array>
#include <charconv>
#include <iterator>
#include <type_traits>

#include <fmt/format.h>

#include "taskyon/base/ascii.h"
#include "taskyon/capability/policy.h"
#include "taskyon/capability/url_parts.h"

namespace taskyon::capability {
namespace {

using namespace std::string_view_literals;

// Fetch standard §2.9 "port blocking": the bad ports, sorted.
constexpr BadPort kBadPorts[] = {
    {0, "reserved"},        {1, "tcpmux"},         {7, "echo"},          {9, "discard"},       {11, "systat"},
    {13, "daytime"},        {15, "netstat"},       {17, "qotd"},         {19, "chargen"},      {20, "ftp-data"},
    {21, "ftp"},            {22, "ssh"},           {23, "telnet"},       {25, "smtp"},         {37, "time"},
    {42, "name"},           {43, "nicname"},       {53, "domain"},       {69, "tftp"},         {77, "priv-rjs"},
    {79, "finger"},         {87, "ttylink"},       {95, "supdup"},       {101, "hostname"},    {102, "iso-tsap"},
    {103, "gppitnp"},       {104, "acr-nema"},     {109, "pop2"},        {110, "pop3"},        {111, "sunrpc"},
    {113, "auth"},          {115, "sftp"},         {117, "uucp-path"},   {119, "nntp"},        {123, "ntp"},
    {135, "epmap"},         {137, "netbios-ns"},   {139, "netbios-ssn"}, {143, "imap"},        {161, "snmp"},
    {179, "bgp"},           {389, "ldap"},         {427, "svrloc"},      {465, "submissions"}, {512, "exec"},
    {513, "login"},         {514, "shell"},        {515, "printer"},     {526, "tempo"},       {530, "courier"},
    {531, "chat"},          {532, "netnews"},      {540, "uucp"},        {548, "afp"},         {554, "rtsp"},
    {556, "remotefs"},      {563, "nntps"},        {587, "submission"},  {601, "syslog-conn"}, {636, "ldaps"},
    {989, "ftps-data"},     {990, "ftps"},         {993, "imaps"},       {995, "pop3s"},       {1719, "h323gatestat"},
    {1720, "h323hostcall"}, {1723, "pptp"},        {2049, "nfs"},        {3659, "apple-sasl"}, {4045, "npp"},
    {4190, "sieve"},        {5060, "sip"},         {5061, "sips"},       {6000, "x11"},        {6566, "sane-port"},
    {6665, "ircu"},         {6666, "ircu"},        {6667, "ircu"},       {6668, "ircu"},       {6669, "ircu"},
    {6679, "osaut"},        {6697, "ircs-u"},      {10080, "amanda"},
};

using ascii::iequals;
using ascii::to_lower;
using ascii::to_upper;

// RFC 9110 §5.6.2 tchar, as a table.
constexpr std::array<bool, 256> kTchar = [] {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = t[c - 0x20] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

// Quotes text from the input for a reason: printable ASCII and visible
// non-ASCII as they are; controls, invisible and format characters, quotes
// and backslashes escaped, so a reason shows exactly what was written.
std::string quote_text(std::string_view s, std::size_t max_bytes = 200) {
  std::string out = "\"";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::size_t i = 0;
  while (i < s.size()) {
    if (i >= max_bytes) {
      out += "..."sv;
      break;
    }
    const unsigned char c = p[i];
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
      else if (c == '"' || c == '\\') (out += '\\') += static_cast<char>(c);
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    // Decode one UTF-8 sequence (the parser only passes valid UTF-8 here;
    // anything else is shown byte by byte).
    std::size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    if (i + len > s.size() || len == 1 || !detail::is_utf8(s.substr(i, len))) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
      continue;
    }
    char32_t cp = len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    for (std::size_t k = 1; k < len; ++k) cp = cp << 6 | (p[i + k] & 0x3f);
    const bool invisible = (cp >= 0x80 && cp <= 0xa0) || cp == 0xad || cp == 0x34f || cp == 0x61c ||
                           (cp >= 0x115f && cp <= 0x1160) || (cp >= 0x17b4 && cp <= 0x17b5) ||
                           (cp >= 0x180b && cp <= 0x180f) || (cp >= 0x2000 && cp <= 0x200f) ||
                           (cp >= 0x2028 && cp <= 0x202f) || (cp >= 0x205f && cp <= 0x206f) || cp == 0x3000 ||
                           cp == 0x3164 || (cp >= 0xfe00 && cp <= 0xfe0f) || cp == 0xfeff || cp == 0xffa0 ||
                           (cp >= 0xfff0 && cp <= 0xfffb) || (cp >= 0xe0000 && cp <= 0xe0fff);
    if (invisible) out += fmt::format("\\u{{{:04x}}}", static_cast<std::uint32_t>(cp));
    else out.append(s.substr(i, len));
    i += len;
  }
  out += '"';
  return out;
}

// True when the host, as written, is not its canonical form (ASCII case aside).
bool spelled_differently(const Url& url, const std::string& serialized_host) {
  const std::string_view written = url.host_input;
  if (written.size() != serialized_host.size()) return true;
  for (std::size_t i = 0; i < written.size(); ++i)
    if (to_lower(written[i]) != serialized_host[i]) return true;
  return false;
}

void append_address(std::string& out, const IpAddress& a) {
  if (a.is_v4()) detail::append_ipv4(out, a.v4_value());
  else detail::append_ipv6(out, a.v6_pieces());
}

// "127.0.0.0/8, Loopback (RFC 1122)", and the IPv4 address an IPv6 one embeds.
void append_range(std::string& out, const IpAddress& address, const AddressRange& range) {
  out += range.prefix;
  out += ", "sv;
  out += range.name;
  out += " ("sv;
  out += range.source;
  out += ')';
  if (auto v4 = embedded_ipv4(address)) {
    out += ", which embeds "sv;
    append_address(out, *v4);
    const auto& inner = classify(*v4);
    if (inner.cls != AddressClass::global) detail::append_all(out, " ("sv, inner.prefix, ' ', inner.name, ')');
    out += "; the whole block is refused"sv;
  }
}

// Sets the verdict; the reason is already in d.reason. (decide() returns its
// one Decision by name, so nothing is moved.)
void deny(Decision& d, ReasonClass cls) {
  d.verdict = Verdict::deny;
  d.reason_class = cls;
}

void allow(Decision& d) {
  d.verdict = Verdict::allow;
  d.reason_class = ReasonClass::ok;
}

// A resolver that is never called: decide() stops before resolution
// (decide_url_unresolved).
struct Deferred {};

// The address rules for a domain host that passed every other rule: one
// refused answer refuses the name; no answer fails closed.
void judge_domain(Decision& d, std::span<const IpAddress> addresses, std::span<const Cidr> admit) {
  std::string& r = d.reason;
  r.clear();
  auto out = std::back_inserter(r);
  if (addresses.empty()) {
    fmt::format_to(out, "host \"{}\" resolved to no address (fail closed)", d.host);
    deny(d, ReasonClass::unresolved);
    return;
  }
  const Cidr* admitted = nullptr;  // the test-only rule that admitted a refused answer
  for (const IpAddress& a : addresses) {
    const AddressRange& range = classify(a);
    if (range.cls == AddressClass::global) continue;
    if (const Cidr* block = admitted_by(a, admit)) {
      admitted = block;
      continue;
    }
    (r += "host \""sv) += d.host;
    r += "\" resolves to "sv;
    append_address(r, a);
    r += ", in "sv;
    append_range(r, a, range);
    deny(d, reason_class_of(range.cls));
    return;
  }
  (r += "host \""sv) += d.host;
  r += "\" resolves to "sv;
  if (admitted) {
    fmt::format_to(out, "{} address(es), each globally reachable or admitted by the test-only allow rule {}",
                   addresses.size(), admitted->to_string());
  } else if (addresses.size() == 1) {
    append_address(r, addresses.front());
    r += ", a globally reachable address"sv;
  } else {
    char count[24];
    r.append(count, std::to_chars(count, count + sizeof count, addresses.size()).ptr);
    r += " addresses, all globally reachable"sv;
  }
  allow(d);
}

template <typename Resolve>
Decision decide(std::string_view input, std::string_view method, Resolve&& resolve, std::span<const Cidr> admit) {
  Decision d;
  {
    auto m = classify_method(method);
    d.access = m.access;
    d.method = std::move(m.method);
    d.method_reason = m.why;
  }
  std::string& r = d.reason;
  r.reserve(160);
  auto out = std::back_inserter(r);

  // The userinfo as written: any username or password is refused below,
  // whatever it holds, so encoding it would be wasted work.
  auto parsed = detail::parse_url_with(input, {}, detail::Userinfo::as_written);
  if (!parsed) {
    (r += "not a valid URL: "sv) += parsed.error().message;
    deny(d, ReasonClass::malformed);
    return d;
  }
  const Url& url = *parsed;
  if (!url.special()) {
    fmt::format_to(out, "scheme {} is refused: tool code fetches https only", quote_text(url.scheme));
    deny(d, ReasonClass::scheme);
    return d;
  }
  // href, origin and host from one serialization into the href. The href
  // leaves out any username and password: a decision is logged, and
  // credentials are secrets.
  std::string& href = d.href;
  href.reserve(url.scheme.size() + 3 + url.host.domain.size() + 48 + url.path.size() +
               (url.query ? url.query->size() + 1 : 0) + (url.fragment ? url.fragment->size() + 1 : 0));
  (href += url.scheme) += "://"sv;
  const std::size_t host_at = href.size();
  url.host.append_to(href);
  const std::size_t host_end = href.size();
  if (url.port) {
    char digits[8] = {':'};
    href.append(digits, std::to_chars(digits + 1, digits + sizeof digits, *url.port).ptr);
  }
  const std::size_t origin_end = href.size();
  href += url.path;
  if (url.query) (href += '?') += *url.query;
  if (url.fragment) (href += '#') += *url.fragment;
  d.host.assign(href, host_at, host_end - host_at);
  if (url.kind != Scheme::file) d.origin.assign(href, 0, origin_end);

  // Scheme and port (M4).
  if (url.kind != Scheme::https) {
    detail::append_all(r, "scheme \""sv, url.scheme, "\" is refused: tool code fetches https only"sv);
    deny(d, ReasonClass::scheme);
    return d;
  }
  if (const BadPort* bad = bad_port(url.port_or_default())) {
    fmt::format_to(out, "port {} ({}) is a bad port (Fetch standard, port blocking)", bad->port, bad->service);
    deny(d, ReasonClass::scheme);
    return d;
  }

  // Credentials (M5). The values are never quoted: they may be secrets.
  if (url.has_credentials()) {
    r = "the URL carries ";
    r += url.username.empty() ? "a password" : url.password.empty() ? "a username" : "a username and a password";
    r += "; credentials in URLs are refused"sv;
    deny(d, ReasonClass::credentials);
    return d;
  }

  // Local, private-network and metadata targets (M6): names, then addresses.
  const bool disguised = spelled_differently(url, d.host);
  if (url.host.kind == HostKind::domain) {
    if (const BlockedName* name = blocked_name(url.host.domain)) {
      if (disguised) {
        detail::append_all(r, "host "sv, quote_text(url.host_input), " is \""sv, d.host, "\", "sv, name->what, " ("sv,
                           name->source, ')');
        deny(d, ReasonClass::encoding_trick);
        return d;
      }
      detail::append_all(r, "host \""sv, d.host, "\" is "sv, name->what, " ("sv, name->source, ')');
      deny(d, name->cls);
      return d;
    }
    if constexpr (std::is_same_v<std::decay_t<Resolve>, Deferred>) {
      // Every rule that needs no DNS passed; the addresses are judged after
      // the grant (decide_addresses), so an ungranted origin is never resolved.
      fmt::format_to(out, "host \"{}\" is a domain name; its addresses are judged after the grant", d.host);
      d.awaiting_resolution = true;
      allow(d);
      return d;
    } else {
      judge_domain(d, resolve(std::string_view(url.host.domain)), admit);
      return d;
    }
  }

  const IpAddress& a = url.host.address;
  // The address as text is the host without brackets: no second serialization.
  const std::string_view text = a.is_v4() ? std::string_view(d.host) : std::string_view(d.host).substr(1, d.host.size() - 2);
  const AddressRange& range = classify(a);
  if (range.cls != AddressClass::global) {
    if (const Cidr* block = admitted_by(a, admit)) {
      fmt::format_to(out, "{} is in {}, admitted by the test-only allow rule {}", text, range.prefix, block->to_string());
      allow(d);
      return d;
    }
    const bool trick = disguised && url.host.kind == HostKind::ipv4;
    if (trick) detail::append_all(r, "host "sv, quote_text(url.host_input), " is "sv);
    r += text;
    r += trick ? ", in "sv : " is in "sv;
    append_range(r, a, range);
    deny(d, trick ? ReasonClass::encoding_trick : reason_class_of(range.cls));
    return d;
  }
  r += text;
  r += " is a globally reachable address"sv;
  allow(d);
  return d;
}

}  // namespace

std::string_view verdict_name(Verdict verdict) { return verdict == Verdict::allow ? "allow" : "deny"; }

std::string_view access_name(Access access) {
  switch (access) {
    case Access::read: return "read";
    case Access::write: return "write";
    case Access::reject: return "reject";
  }
  return "reject";
}

std::string_view reason_class_name(ReasonClass reason) {
  switch (reason) {
    case ReasonClass::ok: return "ok";
    case ReasonClass::scheme: return "scheme";
    case ReasonClass::credentials: return "credentials";
    case ReasonClass::malformed: return "malformed";
    case ReasonClass::loopback: return "loopback";
    case ReasonClass::private_network: return "private";
    case ReasonClass::link_local: return "link_local";
    case ReasonClass::metadata: return "metadata";
    case ReasonClass::unspecified: return "unspecified";
    case ReasonClass::ipv6_special: return "ipv6_special";
    case ReasonClass::encoding_trick: return "encoding_trick";
    case ReasonClass::unresolved: return "unresolved";
  }
  return "malformed";
}

ReasonClass reason_class_of(AddressClass cls) {
  switch (cls) {
    case AddressClass::global: return ReasonClass::ok;
    case AddressClass::unspecified: return ReasonClass::unspecified;
    case AddressClass::loopback: return ReasonClass::loopback;
    case AddressClass::private_network: return ReasonClass::private_network;
    case AddressClass::link_local: return ReasonClass::link_local;
    case AddressClass::metadata: return ReasonClass::metadata;
    case AddressClass::ipv6_special: return ReasonClass::ipv6_special;
  }
  return ReasonClass::private_network;
}

MethodClass classify_method(std::string_view method) {
  MethodClass m;
  m.method.assign(method);
  // The usual spellings first.
  if (method == "GET" || method == "HEAD" || method == "OPTIONS") {
    m.access = Access::read;
    m.why = "GET, HEAD and OPTIONS are read (RFC 9110 §9.2.1 safe methods)";
    return m;
  }
  if (method == "POST" || method == "PUT" || method == "DELETE" || method == "PATCH") {
    m.access = Access::write;
    m.why = "every method but GET, HEAD and OPTIONS is write";
    return m;
  }
  bool token = !method.empty();
  for (char c : method) token = token && kTchar[static_cast<unsigned char>(c)];
  if (!token) {
    m.access = Access::reject;
    m.why = "not an HTTP method token (RFC 9110 §9.1, §5.6.2)";
    return m;
  }
  if (iequals(method, "CONNECT") || iequals(method, "TRACE") || iequals(method, "TRACK")) {
    m.access = Access::reject;
    m.why = "a forbidden method (Fetch standard, forbidden method)";
    return m;
  }
  // Fetch standard "normalize a method": these six are upper-cased, any other token is kept.
  for (std::string_view known : {"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS"}) {
    if (iequals(method, known)) {
      for (char& c : m.method) c = to_upper(c);
      break;
    }
  }
  if (m.method == "GET" || m.method == "HEAD" || m.method == "OPTIONS") {
    m.access = Access::read;
    m.why = "GET, HEAD and OPTIONS are read (RFC 9110 §9.2.1 safe methods)";
  } else {
    m.access = Access::write;
    m.why = "every method but GET, HEAD and OPTIONS is write";
  }
  return m;
}

const BlockedName* blocked_name(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  for (const BlockedName& entry : kBlockedNames) {
    if (host == entry.name) return &entry;
    if (entry.subdomains && host.size() > entry.name.size() && host.ends_with(entry.name) &&
        host[host.size() - entry.name.size() - 1] == '.')
      return &entry;
  }
  return nullptr;
}

const BadPort* bad_port(std::uint16_t port) {
  if (port == 443) return nullptr;
  const auto it = std::lower_bound(std::begin(kBadPorts), std::end(kBadPorts), port,
                                   [](const BadPort& b, std::uint16_t p) { return b.port < p; });
  return it != std::end(kBadPorts) && it->port == port ? &*it : nullptr;
}

Decision decide_url(std::string_view url, std::string_view method, std::span<const IpAddress> resolved,
                    std::span<const Cidr> allow) {
  return decide(url, method, [resolved](std::string_view) { return resolved; }, allow);
}

Decision decide_url(std::string_view url, std::string_view method, const Resolver& resolve,
                    std::span<const Cidr> allow) {
  std::vector<IpAddress> answers;
  return decide(
      url, method,
      [&](std::string_view host) -> std::span<const IpAddress> {
        if (resolve) answers = resolve(host);
        return answers;
      },
      allow);
}

Decision decide_url_unresolved(std::string_view url, std::string_view method, std::span<const Cidr> allow) {
  return decide(url, method, Deferred{}, allow);
}

void decide_addresses(Decision& d, std::span<const IpAddress> resolved, std::span<const Cidr> allow) {
  if (!d.awaiting_resolution) return;
  d.awaiting_resolution = false;
  judge_domain(d, resolved, allow);
}

const Cidr* admitted_by(const IpAddress& address, std::span<const Cidr> allow) {
  for (const Cidr& block : allow)
    if (block.contains(address)) return &block;
  return nullptr;
}

}  // namespace taskyon::capability
