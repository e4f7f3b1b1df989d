// Running diagnostics checks (check.h): selection by name, a small thread
// pool, results in a stable order, and the report as text and as JSON.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/diagnostics/check.h"
#include "taskyon/json/json.h"

namespace taskyon::diagnostics {

// The checks whose full name contains any of `filters` (plain substrings,
// case-sensitive), in registry order; every check when `filters` is empty.
// Errc::bad_usage when filters are given and none matches, naming them.
Result<std::vector<const Check*>> select(const Registry& registry, const std::vector<std::string>& filters);

struct CheckResult {
  std::string name;
  std::string contract;
  Status status = Status::fail;
  std::string reason;
  std::chrono::milliseconds duration{0};  // wall clock of the check, its Env included
};

struct RunOptions {
  Settings settings;
  unsigned jobs = 0;  // checks run at once; 0: std::thread::hardware_concurrency() (at least 1)
  // Called once per check, in the order of the selection (a check that ends
  // early waits for the ones before it), from the runner's threads, never two
  // at a time.
  std::function<void(const CheckResult&)> on_result;
};

struct ContractSummary {
  std::string contract;
  int checks = 0, passed = 0, failed = 0, skipped = 0;
};

struct Report {
  std::vector<CheckResult> results;  // in selection order
  int passed = 0, failed = 0, skipped = 0;
  bool ok() const { return failed == 0; }
  // One row per contract that had a check, in the order of contracts() (builtin.h),
  // then any other id in order of appearance.
  std::vector<ContractSummary> by_contract() const;
};

// Runs each check in a fresh directory of its own under the temp root (made
// with mkdtemp, mode 0700, removed with everything in it afterwards). A
// directory that cannot be made is a FAIL of that check. Never throws.
Report run(const std::vector<const Check*>& checks, const RunOptions& options);

// "PASS  tool_security_contracts.R1.x (12 ms)", and ": reason" unless PASS.
std::string progress_line(const CheckResult& result);

// The per-contract table with totals, for people (ends with a newline).
std::string summary_text(const Report& report);

// {"checks": [{name, contract, status, reason, ms}], "summary": {"contracts":
// [{id, checks, pass, fail, skip}], "pass", "fail", "skip", "total", "ok"},
// "notYetCovered": [{id, contract}]}; status is "pass" | "fail" | "skip".
json::Value report_json(const Report& report);

}  // namespace taskyon::diagnostics
