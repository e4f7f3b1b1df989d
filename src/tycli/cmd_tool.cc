// tycli tool install|list|show|activate|history
#include <iostream>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "taskyon/registry/manifest.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace store = taskyon::store;
namespace registry = taskyon::registry;

struct InstallArgs {
  std::vector<std::string> files;
  bool activate = false;
};

// Every file is read and validated before anything is stored: bad input changes nothing.
int install(Globals& g, const InstallArgs& a) {
  std::vector<registry::Manifest> manifests;
  for (const auto& file : a.files) {
    auto value = read_json_file(file);
    if (!value) return report(g, value.error());
    auto manifest = registry::parse_manifest(*value);
    if (!manifest) {
      auto e = manifest.error();
      e.where = file + ": " + (e.where.empty() ? "/" : e.where);
      return report(g, e);
    }
    manifests.push_back(std::move(*manifest));
  }
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  Value out = Value::array();
  for (const auto& m : manifests) {
    auto r = st->install(m, a.activate ? store::Activate::always : store::Activate::if_unbound);
    if (!r) return report(g, r.error());
    if (g.json) {
      out.push_back({{"name", r->name}, {"revision", r->id}, {"created", r->created}, {"activated", r->activated},
                     {"active", r->active ? Value(*r->active) : Value()}});
    } else {
      std::cout << r->name << " " << r->id << "\n";
      if (r->active && *r->active != r->id)
        std::cerr << fmt::format("  not active: \"{}\" stays on {}; run `tycli tool activate {} {}`\n", r->name,
                                 short_id(*r->active), r->name, short_id(r->id));
    }
  }
  if (g.json) print_json(out);
  return kExitOk;
}

int list(Globals& g) {
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto tools = st->tools();
  if (!tools) return report(g, tools.error());
  if (g.json) {
    Value out = Value::array();
    for (const auto& t : *tools)
      out.push_back({{"name", t.name}, {"active", t.active_revision.empty() ? Value() : Value(t.active_revision)},
                     {"revisions", t.revisions}});
    print_json(out);
    return kExitOk;
  }
  if (tools->empty()) {
    std::cout << "no tools installed (try `tycli tool install examples/tools/*.json`)\n";
    return kExitOk;
  }
  std::cout << fmt::format("{:<24} {:<72} {}\n", "NAME", "ACTIVE REVISION", "REVISIONS");
  for (const auto& t : *tools)
    std::cout << fmt::format("{:<24} {:<72} {}\n", t.name, t.active_revision.empty() ? "-" : t.active_revision,
                             t.revisions);
  return kExitOk;
}

int show(Globals& g, const std::string& ref) {
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto rev = st->resolve(ref);
  if (!rev) return report(g, rev.error());
  auto active = st->active(rev->name);
  if (!active) return report(g, active.error());
  const bool is_active = *active && (*active)->revision == rev->id;
  if (g.json) {
    print_json({{"revision", rev->id}, {"name", rev->name}, {"createdAt", rev->created_at}, {"active", is_active},
                {"definition", rev->manifest.definition}});
  } else {
    std::cout << rev->definition << "\n";
  }
  return kExitOk;
}

int activate(Globals& g, const std::string& name, const std::string& ref) {
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto b = st->activate(name, ref);
  if (!b) return report(g, b.error());
  if (g.json)
    print_json({{"name", b->name}, {"revision", b->revision}, {"activatedAt", b->activated_at}});
  else
    std::cout << b->name << " " << b->revision << "\n";
  return kExitOk;
}

int history(Globals& g, const std::string& name) {
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto h = st->history(name);
  if (!h) return report(g, h.error());
  if (g.json) {
    Value out = Value::array();
    for (const auto& b : *h) out.push_back({{"seq", b.seq}, {"revision", b.revision}, {"activatedAt", b.activated_at}});
    print_json(out);
    return kExitOk;
  }
  for (std::size_t i = 0; i < h->size(); ++i) {
    const auto& b = (*h)[i];
    std::cout << fmt::format("{}  {}{}\n", b.activated_at, b.revision, i + 1 == h->size() ? "  (active)" : "");
  }
  return kExitOk;
}

}  // namespace

void add_tool_commands(CLI::App& app, Globals& g) {
  auto* tool = app.add_subcommand("tool", "install, inspect and activate tool revisions");
  tool->require_subcommand(1);

  auto ia = std::make_shared<InstallArgs>();
  auto* inst = tool->add_subcommand("install", "store manifests as content-addressed revisions; prints `name revision`");
  inst->add_option("files", ia->files, "manifest files (JSON)")->required()->check(CLI::ExistingFile);
  inst->add_flag("--activate", ia->activate, "also activate each revision (default: only when the name is unbound)");
  inst->callback([&g, ia] { g.exit_code = guarded(g, [&] { return install(g, *ia); }); });

  tool->add_subcommand("list", "installed tools and their active revisions")->callback([&g] {
    g.exit_code = guarded(g, [&] { return list(g); });
  });

  auto ref = std::make_shared<std::string>();
  auto* sh = tool->add_subcommand("show", "print a revision's canonical definition");
  sh->add_option("ref", *ref, "tool name, revision id, or unique prefix (>= 12 hex digits)")->required();
  sh->callback([&g, ref] { g.exit_code = guarded(g, [&] { return show(g, *ref); }); });

  auto an = std::make_shared<std::pair<std::string, std::string>>();
  auto* act = tool->add_subcommand("activate", "point a name at one of its revisions");
  act->add_option("name", an->first, "tool name")->required();
  act->add_option("revision", an->second, "revision id or unique prefix")->required();
  act->callback([&g, an] { g.exit_code = guarded(g, [&] { return activate(g, an->first, an->second); }); });

  auto hn = std::make_shared<std::string>();
  auto* hist = tool->add_subcommand("history", "activations of a name, oldest first");
  hist->add_option("name", *hn, "tool name")->required();
  hist->callback([&g, hn] { g.exit_code = guarded(g, [&] { return history(g, *hn); }); });
}

}  // namespace tycli
