// tycli audit: the capability decisions (issue 5 item 8), oldest first.
// tycli sandbox log: destroyed sandboxes from every tycli process (S3-S6);
// add_sandbox_log_command hangs it under `tycli sandbox`.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "taskyon/base/escape.h"
#include "taskyon/host/views.h"
#include "taskyon/store/audit.h"
#include "taskyon/store/sandbox_log.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace store = taskyon::store;

std::string esc(std::string_view text) { return taskyon::escape_terminal(text); }

// --before takes what --since takes (store::parse_since); its error says --before.
taskyon::Result<std::string> parse_before(const std::string& text) {
  auto before = store::parse_since(text);
  if (before) return before;
  std::string message = before.error().message;
  if (message.starts_with("--since")) message.replace(0, 7, "--before");
  return taskyon::fail(taskyon::Errc::bad_usage, std::move(message), "--before");
}

struct AuditArgs {
  std::string since;
  std::string revision;
  long long limit = 100;
};

int audit(Globals& g, const AuditArgs& a) {
  if (a.limit < 0) return report(g, {taskyon::Errc::bad_usage, "--limit is 0 (all) or a positive number", "--limit"});
  store::AuditQuery q;
  q.limit = static_cast<std::size_t>(a.limit);
  if (!a.since.empty()) {
    auto since = store::parse_since(a.since);
    if (!since) return report(g, since.error());
    q.since = *since;
  }
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  if (!a.revision.empty()) {
    auto rev = st->logged_revision(a.revision);
    if (!rev) return report(g, rev.error());
    q.revision = *rev;
  }
  auto rows = store::query_audit(*st, q);
  if (!rows) return report(g, rows.error());
  if (g.json) {
    Value out = Value::array();
    for (const auto& e : *rows) out.push_back(taskyon::host::audit_row_json(e));
    print_json(out);
    return kExitOk;
  }
  if (rows->empty()) {
    std::cout << "no capability decisions recorded" << (q.since ? " since " + *q.since : std::string()) << "\n";
    return kExitOk;
  }
  const std::size_t width = g.full_ids ? 71 : 19;
  std::cout << fmt::format("{:<24} {:<7} {:<22} {:<6} {:<{}} {:<32} {}\n", "AT", "VERDICT", "CAPABILITY", "ACCESS",
                           "REVISION", width, "TARGET", "REASON");
  // Targets and reasons quote tool input: escaped, so no row can forge another.
  for (const auto& e : *rows)
    std::cout << fmt::format("{:<24} {:<7} {:<22} {:<6} {:<{}} {:<32} {}\n", e.at,
                             taskyon::capability::verdict_name(e.verdict), esc(e.capability),
                             e.access.empty() ? "-" : esc(e.access), esc(table_id(g, e.revision)), width, esc(e.target),
                             esc(e.reason));
  return kExitOk;
}

int audit_prune(Globals& g, const std::string& before_text) {
  auto before = parse_before(before_text);
  if (!before) return report(g, before.error());
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto removed = store::prune_audit(*st, *before);
  if (!removed) return report(g, removed.error());
  if (g.json) print_json({{"removed", *removed}, {"before", *before}});
  else std::cout << fmt::format("removed {} audit row(s) older than {}; the prune itself is recorded\n", *removed, *before);
  return kExitOk;
}

struct LogArgs {
  std::string revision;
  long long limit = 100;
  bool prune = false;
  std::string before = "30d";
};

int sandbox_log_prune(Globals& g, const LogArgs& a) {
  auto before = parse_before(a.before);
  if (!before) return report(g, before.error());
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto removed = store::prune_destructions(*st, *before);
  if (!removed) return report(g, removed.error());
  if (g.json) print_json({{"removed", *removed}, {"before", *before}});
  else std::cout << fmt::format("removed {} sandbox record(s) older than {}\n", *removed, *before);
  return kExitOk;
}

int sandbox_log(Globals& g, const LogArgs& a) {
  if (a.prune) return sandbox_log_prune(g, a);
  if (a.limit < 0) return report(g, {taskyon::Errc::bad_usage, "--limit is 0 (all) or a positive number", "--limit"});
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  std::optional<std::string> revision;
  if (!a.revision.empty()) {
    auto rev = st->logged_revision(a.revision);
    if (!rev) return report(g, rev.error());
    revision = *rev;
  }
  auto rows = store::destructions(*st, static_cast<std::size_t>(a.limit), revision);
  if (!rows) return report(g, rows.error());
  if (g.json) {
    Value out = Value::array();
    for (const auto& d : *rows)
      out.push_back({{"seq", d.seq}, {"at", d.at}, {"revision", d.revision}, {"tool", d.tool}, {"reason", d.reason},
                     {"pid", d.pid}});
    print_json(out);
    return kExitOk;
  }
  if (rows->empty()) {
    std::cout << "no sandbox destroyed yet\n";
    return kExitOk;
  }
  const std::size_t width = g.full_ids ? 71 : 19;
  std::cout << fmt::format("{:<24} {:<16} {:<{}} {:>8} {}\n", "AT", "TOOL", "REVISION", width, "PID", "REASON");
  for (const auto& d : *rows)
    std::cout << fmt::format("{:<24} {:<16} {:<{}} {:>8} {}\n", d.at, esc(d.tool), esc(table_id(g, d.revision)), width,
                             d.pid,
                             esc(d.reason));
  return kExitOk;
}

}  // namespace

void add_audit_command(CLI::App& app, Globals& g) {
  auto a = std::make_shared<AuditArgs>();
  auto* cmd = app.add_subcommand("audit", "capability decisions (fetch, storage, popup, …), oldest first");
  cmd->add_option("--since", a->since,
                  "from this time on: ISO 8601 UTC (2026-11-29, 2026-11-29T18:18:36Z) or a duration back from now "
                  "(30s, 10m, 2h, 1d)");
  cmd->add_option("--revision", a->revision,
                  "only this revision: full id, or tool name (its active revision) or unique prefix");
  cmd->add_option("--limit", a->limit, "the most recent N decisions (default 100; 0: all)");
  auto before = std::make_shared<std::string>();
  auto* prune = cmd->add_subcommand("prune", "remove decisions older than --before (the prune is recorded)");
  prune->add_option("--before", *before,
                    "ISO 8601 UTC (2026-11-29T18:18:36Z) or a duration back from now (30s, 10m, 2h, 1d)")
      ->required();
  prune->callback([&g, before] { g.exit_code = guarded(g, [&] { return audit_prune(g, *before); }); });
  cmd->callback([&g, a, prune] {
    if (prune->parsed()) return;
    g.exit_code = guarded(g, [&] { return audit(g, *a); });
  });
}

void add_sandbox_log_command(CLI::App& sandbox, Globals& g) {
  auto a = std::make_shared<LogArgs>();
  auto* cmd = sandbox.add_subcommand("log", "destroyed sandboxes and why, from every tycli process, oldest first");
  cmd->add_option("--revision", a->revision, "only this revision: full id, tool name or unique prefix");
  cmd->add_option("--limit", a->limit, "the most recent N records (default 100; 0: all)");
  cmd->add_flag("--prune", a->prune, "remove the records older than --before instead of listing them");
  cmd->add_option("--before", a->before,
                  "with --prune: ISO 8601 UTC or a duration back from now (default 30d)");
  cmd->callback([&g, a] { g.exit_code = guarded(g, [&] { return sandbox_log(g, *a); }); });
}

}  // namespace tycli
