// The fetch policy (policy.h) against ../shared/corpora/ssrf_public.json, read
// as it is: one parameterized test per case id, resolution stubbed with the
// case's `dns` answers (never live DNS). Then the rules one by one.
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/capability/policy.h"
#include "taskyon/json/json.h"

namespace taskyon::capability {
namespace {

namespace fs = std::filesystem;

struct CorpusCase {
  std::string id;
  std::string url;
  std::string method;
  std::string expect;
  std::string reason_class;
  std::string access;
  std::optional<std::string> whatwg_host;
  std::vector<std::string> dns;
  std::string load_error;  // set on the single case standing for an unreadable corpus
};

const fs::path kCorpus = fs::path(TASKYON_SOURCE_DIR) / ".." / "shared" / "corpora" / "ssrf_public.json";

std::vector<CorpusCase> load_corpus() {
  auto broken = [](std::string why) {
    CorpusCase c;
    c.id = "corpus";
    c.load_error = std::move(why);
    return std::vector<CorpusCase>{c};
  };
  std::ifstream in(kCorpus, std::ios::binary);
  if (!in) return broken("cannot open " + kCorpus.string() + " (CI keeps shared/ beside the clone)");
  std::stringstream text;
  text << in.rdbuf();
  auto doc = json::parse(text.str());
  if (!doc) return broken(kCorpus.string() + ": " + doc.error().describe());
  if (!doc->is_array() || doc->empty()) return broken(kCorpus.string() + ": not a non-empty JSON list");
  std::vector<CorpusCase> cases;
  try {
    for (const auto& c : *doc) {
      CorpusCase k;
      k.id = c.at("id").get<std::string>();
      k.url = c.at("url").get<std::string>();
      k.method = c.at("method").get<std::string>();
      k.expect = c.at("expect").get<std::string>();
      k.reason_class = c.at("reason_class").get<std::string>();
      k.access = c.at("access").get<std::string>();
      if (c.contains("whatwg_host") && !c["whatwg_host"].is_null()) k.whatwg_host = c["whatwg_host"].get<std::string>();
      if (c.contains("dns"))
        for (const auto& a : c["dns"]) k.dns.push_back(a.get<std::string>());
      cases.push_back(std::move(k));
    }
  } catch (const std::exception& e) {
    return broken(kCorpus.string() + ": unexpected case shape: " + e.what());
  }
  return cases;
}

class SsrfCorpus : public ::testing::TestWithParam<CorpusCase> {};

TEST_P(SsrfCorpus, Case) {
  const CorpusCase& c = GetParam();
  ASSERT_TRUE(c.load_error.empty()) << c.load_error;

  std::vector<IpAddress> answers;
  for (const auto& text : c.dns) {
    auto a = IpAddress::parse(text);
    ASSERT_TRUE(a.has_value()) << "dns answer is not an address: " << text;
    answers.push_back(*a);
  }
  std::vector<std::string> asked;
  const Decision d = decide_url(c.url, c.method, [&](std::string_view host) {
    asked.emplace_back(host);
    return answers;
  });

  EXPECT_EQ(verdict_name(d.verdict), c.expect) << d.reason;
  EXPECT_EQ(access_name(d.access), c.access) << d.method << ": " << d.method_reason;
  EXPECT_EQ(reason_class_name(d.reason_class), c.reason_class) << d.reason;
  EXPECT_EQ(d.admits(), c.expect == "allow" && c.access != "reject");

  // The host is the one the WHATWG standard (Node) sees, and only it is resolved.
  auto url = parse_url(c.url);
  if (!c.whatwg_host) {
    EXPECT_FALSE(url.has_value()) << "Node refuses this URL; we parsed " << url->href();
  } else {
    ASSERT_TRUE(url.has_value()) << url.error().describe();
    if (url->special()) {
      EXPECT_EQ(url->host.serialize(), *c.whatwg_host);
    }
  }
  EXPECT_LE(asked.size(), 1u);
  if (!asked.empty()) {
    ASSERT_TRUE(c.whatwg_host.has_value());
    EXPECT_EQ(asked.front(), *c.whatwg_host);
  }
}

std::string case_name(const ::testing::TestParamInfo<CorpusCase>& info) {
  std::string name = info.param.id;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Public, SsrfCorpus, ::testing::ValuesIn(load_corpus()), case_name);

// --- The rules one by one ------------------------------------------------------------

const IpAddress kPublic = *IpAddress::parse("93.184.215.14");

Decision decide(std::string_view url, std::string_view method = "GET", std::vector<IpAddress> answers = {kPublic}) {
  return decide_url(url, method, std::span<const IpAddress>(answers));
}

TEST(CapabilityPolicy, AllowedDecisionCarriesTheCanonicalUrlAndOrigin) {
  const Decision d = decide("HTTPS://Example.COM:443/a/../b?q#f", "get");
  EXPECT_EQ(d.verdict, Verdict::allow);
  EXPECT_EQ(d.reason_class, ReasonClass::ok);
  EXPECT_EQ(d.access, Access::read);
  EXPECT_EQ(d.method, "GET");
  EXPECT_EQ(d.href, "https://example.com/b?q#f");
  EXPECT_EQ(d.origin, "https://example.com");
  EXPECT_EQ(d.host, "example.com");
  EXPECT_TRUE(d.admits());
  EXPECT_NE(d.reason.find("93.184.215.14"), std::string::npos) << d.reason;

  EXPECT_EQ(decide("https://[2606:4700:4700::1111]:8443/").origin, "https://[2606:4700:4700::1111]:8443");
}

TEST(CapabilityPolicy, MethodsFollowTheFetchStandard) {
  struct Row {
    std::string_view given, normalized;
    Access access;
  };
  const Row rows[] = {
      {"GET", "GET", Access::read},          {"get", "GET", Access::read},        {"Head", "HEAD", Access::read},
      {"oPtIoNs", "OPTIONS", Access::read},  {"post", "POST", Access::write},     {"put", "PUT", Access::write},
      {"delete", "DELETE", Access::write},   {"patch", "patch", Access::write},   {"PATCH", "PATCH", Access::write},
      {"PROPFIND", "PROPFIND", Access::write}, {"M-SEARCH", "M-SEARCH", Access::write},
      {"x!#$%&'*+-.^_`|~9", "x!#$%&'*+-.^_`|~9", Access::write},
      {"CONNECT", "CONNECT", Access::reject}, {"connect", "connect", Access::reject}, {"Trace", "Trace", Access::reject},
      {"track", "track", Access::reject},     {"", "", Access::reject},            {"GET ", "GET ", Access::reject},
      {"G ET", "G ET", Access::reject},       {"GET\r\nX: 1", "GET\r\nX: 1", Access::reject},
      {"G\xc3\x89T", "G\xc3\x89T", Access::reject}, {"GET(", "GET(", Access::reject}, {"GE:T", "GE:T", Access::reject},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(std::string(row.given));
    const MethodClass m = classify_method(row.given);
    EXPECT_EQ(m.method, row.normalized);
    EXPECT_EQ(m.access, row.access);
    EXPECT_FALSE(m.why.empty());
  }
}

TEST(CapabilityPolicy, RejectedMethodLeavesTheUrlVerdictAlone) {
  const Decision d = decide("https://example.com/", "TRACE");
  EXPECT_EQ(d.verdict, Verdict::allow);
  EXPECT_EQ(d.access, Access::reject);
  EXPECT_FALSE(d.admits());
}

TEST(CapabilityPolicy, SchemesOtherThanHttpsAreRefused) {
  for (std::string_view url : {"http://example.com/", "ws://example.com/", "wss://example.com/", "ftp://example.com/",
                               "file:///etc/passwd", "gopher://example.com/", "data:,x", "HTTPS+UNIX://x/"}) {
    SCOPED_TRACE(std::string(url));
    const Decision d = decide(url);
    EXPECT_EQ(d.verdict, Verdict::deny);
    EXPECT_EQ(d.reason_class, ReasonClass::scheme) << d.reason;
  }
  EXPECT_NE(decide("gopher://x/").reason.find("\"gopher\""), std::string::npos);
}

TEST(CapabilityPolicy, EveryFetchBadPortIsRefused) {
  const int bad[] = {0,   1,   7,   9,   11,  13,  15,  17,  19,  20,  21,   22,   23,   25,   37,   42,   43,
                     53,  69,  77,  79,  87,  95,  101, 102, 103, 104, 109,  110,  111,  113,  115,  117,  119,
                     123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512,  513,  514,  515,  526,  530,  531,
                     532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990,  993,  995,  1719, 1720, 1723, 2049,
                     3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080};
  int refused = 0;
  for (int port = 0; port <= 65535; ++port) {
    const bool listed = std::find(std::begin(bad), std::end(bad), port) != std::end(bad);
    EXPECT_EQ(bad_port(static_cast<std::uint16_t>(port)) != nullptr, listed) << port;
    refused += listed;
  }
  EXPECT_EQ(refused, 83);
  const Decision d = decide("https://example.com:6000/");
  EXPECT_EQ(d.reason_class, ReasonClass::scheme);
  EXPECT_NE(d.reason.find("6000 (x11)"), std::string::npos) << d.reason;
  EXPECT_EQ(decide("https://example.com:80/").verdict, Verdict::allow);  // a bad port only if listed
}

TEST(CapabilityPolicy, CredentialsAreRefusedWithoutQuotingThem) {
  for (std::string_view url : {"https://user:hunter2@example.com/", "https://hunter2@example.com/",
                               "https://:hunter2@example.com/", "https://a@b@example.com/"}) {
    SCOPED_TRACE(std::string(url));
    const Decision d = decide(url);
    EXPECT_EQ(d.reason_class, ReasonClass::credentials);
    EXPECT_EQ(d.reason.find("hunter2"), std::string::npos) << d.reason;
    EXPECT_EQ(d.href.find("hunter2"), std::string::npos) << d.href;
    EXPECT_EQ(d.href.find('@'), std::string::npos) << d.href;
  }
  EXPECT_EQ(decide("https://@example.com/").verdict, Verdict::allow);
  EXPECT_EQ(decide("https://:@example.com/").verdict, Verdict::allow);
}

TEST(CapabilityPolicy, BlockedNamesAreExactOrLocalhostSubdomains) {
  EXPECT_NE(blocked_name("localhost"), nullptr);
  EXPECT_NE(blocked_name("localhost."), nullptr);
  EXPECT_NE(blocked_name("a.b.localhost"), nullptr);
  EXPECT_NE(blocked_name("metadata.google.internal."), nullptr);
  EXPECT_NE(blocked_name("instance-data"), nullptr);
  EXPECT_EQ(blocked_name("localhost.example.com"), nullptr);
  EXPECT_EQ(blocked_name("notlocalhost"), nullptr);
  EXPECT_EQ(blocked_name("metadata.google.internal.example.com"), nullptr);
  EXPECT_EQ(blocked_name("x.metadata.google.internal"), nullptr);  // resolved and judged by address instead
  EXPECT_EQ(blocked_name("localhost.."), nullptr);

  // A blocked name is refused before (and without) resolution.
  int asked = 0;
  const Decision d = decide_url("https://foo.localhost/", "GET", [&](std::string_view) {
    ++asked;
    return std::vector<IpAddress>{kPublic};
  });
  EXPECT_EQ(d.reason_class, ReasonClass::loopback);
  EXPECT_EQ(asked, 0);
}

TEST(CapabilityPolicy, DomainsNeedEveryAnswerPublicAndAtLeastOne) {
  const Decision none = decide("https://example.com/", "GET", {});
  EXPECT_EQ(none.verdict, Verdict::deny);
  EXPECT_EQ(none.reason_class, ReasonClass::unresolved);

  const Decision mixed = decide("https://example.com/", "GET", {kPublic, *IpAddress::parse("fe80::1")});
  EXPECT_EQ(mixed.reason_class, ReasonClass::link_local);
  EXPECT_NE(mixed.reason.find("fe80::/10"), std::string::npos) << mixed.reason;

  const Decision mapped = decide("https://example.com/", "GET", {*IpAddress::parse("::ffff:169.254.169.254")});
  EXPECT_EQ(mapped.reason_class, ReasonClass::ipv6_special);
  EXPECT_NE(mapped.reason.find("embeds 169.254.169.254"), std::string::npos) << mapped.reason;

  const Decision many = decide("https://example.com/", "GET", {kPublic, *IpAddress::parse("2606:4700:4700::1111")});
  EXPECT_EQ(many.verdict, Verdict::allow);

  // A null resolver resolves nothing.
  EXPECT_EQ(decide_url("https://example.com/", "GET", Resolver{}).reason_class, ReasonClass::unresolved);
}

TEST(CapabilityPolicy, LiteralAddressesAreNeverResolved) {
  int asked = 0;
  const Resolver resolver = [&](std::string_view) {
    ++asked;
    return std::vector<IpAddress>{};
  };
  EXPECT_EQ(decide_url("https://93.184.215.14/", "GET", resolver).verdict, Verdict::allow);
  EXPECT_EQ(decide_url("https://[::1]/", "GET", resolver).reason_class, ReasonClass::loopback);
  EXPECT_EQ(decide_url("http://example.com/", "GET", resolver).reason_class, ReasonClass::scheme);
  EXPECT_EQ(asked, 0);
  // ... and resolved answers do not override a literal.
  EXPECT_EQ(decide("https://127.0.0.1/", "GET", {kPublic}).reason_class, ReasonClass::loopback);
}

TEST(CapabilityPolicy, OddSpellingsAreJudgedByWhatTheyParseTo) {
  struct Row {
    std::string_view url;
    ReasonClass cls;
  };
  const Row rows[] = {
      {"https://0x7f.1/", ReasonClass::encoding_trick},
      {"https://127.0.0.1./", ReasonClass::encoding_trick},
      {"https://LOCALHOST/", ReasonClass::loopback},  // case alone is not a trick
      {"https://loc%61lhost/", ReasonClass::encoding_trick},
      {"https://local\u00adhost/", ReasonClass::encoding_trick},  // soft hyphen maps to nothing
      {"https://[0:0:0:0:0:0:0:1]/", ReasonClass::loopback},       // IPv6 spellings are judged by class
      {"https://0127.0.0.1/", ReasonClass::ok},                    // octal 0127 = 87: public
      {"https://ex%61mple.com/", ReasonClass::ok},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(std::string(row.url));
    EXPECT_EQ(decide(row.url).reason_class, row.cls) << decide(row.url).reason;
  }
  // The reason quotes the spelling, invisible characters escaped.
  const Decision zw = decide("https://local\u200bhost/");
  EXPECT_NE(zw.reason.find("\"local\\u{200b}host\""), std::string::npos) << zw.reason;
  const Decision hex = decide("https://0x7f.1/");
  EXPECT_NE(hex.reason.find("\"0x7f.1\" is 127.0.0.1, in 127.0.0.0/8"), std::string::npos)
      << hex.reason;
}

TEST(CapabilityPolicy, MalformedUrlsSayWhy) {
  const Decision d = decide("https://[::1/");
  EXPECT_EQ(d.reason_class, ReasonClass::malformed);
  EXPECT_NE(d.reason.find("IPv6-unclosed"), std::string::npos) << d.reason;
  EXPECT_TRUE(d.href.empty());
  EXPECT_EQ(decide(std::string(100 * 1024, 'a')).reason_class, ReasonClass::malformed);
}

}  // namespace
}  // namespace taskyon::capability
