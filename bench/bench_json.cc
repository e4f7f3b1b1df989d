// make bench: canonical JSON + SHA-256 against raw SHA-256 of the same bytes
// (issue 19: canonicalize + hash of typical JSON >= 70 % of raw SHA-256).
//   Json/raw_sha256          sha256_hex over the canonical bytes (the floor)
//   Json/content_id_of       canonicalize streamed into SHA-256 (what ids cost)
//   Json/canonicalize        the canonical text alone
//   Json/walk                a plain recursive walk of the same Value reading every
//                            member name's and string's bytes and every number: a
//                            floor no writer over nlohmann's DOM can go below
//   Json/ratio               all in one run: counter vs_raw_sha256 = raw time / ours;
//                            floor = raw / (raw + walk), the best such a writer can reach
// "Typical JSON": a tool manifest, a conversation of calls and results with
// text, numbers (integers and fractions), nested objects and arrays.
#include <benchmark/benchmark.h>

#include <time.h>

#include <bit>
#include <chrono>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "taskyon/json/json.h"

namespace {

using taskyon::json::Value;

Value typical() {
  Value doc = Value::object();
  doc["name"] = "weather_lookup";
  doc["description"] = "Looks up the forecast for a city and returns temperatures in \u00b0C, wind and a summary.";
  doc["parameters"] = {{"type", "object"},
                       {"properties",
                        {{"city", {{"type", "string"}, {"minLength", 1}, {"maxLength", 200}}},
                         {"days", {{"type", "integer"}, {"minimum", 1}, {"maximum", 14}}},
                         {"units", {{"enum", {"metric", "imperial"}}}}}},
                       {"required", {"city"}}};
  doc["code"] = "async ({city, days = 3}) => {\n  const r = await fetch(`https://api.example.com/v1/forecast?city=${"
                "encodeURIComponent(city)}&days=${days}`);\n  if (!r.ok) throw new Error(\"HTTP \" + r.status);\n  "
                "return await r.json();\n}\n";
  Value turns = Value::array();
  for (int i = 0; i < 40; ++i) {
    turns.push_back({{"role", "assistant"},
                     {"content", {{"functionCall", {{"name", "weather_lookup"},
                                                    {"arguments", {{"city", fmt::format("City number {}", i)},
                                                                   {"days", i % 14 + 1}}}}}}}});
    Value days = Value::array();
    for (int d = 0; d < 3; ++d)
      days.push_back({{"day", d}, {"min", -3.5 + i * 0.25 + d}, {"max", 12.75 + i * 0.1}, {"wind_kmh", 17 + d},
                      {"summary", "partly cloudy, light rain in the afternoon"}});
    turns.push_back({{"role", "tool"},
                     {"content", {{"toolResult", {{"result", {{"days", days}, {"source", "example"}}},
                                                  {"logs", Value::array()}}}}}});
  }
  doc["turns"] = std::move(turns);
  return doc;
}

const Value& doc() {
  static const Value v = typical();
  return v;
}
const std::string& bytes() {
  static const std::string b = *taskyon::json::canonicalize(doc());
  return b;
}

// Reads what a writer must read: every member name's and string's bytes (one
// pass, as an escape scan does), every number, in container order.
std::uint64_t walk(const Value& v) {
  const auto bytes_of = [](const std::string& s) {
    std::uint64_t h = s.size();
    for (unsigned char c : s) h += c;
    return h;
  };
  std::uint64_t sum = 0;
  switch (v.type()) {
    case Value::value_t::object:
      for (const auto& [name, value] : v.get_ref<const Value::object_t&>()) sum += bytes_of(name) + walk(value);
      return sum;
    case Value::value_t::array:
      for (const auto& element : v.get_ref<const Value::array_t&>()) sum += walk(element);
      return sum;
    case Value::value_t::string: return bytes_of(v.get_ref<const std::string&>());
    case Value::value_t::number_float: return std::bit_cast<std::uint64_t>(*v.get_ptr<const double*>());
    case Value::value_t::number_integer: return static_cast<std::uint64_t>(*v.get_ptr<const std::int64_t*>());
    case Value::value_t::number_unsigned: return *v.get_ptr<const std::uint64_t*>();
    case Value::value_t::boolean: return *v.get_ptr<const bool*>() ? 1 : 0;
    default: return 0;
  }
}

void RawSha256(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(taskyon::json::sha256_hex(bytes()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes().size()));
}
BENCHMARK(RawSha256)->Name("Json/raw_sha256");

void ContentIdOf(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(taskyon::json::content_id_of(doc()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes().size()));
}
BENCHMARK(ContentIdOf)->Name("Json/content_id_of");

void Canonicalize(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(taskyon::json::canonicalize(doc()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes().size()));
}
BENCHMARK(Canonicalize)->Name("Json/canonicalize");

void Walk(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(walk(doc()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes().size()));
}
BENCHMARK(Walk)->Name("Json/walk");

// Both measured in the same iteration, so the ratio is of one run.
void Ratio(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  constexpr int kRounds = 50;
  double raw = 0, ours = 0, walked = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    for (int i = 0; i < kRounds; ++i) benchmark::DoNotOptimize(taskyon::json::sha256_hex(bytes()));
    auto t1 = Clock::now();
    for (int i = 0; i < kRounds; ++i) benchmark::DoNotOptimize(taskyon::json::content_id_of(doc()));
    auto t2 = Clock::now();
    for (int i = 0; i < kRounds; ++i) benchmark::DoNotOptimize(walk(doc()));
    auto t3 = Clock::now();
    raw += std::chrono::duration<double>(t1 - t0).count();
    ours += std::chrono::duration<double>(t2 - t1).count();
    walked += std::chrono::duration<double>(t3 - t2).count();
  }
  state.counters["vs_raw_sha256"] = raw / ours;   // 1.0: as fast as hashing the bytes alone
  state.counters["floor"] = raw / (raw + walked);  // hashing plus the bare walk
  state.counters["bytes"] = static_cast<double>(bytes().size());
}
BENCHMARK(Ratio)->Name("Json/ratio");

}  // namespace

namespace {

// The 100 KiB argument of CallPath/arg100k (an array of small objects): what
// writing it into a call frame costs (thread CPU time), each into one reused
// string as the pool does: nlohmann's serializer against the canonical
// writer; canonical_x_dump = canonical time / dump time; walk_us: the bare
// walk above over the same Value (what any writer over the DOM must pay).
Value args100k() {
  Value a = Value::array();
  std::size_t bytes = 0;
  for (int i = 0; bytes < (100u << 10); ++i) {
    Value item = {{"k", i}, {"v", "abcdefgh"}};
    bytes += item.dump().size() + 1;
    a.push_back(std::move(item));
  }
  return {{"a", std::move(a)}, {"b", 1}};
}

// CPU time of the calling thread, seconds: the machine is shared.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void Args100k(benchmark::State& state) {
  const Value args = args100k();
  std::string out;
  double dump = 0, canonical = 0, walked = 0;
  for (auto _ : state) {
    const double t0 = thread_seconds();
    for (int i = 0; i < 20; ++i) {
      out.clear();
      nlohmann::detail::serializer<Value> s(nlohmann::detail::output_adapter<char>(out), ' ',
                                            Value::error_handler_t::strict);
      s.dump(args, false, false, 0);
      benchmark::DoNotOptimize(out.data());
    }
    const double t1 = thread_seconds();
    for (int i = 0; i < 20; ++i) {
      out.clear();
      benchmark::DoNotOptimize(taskyon::json::canonicalize_into(args, out));
    }
    const double t2 = thread_seconds();
    for (int i = 0; i < 20; ++i) benchmark::DoNotOptimize(walk(args));
    const double t3 = thread_seconds();
    dump += t1 - t0;
    canonical += t2 - t1;
    walked += t3 - t2;
  }
  const double n = static_cast<double>(state.iterations()) * 20;
  state.counters["dump_us"] = dump * 1e6 / n;
  state.counters["canonical_us"] = canonical * 1e6 / n;
  state.counters["canonical_x_dump"] = canonical / dump;
  state.counters["walk_us"] = walked * 1e6 / n;
}
BENCHMARK(Args100k)->Name("Json/args100k");

}  // namespace
