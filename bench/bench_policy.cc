// make bench: what a fetch policy decision costs (issue 5: at least 2 million
// URL policy decisions per second on one core for literal-address URLs).
//   PolicyDecision/literal   decide_url() over eight literal-address URLs, allowed and
//                            refused, IPv4 and IPv6, odd spellings (the target)
//   PolicyDecision/literal_public_ipv4, literal_loopback_ipv4   one URL each
//   PolicyDecision/domain    decide_url() for a domain with two stubbed answers
//   UrlParse                 parse_url() + href() alone
//   PolicyCorpus/decide      decide_url() over every URL of ../shared/corpora/ssrf_public.json
//                            with its stubbed `dns` answers (issue 19: >= 3 M/s on one core)
//   PolicyCorpus/parse       parse_url() alone over the same URLs: the parser's share
//   PolicyCorpus/copy        a std::string copy of each URL: the raw floor to divide by
#include <benchmark/benchmark.h>

#include <array>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/capability/policy.h"
#include "taskyon/json/json.h"

namespace {

using namespace taskyon::capability;

constexpr std::array<std::string_view, 8> kLiteralUrls = {
    "https://93.184.215.14/",
    "https://127.0.0.1/admin",
    "https://[2606:4700:4700::1111]/dns-query",
    "https://169.254.169.254/latest/meta-data/",
    "https://0x7f.1/",
    "https://[::ffff:127.0.0.1]/",
    "https://8.8.8.8:8443/path?q=1",
    "https://10.0.0.1/",
};

void PolicyDecisionLiteral(benchmark::State& state) {
  std::size_t i = 0, allowed = 0;
  for (auto _ : state) {
    const Decision d = decide_url(kLiteralUrls[i++ % kLiteralUrls.size()], "GET", std::span<const IpAddress>());
    allowed += d.verdict == Verdict::allow;
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["allowed"] = benchmark::Counter(static_cast<double>(allowed), benchmark::Counter::kAvgIterations);
}
BENCHMARK(PolicyDecisionLiteral)->Name("PolicyDecision/literal");

void PolicyDecisionOne(benchmark::State& state, std::string_view url) {
  for (auto _ : state) benchmark::DoNotOptimize(decide_url(url, "GET", std::span<const IpAddress>()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK_CAPTURE(PolicyDecisionOne, literal_public_ipv4, "https://93.184.215.14/api")
    ->Name("PolicyDecision/literal_public_ipv4");
BENCHMARK_CAPTURE(PolicyDecisionOne, literal_loopback_ipv4, "https://127.0.0.1/admin")
    ->Name("PolicyDecision/literal_loopback_ipv4");

void PolicyDecisionDomain(benchmark::State& state) {
  const std::vector<IpAddress> answers = {*IpAddress::parse("93.184.215.14"),
                                          *IpAddress::parse("2606:2800:21f:cb07:6820:80da:af6b:8b2c")};
  for (auto _ : state) {
    const Decision d = decide_url("https://api.example.com/v1/items?page=2", "POST", answers);
    if (d.verdict != Verdict::allow) state.SkipWithError("expected allow");
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(PolicyDecisionDomain)->Name("PolicyDecision/domain");

void UrlParse(benchmark::State& state) {
  for (auto _ : state) {
    auto url = parse_url("https://user@example.com:8443/a/./b/../c?x=1#frag");
    benchmark::DoNotOptimize(url->href());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(UrlParse);

struct CorpusUrl {
  std::string url, method;
  std::vector<IpAddress> dns;
};

// The public SSRF corpus as the SsrfCorpus suite reads it; empty when absent.
const std::vector<CorpusUrl>& corpus() {
  static const std::vector<CorpusUrl> urls = [] {
    std::vector<CorpusUrl> out;
    std::ifstream in(std::string(TASKYON_SOURCE_DIR) + "/../shared/corpora/ssrf_public.json", std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    auto doc = taskyon::json::parse(text.str());
    if (!doc || !doc->is_array()) return out;
    for (const auto& c : *doc) {
      CorpusUrl u{c.at("url").get<std::string>(), c.at("method").get<std::string>(), {}};
      if (c.contains("dns"))
        for (const auto& a : c["dns"]) u.dns.push_back(*IpAddress::parse(a.get<std::string>()));
      out.push_back(std::move(u));
    }
    return out;
  }();
  return urls;
}

void PolicyCorpusDecide(benchmark::State& state) {
  const auto& urls = corpus();
  if (urls.empty()) return state.SkipWithError("../shared/corpora/ssrf_public.json not found");
  std::size_t i = 0;
  for (auto _ : state) {
    const CorpusUrl& u = urls[i++ % urls.size()];
    benchmark::DoNotOptimize(decide_url(u.url, u.method, u.dns));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(PolicyCorpusDecide)->Name("PolicyCorpus/decide");

void PolicyCorpusParse(benchmark::State& state) {
  const auto& urls = corpus();
  if (urls.empty()) return state.SkipWithError("../shared/corpora/ssrf_public.json not found");
  std::size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(parse_url(urls[i++ % urls.size()].url));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(PolicyCorpusParse)->Name("PolicyCorpus/parse");

void PolicyCorpusCopy(benchmark::State& state) {
  const auto& urls = corpus();
  if (urls.empty()) return state.SkipWithError("../shared/corpora/ssrf_public.json not found");
  std::size_t i = 0;
  for (auto _ : state) {
    std::string copy(urls[i++ % urls.size()].url);
    benchmark::DoNotOptimize(copy);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(PolicyCorpusCopy)->Name("PolicyCorpus/copy");

}  // namespace
