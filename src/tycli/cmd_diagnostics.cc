// tycli diagnostics [--filter SUBSTRING]... [--list] [--json] [--jobs N] [--node PATH]:
// runs the checks of src/taskyon/diagnostics/ against the real components,
// each in a temporary directory of its own (never the user's store). People
// get a progress line per check, in a stable order, then a summary per
// contract; --json prints one document at the end. Exit codes: 0 no check
// failed (skips allowed), 1 a check failed, 2 bad usage (a filter that
// matches nothing), 3 the environment failed.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "taskyon/diagnostics/builtin.h"
#include "taskyon/diagnostics/runner.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace diag = taskyon::diagnostics;

struct DiagnosticsArgs {
  std::vector<std::string> filters;
  bool list = false;
  unsigned jobs = 0;
  std::string node;
};

std::string self_path() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

int list(const Globals& g, const std::vector<const diag::Check*>& checks, bool filtered) {
  if (g.json) {
    Value out = {{"checks", Value::array()}, {"notYetCovered", Value::array()}};
    for (const auto* c : checks)
      out["checks"].push_back({{"name", c->name()}, {"contract", c->contract}, {"description", c->description}});
    for (auto id : diag::not_yet_covered())
      out["notYetCovered"].push_back({{"id", id}, {"contract", diag::contract_text(id)}});
    print_json(out);
    return kExitOk;
  }
  for (const auto* c : checks) std::cout << fmt::format("{}\n    {}\n", c->name(), c->description);
  if (!filtered && !diag::not_yet_covered().empty()) {
    std::cout << fmt::format("\n{} checks. Not yet covered ({} contracts, no check in this build):\n", checks.size(),
                             diag::not_yet_covered().size());
    for (auto id : diag::not_yet_covered())
      std::cout << fmt::format("  {:<4} not yet covered: {}\n", id, diag::contract_text(id));
  }
  return kExitOk;
}

int diagnostics(Globals& g, const DiagnosticsArgs& a) {
  auto selected = diag::select(diag::builtin(), a.filters);
  if (!selected) return report(g, selected.error());
  if (a.list) return list(g, *selected, !a.filters.empty());

  diag::RunOptions options;
  options.settings.node_path = a.node;
  options.settings.tycli_path = self_path();
  options.jobs = a.jobs;
  if (!g.json) {
    std::cout << fmt::format("Running {} check(s) against the real components, each in a temporary TASKYON_HOME\n",
                             selected->size());
    options.on_result = [](const diag::CheckResult& r) { std::cout << diag::progress_line(r) << std::endl; };
  }
  const diag::Report rep = diag::run(*selected, options);
  if (g.json) {
    print_json(diag::report_json(rep));
  } else {
    std::cout << diag::summary_text(rep);
    if (a.filters.empty() && !diag::not_yet_covered().empty()) {
      std::string ids;
      for (auto id : diag::not_yet_covered()) ids += (ids.empty() ? "" : " ") + std::string(id);
      std::cout << fmt::format("not yet covered (no check in this build): {}\n", ids);
    }
  }
  return rep.ok() ? kExitOk : kExitToolFailed;
}

}  // namespace

void add_diagnostics_commands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<DiagnosticsArgs>();
  auto* d = app.add_subcommand("diagnostics",
                               "prove the security contracts (DESIGN §7) on the real components of this machine");
  d->add_option("--filter", a->filters,
                "run only checks whose name contains SUBSTRING (repeatable: any of them), e.g. R2 or "
                "tool_security_contracts")
      ->type_name("SUBSTRING")
      ->allow_extra_args(false);
  d->add_flag("--list", a->list, "list the checks and the contracts not yet covered, without running anything");
  d->add_option("--jobs", a->jobs, "checks run at once (default: the hardware threads)");
  d->add_option("--node", a->node, "the Node executable sandboxes use (default: `node` on PATH)");
  d->callback([&g, a] { g.exit_code = guarded(g, [&] { return diagnostics(g, *a); }); });
}

}  // namespace tycli
