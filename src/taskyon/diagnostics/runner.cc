#include "taskyon/diagnostics/runner.h"

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "taskyon/diagnostics/builtin.h"
#include "taskyon/diagnostics/groups.h"

namespace taskyon::diagnostics {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

fs::path temp_root(const Settings& settings) {
  if (!settings.temp_root.empty()) return settings.temp_root;
  const char* tmp = std::getenv("TMPDIR");
  return fs::path(tmp && *tmp ? tmp : "/tmp");
}

// The check's outcome; nothing it throws gets past here.
Outcome run_one(const Check& check, Env& env) {
  try {
    Outcome out = check.run(env);
    if (out.reason.empty()) out.reason = "(no reason given)";
    return out;
  } catch (const Ended& ended) {
    return ended.outcome;
  } catch (const std::exception& e) {
    return {Status::fail, std::string("unexpected exception: ") + e.what()};
  } catch (...) {
    return {Status::fail, "unexpected exception of an unknown type"};
  }
}

CheckResult run_in_own_dir(const Check& check, const Settings& settings) {
  const auto start = Clock::now();
  CheckResult result{check.name(), check.contract, Status::fail, {}, {}};
  std::string pattern = (temp_root(settings) / "taskyon-diagnostics-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    result.reason = fmt::format("cannot make a temporary directory from {}", pattern);
  } else {
    Outcome out;
    {
      Env env(pattern, settings);
      out = run_one(check, env);
    }  // sandboxes and the store are gone before the directory is removed
    std::error_code ec;
    fs::remove_all(pattern, ec);
    result.status = out.status;
    result.reason = std::move(out.reason);
    // One line, as promised.
    std::replace(result.reason.begin(), result.reason.end(), '\n', ' ');
  }
  result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return result;
}

}  // namespace

Result<std::vector<const Check*>> select(const Registry& registry, const std::vector<std::string>& filters) {
  std::vector<const Check*> out;
  for (const auto& check : registry.checks()) {
    const std::string name = check.name();
    const bool wanted = filters.empty() || std::any_of(filters.begin(), filters.end(), [&](const std::string& f) {
                          return name.find(f) != std::string::npos;
                        });
    if (wanted) out.push_back(&check);
  }
  if (out.empty() && !filters.empty()) {
    std::string list;
    for (const auto& f : filters) list += (list.empty() ? "" : ", ") + ("\"" + f + "\"");
    return fail(Errc::bad_usage,
                fmt::format("no check name contains {} (`tycli diagnostics --list` shows every name)", list));
  }
  return out;
}

Report run(const std::vector<const Check*>& checks, const RunOptions& options) {
  Report report;
  report.results.resize(checks.size());
  std::vector<bool> done(checks.size(), false);
  std::size_t next_to_emit = 0;
  std::mutex mu;
  std::atomic<std::size_t> next{0};

  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= checks.size()) return;
      CheckResult result = run_in_own_dir(*checks[i], options.settings);
      std::lock_guard lock(mu);
      report.results[i] = std::move(result);
      done[i] = true;
      while (next_to_emit < checks.size() && done[next_to_emit]) {
        if (options.on_result) {
          try {
            options.on_result(report.results[next_to_emit]);
          } catch (...) {
            // A printer that fails must not take the run down; the report still has it.
          }
        }
        ++next_to_emit;
      }
    }
  };

  unsigned jobs = options.jobs ? options.jobs : std::thread::hardware_concurrency();
  jobs = std::max(1u, std::min<unsigned>(jobs, static_cast<unsigned>(std::max<std::size_t>(checks.size(), 1))));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < jobs; ++t) {
    try {
      threads.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // fewer threads: the rest run on the ones we have
    }
  }
  worker();
  for (auto& t : threads) t.join();

  for (const auto& r : report.results) {
    if (r.status == Status::pass) ++report.passed;
    if (r.status == Status::fail) ++report.failed;
    if (r.status == Status::skip) ++report.skipped;
  }
  return report;
}

std::vector<ContractSummary> Report::by_contract() const {
  std::vector<ContractSummary> rows;
  auto row_for = [&](const std::string& id) -> ContractSummary& {
    for (auto& row : rows) {
      if (row.contract == id) return row;
    }
    rows.push_back({id});
    return rows.back();
  };
  for (const auto& r : results) {
    auto& row = row_for(r.contract);
    ++row.checks;
    if (r.status == Status::pass) ++row.passed;
    if (r.status == Status::fail) ++row.failed;
    if (r.status == Status::skip) ++row.skipped;
  }
  auto rank = [](const std::string& id) {
    const auto& table = contracts();
    for (std::size_t i = 0; i < table.size(); ++i) {
      if (table[i].id == id) return i;
    }
    return table.size();
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const ContractSummary& a, const ContractSummary& b) {
    return rank(a.contract) < rank(b.contract);
  });
  return rows;
}

std::string progress_line(const CheckResult& r) {
  std::string line = fmt::format("{}  {} ({} ms)", status_name(r.status), r.name, r.duration.count());
  if (r.status != Status::pass) line += ": " + r.reason;
  return line;
}

std::string summary_text(const Report& report) {
  std::string out = fmt::format("\n{:<9}{:>7}{:>6}{:>6}{:>6}  {}\n", "contract", "checks", "pass", "fail", "skip",
                                "statement");
  for (const auto& row : report.by_contract()) {
    out += fmt::format("{:<9}{:>7}{:>6}{:>6}{:>6}  {}\n", row.contract, row.checks, row.passed, row.failed,
                       row.skipped, contract_text(row.contract));
  }
  out += fmt::format("{:<9}{:>7}{:>6}{:>6}{:>6}\n", "total", report.results.size(), report.passed, report.failed,
                     report.skipped);
  out += report.ok() ? fmt::format("OK: no check failed ({} passed, {} skipped)\n", report.passed, report.skipped)
                     : fmt::format("FAILED: {} check(s) failed\n", report.failed);
  return out;
}

json::Value report_json(const Report& report) {
  json::Value checks = json::Value::array();
  for (const auto& r : report.results) {
    checks.push_back({{"name", r.name},
                      {"contract", r.contract},
                      {"status", status_key(r.status)},
                      {"reason", r.reason},
                      {"ms", r.duration.count()}});
  }
  json::Value rows = json::Value::array();
  for (const auto& row : report.by_contract()) {
    rows.push_back({{"id", row.contract},
                    {"checks", row.checks},
                    {"pass", row.passed},
                    {"fail", row.failed},
                    {"skip", row.skipped}});
  }
  json::Value missing = json::Value::array();
  for (auto id : not_yet_covered()) missing.push_back({{"id", id}, {"contract", contract_text(id)}});
  return {{"checks", std::move(checks)},
          {"summary",
           {{"contracts", std::move(rows)},
            {"pass", report.passed},
            {"fail", report.failed},
            {"skip", report.skipped},
            {"total", report.results.size()},
            {"ok", report.ok()}}},
          {"notYetCovered", std::move(missing)}};
}

}  // namespace taskyon::diagnostics
