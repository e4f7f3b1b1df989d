// tycli module add|list|show: libraries tool code may require() or import(),
// and pure-Python wheels a Python tool names (issue 17, docs/modules.md). A module is stored once under the content id of its
// record and never changes; a manifest names it by that id in `modules`.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "taskyon/modules/module.h"
#include "taskyon/store/modules.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace store = taskyon::store;

struct ModuleAddArgs {
  std::string source;
  std::string name;
  std::string version;
};

Value module_json(const store::ModuleSummary& m) {
  if (!m.problem.empty()) return {{"id", m.id}, {"problem", m.problem}};
  Value v = {{"id", m.id},       {"name", m.name},   {"version", m.version},     {"main", m.main},
             {"files", m.files}, {"bytes", m.bytes}, {"createdAt", m.created_at}};
  if (!m.integrity.empty()) v["integrity"] = m.integrity;
  if (!m.kind.empty()) v["kind"] = m.kind;
  return v;
}

int module_add(Globals& g, const ModuleAddArgs& a) {
  auto module = taskyon::modules::read_module(a.source, a.name, a.version);
  if (!module) return report(g, module.error());
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto added = store::add_module(*st, *module);
  if (!added) return report(g, added.error());
  // Already stored: the stored copy is checked, never assumed (it cannot be
  // repaired: stored modules never change).
  if (!added->created)
    if (auto stored = store::load_module(*st, added->id); !stored) return report(g, stored.error());
  std::size_t bytes = 0;
  for (const auto& [_, b] : module->files) bytes += b.size();
  if (g.json) {
    print_json({{"id", added->id},
                {"created", added->created},
                {"name", module->name},
                {"version", module->version},
                {"kind", module->kind.empty() ? std::string("npm") : module->kind},
                {"main", module->main},
                {"files", module->files.size()},
                {"bytes", bytes},
                {"skipped", module->skipped.size()}});
    return kExitOk;
  }
  std::cout << fmt::format("{} module {}@{} {}\n  {} files, {} bytes, main {}{}\n  in a manifest: \"modules\": {{\"{}\": \"{}\"}}\n",
                           added->created ? "added" : "already stored:", module->name, module->version, added->id,
                           module->files.size(), bytes, module->main,
                           module->skipped.empty() ? ""
                           : fmt::format("; {} files left out ({})", module->skipped.size(),
                                         module->kind.empty() ? "not .js/.cjs/.mjs/.json, or under node_modules/"
                                                              : "under NAME-VERSION.data/: scripts, headers, data"),
                           module->name, added->id);
  return kExitOk;
}

int module_list(Globals& g) {
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  auto all = store::list_modules(*st);
  if (!all) return report(g, all.error());
  if (g.json) {
    Value out = Value::array();
    for (const auto& m : *all) out.push_back(module_json(m));
    print_json(out);
    return kExitOk;
  }
  if (all->empty()) {
    std::cout << "no modules (add one with `tycli module add PACKAGE.tgz|DIR|FILE.js|WHEEL.whl`)\n";
    return kExitOk;
  }
  bool broken = false;
  for (const auto& m : *all) {
    if (!m.problem.empty()) {
      std::cout << fmt::format("{}  UNUSABLE: {}\n", table_id(g, m.id), m.problem);
      broken = true;
      continue;
    }
    std::cout << fmt::format("{}  {}@{}  {} files, {} bytes{}\n", table_id(g, m.id), m.name, m.version, m.files, m.bytes,
                             m.kind.empty() ? "" : "  (" + m.kind + ")");
  }
  return broken ? kExitEnvironment : kExitOk;
}

int module_show(Globals& g, const std::string& ref) {
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  auto stored = store::stored_module(*st, ref);  // re-hashed
  if (!stored) return report(g, stored.error());
  const auto* s = &stored->summary;
  auto record = taskyon::modules::record(stored->module);
  if (!record) return report(g, record.error());
  if (g.json) {
    Value out = module_json(*s);
    out["record"] = *record;
    print_json(out);
    return kExitOk;
  }
  std::cout << fmt::format("module {}@{}\nid        {}\nmain      {}\n", s->name, s->version, s->id, s->main);
  if (!s->kind.empty()) std::cout << fmt::format("kind      {}\n", s->kind);
  if (!s->integrity.empty()) std::cout << fmt::format("integrity {}\n", s->integrity);
  std::cout << fmt::format("files     {} ({} bytes, each re-hashed now)\n", s->files, s->bytes);
  for (const auto& [path, id] : (*record)["files"].items())
    std::cout << fmt::format("  {}  {}\n", table_id(g, id.get<std::string>()), path);
  return kExitOk;
}

}  // namespace

void add_module_commands(CLI::App& app, Globals& g) {
  auto* module = app.add_subcommand(
      "module", "libraries tool code may require() or import(), and wheels a Python tool imports: stored by content id, "
                "named in a manifest's \"modules\"");
  module->require_subcommand(1);

  auto aa = std::make_shared<ModuleAddArgs>();
  auto* add_cmd = module->add_subcommand(
      "add", "store an npm package (a `npm pack` .tgz or a package directory), a single-file .js/.cjs/.mjs bundle, or a "
      "pure-Python wheel (.whl, py3-none-any)");
  add_cmd->add_option("source", aa->source, "PACKAGE.tgz, a package directory, or FILE.js")->required();
  add_cmd->add_option("--name", aa->name, "the specifier tool code requires (default: package.json's name)");
  add_cmd->add_option("--version", aa->version, "the version recorded (default: package.json's; 0.0.0 for a bundle)");
  add_cmd->callback([&g, aa] { g.exit_code = guarded(g, [&] { return module_add(g, *aa); }); });

  auto* ls = module->add_subcommand("list", "stored modules, each re-hashed");
  ls->callback([&g] { g.exit_code = guarded(g, [&] { return module_list(g); }); });

  auto ref = std::make_shared<std::string>();
  auto* sh = module->add_subcommand("show", "one module's record and files, re-hashed");
  sh->add_option("id", *ref, "module id or unique prefix (>= 12 hex digits)")->required();
  sh->callback([&g, ref] { g.exit_code = guarded(g, [&] { return module_show(g, *ref); }); });
}

}  // namespace tycli
