// tycli settings set|show|history: per-tool settings revisions (M15, T1).
// A settings object is content-addressed like a manifest and bound to a tool
// name; every call compiled afterwards pins the bound settings revision.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/store/settings.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace store = taskyon::store;

int set(Globals& g, const std::string& name, const std::string& file) {
  auto value = read_json_file(file, kMaxSettingsFileBytes, "the settings file", /*stdin_ok=*/true);
  if (!value) return report(g, value.error());
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto r = store::set_settings(*st, name, *value);
  if (!r) {
    auto e = r.error();
    if (e.code != taskyon::Errc::not_found)
      e.where = (file == "-" ? "stdin" : file) + ": " + (e.where.empty() ? "/" : e.where);
    return report(g, e);
  }
  if (g.json)
    print_json({{"name", name}, {"settings", r->revision}, {"created", r->created}, {"bound", r->bound}});
  else
    std::cout << fmt::format("{} {}{}\n", name, r->revision, r->bound ? "" : " (already bound)");
  return kExitOk;
}

// NAME shows the bound settings; a settings revision id shows that revision.
int show(Globals& g, const std::string& ref) {
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  std::string revision = ref;
  std::optional<std::string> name;
  if (ref.starts_with("sha256:") && !taskyon::json::is_content_id(ref)) {  // a short id from `settings history`
    auto full = st->expand_prefix("settings_revisions", ref);
    if (!full) return report(g, full.error());
    revision = *full;
  } else if (!taskyon::json::is_content_id(ref)) {
    if (!taskyon::registry::is_valid_tool_name(ref))
      return report(g, {taskyon::Errc::bad_usage,
                        fmt::format("\"{}\" is neither a tool name nor a settings revision id (sha256:…, at "
                                    "least 12 hex digits)",
                                    ref),
                        ref});
    if (auto installed = st->history(ref); !installed) return report(g, installed.error());
    auto r = store::settings_revision_for(*st, ref);
    if (!r) return report(g, r.error());
    revision = *r;
    name = ref;
  }
  auto value = store::settings_value(*st, revision);
  if (!value) return report(g, value.error());
  auto canonical = taskyon::json::canonicalize(*value);
  if (!canonical) return report(g, canonical.error());
  if (g.json) {
    Value out = {{"settings", revision}, {"value", *value}};
    if (name) out["name"] = *name;
    print_json(out);
  } else {
    std::cout << fmt::format("{}{}\n{}\n", name ? *name + " " : std::string(), revision, *canonical);
  }
  return kExitOk;
}

int history(Globals& g, const std::string& name) {
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  auto h = store::settings_history(*st, name);
  if (!h) return report(g, h.error());
  if (g.json) {
    Value out = Value::array();
    for (const auto& b : *h) out.push_back({{"seq", b.seq}, {"settings", b.revision}, {"boundAt", b.bound_at}});
    print_json(out);
    return kExitOk;
  }
  if (h->empty()) {
    std::cout << fmt::format("\"{}\" has never been given settings: calls pin the empty settings {}\n", name,
                             taskyon::registry::empty_settings_revision());
    return kExitOk;
  }
  for (std::size_t i = 0; i < h->size(); ++i) {
    const auto& b = (*h)[i];
    std::cout << fmt::format("{}  {}{}\n", b.bound_at, table_id(g, b.revision), i + 1 == h->size() ? "  (active)" : "");
  }
  return kExitOk;
}

}  // namespace

void add_settings_commands(CLI::App& app, Globals& g) {
  auto* settings = app.add_subcommand(
      "settings", "per-tool settings objects, content-addressed; calls compiled afterwards pin the bound revision");
  settings->require_subcommand(1);

  auto sa = std::make_shared<std::pair<std::string, std::string>>();
  auto* set_cmd = settings->add_subcommand("set", "store a JSON object as a settings revision and bind NAME to it");
  set_cmd->add_option("name", sa->first, "tool name (the tool must be installed)")->required();
  set_cmd->add_option("file", sa->second, "JSON file holding an object, or - for stdin")
      ->required()
      ->check(existing_file_or_stdin());
  set_cmd->callback([&g, sa] { g.exit_code = guarded(g, [&] { return set(g, sa->first, sa->second); }); });

  auto ref = std::make_shared<std::string>();
  auto* sh = settings->add_subcommand("show", "print `NAME REVISION` and the canonical settings object");
  sh->add_option("ref", *ref, "tool name, or a settings revision id or prefix (sha256: + >= 12 hex digits)")->required();
  sh->callback([&g, ref] { g.exit_code = guarded(g, [&] { return show(g, *ref); }); });

  auto hn = std::make_shared<std::string>();
  auto* hist = settings->add_subcommand("history", "the settings revisions NAME was bound to, oldest first");
  hist->add_option("name", *hn, "tool name")->required();
  hist->callback([&g, hn] { g.exit_code = guarded(g, [&] { return history(g, *hn); }); });
}

}  // namespace tycli
