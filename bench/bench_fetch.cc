// make bench: the latency the whole fetch policy path adds over a bare libcurl
// request (issue 5: at most 1.1x). Both go to the same loopback HTTPS server
// (src/taskyon/loopback/), GET /ok, with the same TLS setup (the test CA as the
// only trust anchor, peer and host verified, TLS 1.2 minimum) and the same
// connection policy: a new easy handle per request, so no connection reuse in
// either.
//   Fetch/policy_vs_bare  one bare request and one capability::fetch per
//                         iteration, interleaved so both see the same machine
//                         load; counters bare_us, policy_us (mean wall time
//                         per request) and ratio = policy_us / bare_us.
//   Fetch/bare, Fetch/policy   each alone, wall time.
#include <benchmark/benchmark.h>
#include <curl/curl.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "taskyon/capability/fetch.h"
#include "taskyon/loopback/loopback.h"

namespace {

using namespace taskyon;
using Clock = std::chrono::steady_clock;

// One server for the whole run, in a directory removed at exit.
struct Loopback {
  std::filesystem::path dir;
  std::unique_ptr<loopback::HttpsServer> server;
  std::string error;

  Loopback() {
    char tmpl[] = "/tmp/taskyon-bench-fetch-XXXXXX";
    if (!mkdtemp(tmpl)) {
      error = "mkdtemp failed";
      return;
    }
    dir = tmpl;
    loopback::ServerOptions options;
    options.dir = dir;
    auto started = loopback::HttpsServer::start(options);
    if (!started) error = started.error().describe();
    else server = std::move(*started);
  }
  ~Loopback() {
    server.reset();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

Loopback& loopback_server() {
  static Loopback instance;
  return instance;
}

std::size_t collect(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// The bare request: only what any careful libcurl client sets for TLS.
bool bare_get(const std::string& url, const std::string& ca_file) {
  CURL* c = curl_easy_init();
  std::string body;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CAINFO, ca_file.c_str());
  curl_easy_setopt(c, CURLOPT_CAPATH, static_cast<const char*>(nullptr));
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  curl_easy_setopt(c, CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  const bool ok = curl_easy_perform(c) == CURLE_OK;
  curl_easy_cleanup(c);
  return ok && !body.empty();
}

capability::FetchContext policy_context(const loopback::HttpsServer& server) {
  capability::FetchContext c;
  c.rules.allow = {*capability::Cidr::parse("127.0.0.1/32")};
  c.rules.ca_file = server.ca_file().string();
  const std::string origin = server.origin();
  c.grant = [origin](std::string_view o, capability::Access a) -> std::optional<capability::FetchLimits> {
    if (o != origin || a != capability::Access::read) return std::nullopt;
    return capability::FetchLimits{};
  };
  c.secret = [](std::string_view, std::string_view) -> std::optional<std::string> { return std::nullopt; };
  return c;
}

bool policy_get(const std::string& url, const capability::FetchContext& c) {
  const auto r = capability::fetch({.url = url, .method = "GET", .headers = {}, .body = {}}, c);
  return r.response && r.response->status == 200;
}

void FetchPolicyVsBare(benchmark::State& state) {
  Loopback& lb = loopback_server();
  if (!lb.server) return state.SkipWithError(("loopback server: " + lb.error).c_str());
  const std::string url = lb.server->url("/ok");
  const std::string ca = lb.server->ca_file().string();
  const auto context = policy_context(*lb.server);
  bare_get(url, ca);  // warm-up: curl_global_init, page cache for the CA file
  Clock::duration bare{}, policy{};
  for (auto _ : state) {
    auto t0 = Clock::now();
    if (!bare_get(url, ca)) return state.SkipWithError("bare request failed");
    auto t1 = Clock::now();
    if (!policy_get(url, context)) return state.SkipWithError("policy request failed");
    auto t2 = Clock::now();
    bare += t1 - t0;
    policy += t2 - t1;
  }
  const double n = static_cast<double>(state.iterations());
  const double bare_us = std::chrono::duration<double, std::micro>(bare).count() / n;
  const double policy_us = std::chrono::duration<double, std::micro>(policy).count() / n;
  state.counters["bare_us"] = bare_us;
  state.counters["policy_us"] = policy_us;
  state.counters["ratio"] = policy_us / bare_us;
}
BENCHMARK(FetchPolicyVsBare)->Name("Fetch/policy_vs_bare")->UseRealTime()->MinTime(3.0);

void FetchBare(benchmark::State& state) {
  Loopback& lb = loopback_server();
  if (!lb.server) return state.SkipWithError(("loopback server: " + lb.error).c_str());
  const std::string url = lb.server->url("/ok");
  const std::string ca = lb.server->ca_file().string();
  for (auto _ : state)
    if (!bare_get(url, ca)) return state.SkipWithError("bare request failed");
}
BENCHMARK(FetchBare)->Name("Fetch/bare")->UseRealTime()->Unit(benchmark::kMicrosecond);

void FetchPolicy(benchmark::State& state) {
  Loopback& lb = loopback_server();
  if (!lb.server) return state.SkipWithError(("loopback server: " + lb.error).c_str());
  const std::string url = lb.server->url("/ok");
  const auto context = policy_context(*lb.server);
  for (auto _ : state)
    if (!policy_get(url, context)) return state.SkipWithError("policy request failed");
}
BENCHMARK(FetchPolicy)->Name("Fetch/policy")->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
