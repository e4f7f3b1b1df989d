// tycli popup grant|revoke|list|check: which trusted host tool revision may
// open a host-owned window, for "custom-html" or one exact https origin (M16).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "taskyon/store/origin.h"
#include "taskyon/store/popups.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace store = taskyon::store;

struct PopupArgs {
  std::string rev;
  std::string target;
};

// "custom-html" as is; anything else normalized as an https origin.
taskyon::Result<std::string> normalize_target(const std::string& target) {
  if (target == store::kCustomHtml) return target;
  auto origin = store::canonical_origin(target);
  if (!origin)
    return taskyon::fail(taskyon::Errc::bad_usage,
                         "a popup target is \"custom-html\" or one https origin: " + origin.error().message,
                         origin.error().where);
  return *origin;
}

Value permission_json(const store::PopupPermission& p) {
  return {{"revision", p.revision}, {"tool", p.tool}, {"target", p.target}, {"grantedBy", p.granted_by},
          {"grantedAt", p.granted_at}};
}

int grant(Globals& g, const PopupArgs& a) {
  auto target = normalize_target(a.target);
  if (!target) return report(g, target.error());
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto rev = st->resolve(a.rev);
  if (!rev) return report(g, rev.error());
  auto p = store::grant_popup(*st, rev->id, *target, os_user_name());
  if (!p) return report(g, p.error());
  if (g.json)
    print_json(permission_json(*p));
  else
    std::cout << fmt::format("granted popup {} to {} {}\n", p->target, p->tool, p->revision);
  return kExitOk;
}

int revoke(Globals& g, const PopupArgs& a) {
  auto target = normalize_target(a.target);
  if (!target) return report(g, target.error());
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto rev = st->resolve(a.rev);
  if (!rev) return report(g, rev.error());
  auto removed = store::revoke_popup(*st, rev->id, *target);
  if (!removed) return report(g, removed.error());
  if (g.json)
    print_json({{"revision", rev->id}, {"target", *target}, {"revoked", *removed}});
  else
    std::cout << fmt::format("{} popup {} of {} {}\n", *removed ? "revoked" : "no permission to revoke:", *target,
                             rev->name, rev->id);
  return kExitOk;
}

int list(Globals& g) {
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  auto all = store::popup_permissions(*st);
  if (!all) return report(g, all.error());
  if (g.json) {
    Value out = Value::array();
    for (const auto& p : *all) out.push_back(permission_json(p));
    print_json(out);
    return kExitOk;
  }
  if (all->empty()) {
    std::cout << "no popup permissions\n";
    return kExitOk;
  }
  const std::size_t width = g.full_ids ? 71 : 19;
  std::cout << fmt::format("{:<32} {:<16} {:<{}} {}\n", "TARGET", "TOOL", "REVISION", width, "GRANTED AT");
  for (const auto& p : *all)
    std::cout << fmt::format("{:<32} {:<16} {:<{}} {}\n", p.target, p.tool, table_id(g, p.revision), width,
                             p.granted_at);
  return kExitOk;
}

// Exit 0 allowed, 1 denied. A target that is not an origin is checked as
// given, so the answer (denied) and its reason are the browser host's.
int check(Globals& g, const PopupArgs& a) {
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto rev = st->resolve(a.rev);
  if (!rev) return report(g, rev.error());
  auto target = normalize_target(a.target);
  const std::string checked = target ? *target : a.target;
  auto d = store::check_popup(*st, rev->id, checked);
  if (!d) return report(g, d.error());
  if (g.json)
    print_json({{"revision", rev->id}, {"target", checked}, {"verdict", d->allowed ? "allow" : "deny"},
                {"reason", d->reason}});
  else
    std::cout << fmt::format("{} popup {} for {} {}: {}\n", d->allowed ? "allow" : "deny", checked, rev->name, rev->id,
                             d->reason);
  return d->allowed ? kExitOk : kExitToolFailed;
}

void add_target(CLI::App* cmd, PopupArgs& a) {
  cmd->add_option("rev", a.rev, "tool name (its active revision), revision id, or unique prefix")->required();
  cmd->add_option("target", a.target, "custom-html, or one https origin https://host[:port]")->required();
}

}  // namespace

void add_popup_commands(CLI::App& app, Globals& g) {
  auto* popup = app.add_subcommand(
      "popup", "permissions for trusted host tools to open host-owned windows (custom-html or one exact https origin)");
  popup->require_subcommand(1);

  auto ga = std::make_shared<PopupArgs>();
  auto* gr = popup->add_subcommand("grant", "let a trusted revision open a window for TARGET");
  add_target(gr, *ga);
  gr->callback([&g, ga] { g.exit_code = guarded(g, [&] { return grant(g, *ga); }); });

  auto ra = std::make_shared<PopupArgs>();
  auto* rv = popup->add_subcommand("revoke", "remove a popup permission (succeeds, saying so, when there is none)");
  add_target(rv, *ra);
  rv->callback([&g, ra] { g.exit_code = guarded(g, [&] { return revoke(g, *ra); }); });

  popup->add_subcommand("list", "all popup permissions")->callback([&g] {
    g.exit_code = guarded(g, [&] { return list(g); });
  });

  auto ca = std::make_shared<PopupArgs>();
  auto* ck = popup->add_subcommand(
      "check", "the browser host's check, audited: exit 0 allowed, 1 denied; prints why (exact match only)");
  add_target(ck, *ca);
  ck->callback([&g, ca] { g.exit_code = guarded(g, [&] { return check(g, *ca); }); });
}

}  // namespace tycli
