// M4-M7: the fetch policy's decisions (capability/policy.h), on the exact
// strings tool code would pass to fetch. Decisions only: no request is made.
// The connect-time half of M6 needs a real transfer to the loopback server:
// it is M6.connect_time_check in checks_capabilities.cc.
#include <string>
#include <vector>

#include "taskyon/capability/policy.h"
#include "taskyon/diagnostics/groups.h"

namespace taskyon::diagnostics {
namespace {

namespace cap = taskyon::capability;

const std::vector<cap::IpAddress>& public_answer() {
  static const std::vector<cap::IpAddress> answer = {*cap::IpAddress::parse("93.184.215.14")};
  return answer;
}

cap::Decision decide(const std::string& url, const std::string& method = "GET",
                     const std::vector<cap::IpAddress>& resolved = public_answer()) {
  return cap::decide_url(url, method, cap::Resolver([&](std::string_view) { return resolved; }));
}

std::string why(const std::string& url, const cap::Decision& d) {
  return url + " -> " + std::string(cap::verdict_name(d.verdict)) + " (" +
         std::string(cap::reason_class_name(d.reason_class)) + ": " + d.reason + ")";
}

void expect_denied(const std::string& url, cap::ReasonClass cls,
                   const std::vector<cap::IpAddress>& resolved = public_answer()) {
  const auto d = decide(url, "GET", resolved);
  expect(d.verdict == cap::Verdict::deny && !d.admits(), "allowed: " + why(url, d));
  expect(d.reason_class == cls, "refused for another reason than " + std::string(cap::reason_class_name(cls)) +
                                    ": " + why(url, d));
}

Outcome https_only(Env&) {
  const auto ok = decide("https://example.com/data");
  expect(ok.admits() && ok.origin == "https://example.com", "a public HTTPS URL is not admitted: " +
                                                                 why("https://example.com/data", ok));
  for (const char* url : {"http://example.com/", "ws://example.com/", "wss://example.com/", "ftp://example.com/",
                          "file:///etc/passwd", "data:text/plain,x", "gopher://example.com/", "HTTP://example.com/"})
    expect_denied(url, cap::ReasonClass::scheme);
  expect_denied("https://example.com:25/", cap::ReasonClass::scheme);  // the Fetch standard's bad ports
  return pass("only https: is admitted (http, ws, ftp, file, data, gopher and bad ports refused)");
}

Outcome credentials_refused(Env&) {
  for (const char* url : {"https://user:pass@example.com/", "https://user@example.com/", "https://:pw@example.com/",
                          "https://us%65r@example.com/"})
    expect_denied(url, cap::ReasonClass::credentials);
  const auto d = decide("https://example.com/@user:pass");
  expect(d.admits(), "an @ in the path was taken for credentials: " + why("https://example.com/@user:pass", d));
  return pass("a URL with a user name or password is refused, however spelled");
}

Outcome local_targets_blocked(Env&) {
  using RC = cap::ReasonClass;
  const std::vector<std::pair<std::string, RC>> cases = {
      {"https://127.0.0.1/", RC::loopback},
      {"https://[::1]/", RC::loopback},
      {"https://localhost/", RC::loopback},
      {"https://api.localhost/", RC::loopback},
      {"https://10.0.0.1/", RC::private_network},
      {"https://192.168.1.1/", RC::private_network},
      {"https://[fd00::1]/", RC::private_network},
      {"https://169.254.169.254/latest/meta-data/", RC::metadata},
      {"https://metadata.google.internal/", RC::metadata},
      {"https://[fe80::1]/", RC::link_local},
      {"https://0.0.0.0/", RC::unspecified},
      {"https://[::ffff:127.0.0.1]/", RC::ipv6_special},
      {"https://0x7f.1/", RC::encoding_trick},
      {"https://2130706433/", RC::encoding_trick},
      {"https://127.0.0.1./", RC::encoding_trick},
      {"https://loc%61lhost/", RC::encoding_trick},
  };
  for (const auto& [url, cls] : cases) expect_denied(url, cls);
  return pass("loopback, private, link-local, metadata and unspecified targets are refused, in every encoding");
}

Outcome resolved_addresses_checked(Env&) {
  const auto loopback = *cap::IpAddress::parse("127.0.0.1");
  const auto metadata = *cap::IpAddress::parse("169.254.169.254");
  expect_denied("https://rebind.example/", cap::ReasonClass::loopback, {loopback});
  expect_denied("https://rebind.example/", cap::ReasonClass::metadata, {public_answer()[0], metadata});
  expect_denied("https://nowhere.example/", cap::ReasonClass::unresolved, {});
  // The resolver overload asks for the name's addresses and judges them.
  std::vector<std::string> asked;
  const auto d = cap::decide_url("https://rebind.example/", "GET", cap::Resolver([&](std::string_view host) {
                                   asked.emplace_back(host);
                                   return std::vector<cap::IpAddress>{loopback};
                                 }));
  expect(asked == std::vector<std::string>{"rebind.example"}, "the resolver was not asked for the host");
  expect(!d.admits(), "a name resolving to loopback was admitted through the resolver");
  return pass("a name is refused when any resolved address is local, private or metadata, or none resolves");
}

Outcome methods_classified(Env&) {
  for (const char* m : {"GET", "HEAD", "OPTIONS", "get", "Head"}) {
    const auto c = cap::classify_method(m);
    expect(c.access == cap::Access::read, std::string(m) + " is not read");
  }
  for (const char* m : {"POST", "PUT", "DELETE", "PATCH", "post", "PROPFIND"}) {
    const auto c = cap::classify_method(m);
    expect(c.access == cap::Access::write, std::string(m) + " is not write");
  }
  for (const char* m : {"CONNECT", "TRACE", "TRACK", "connect", "Trace", "track", "GE T", "", "G\nET"}) {
    const auto c = cap::classify_method(m);
    expect(c.access == cap::Access::reject, "method \"" + std::string(m) + "\" is not refused");
    const auto d = decide("https://example.com/", m);
    expect(!d.admits(), "a request with method \"" + std::string(m) + "\" was admitted");
  }
  expect(cap::classify_method("get").method == "GET", "get was not normalized to GET");
  return pass("GET/HEAD/OPTIONS read, other tokens write; CONNECT, TRACE, TRACK and non-tokens refused");
}

}  // namespace

void add_policy_checks(Registry& r) {
  add(r, {"M4", "https_only", "only https: URLs are admitted; other schemes and bad ports refused", https_only});
  add(r, {"M5", "url_credentials_refused", "a URL with user name or password is refused", credentials_refused});
  add(r, {"M6", "local_targets_blocked", "loopback/private/metadata targets refused in every encoding",
          local_targets_blocked});
  add(r, {"M6", "resolved_addresses_checked", "a name resolving to any local address is refused",
          resolved_addresses_checked});
  add(r, {"M7", "methods_classified", "read/write classes; CONNECT, TRACE, TRACK refused", methods_classified});
}

}  // namespace taskyon::diagnostics
