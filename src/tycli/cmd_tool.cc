// tycli tool install|list|show|activate|history
#include <iostream>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <filesystem>

#include "taskyon/external/mcp.h"
#include "taskyon/native/native.h"

#include "cli.h"
#include "taskyon/base/escape.h"
#include "taskyon/host/views.h"
#include "taskyon/registry/manifest.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace store = taskyon::store;
namespace registry = taskyon::registry;

struct InstallArgs {
  std::vector<std::string> files;
  bool activate = false;
  bool trust = false;
};

struct ImportArgs {
  std::vector<std::string> command;
  bool activate = false;
  bool trust = false;
  long long timeout_ms = 10000;
};

// Who is recording trust: the OS user running tycli.
std::string current_user() {
  if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_name && *pw->pw_name) return pw->pw_name;
  return fmt::format("uid {}", geteuid());
}

std::optional<store::Trust> trust_for(bool trusted, const registry::Manifest& m) {
  if (!trusted || !registry::needs_trust(m)) return std::nullopt;
  const auto what = m.execution == registry::Execution::trusted_native
                        ? "trusted-native " + m.native
                        : "MCP server command " + m.service["mcp"]["command"].dump();
  return store::Trust{current_user(), what};
}

void print_installed(const store::InstallResult& r) {
  std::cout << r.name << " " << r.id << "\n";
  if (r.active && *r.active != r.id)
    std::cerr << fmt::format("  not active: \"{}\" stays on {}; run `tycli tool activate {} {}`\n", r.name,
                             short_id(*r.active), r.name, short_id(r.id));
}

// Stores validated manifests and prints `name revision` per manifest.
int install_all(Globals& g, const std::vector<registry::Manifest>& manifests, bool activate, bool trusted) {
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  Value out = Value::array();
  for (const auto& m : manifests) {
    auto r = st->install(m, activate ? store::Activate::always : store::Activate::if_unbound, trust_for(trusted, m));
    if (!r) return report(g, r.error());
    if (g.json)
      out.push_back(taskyon::host::install_json(*r));
    else
      print_installed(*r);
  }
  if (g.json) print_json(out);
  return kExitOk;
}

// Every file is read and validated before anything is stored: bad input changes nothing.
int install(Globals& g, const InstallArgs& a) {
  std::vector<registry::Manifest> manifests;
  for (const auto& file : a.files) {
    auto value = read_json_file(file, kMaxManifestFileBytes, "the tool definition", /*stdin_ok=*/true);
    if (!value) return report(g, value.error());
    auto manifest = registry::parse_manifest(*value);
    if (!manifest) {
      auto e = manifest.error();
      e.where = (file == "-" ? "stdin" : file) + ": " + (e.where.empty() ? "/" : e.where);
      return report(g, e);
    }
    if (registry::needs_trust(*manifest) && !a.trust)
      return report(g, {taskyon::Errc::bad_usage, registry::trust_required_message(*manifest), file == "-" ? "stdin" : file});
    manifests.push_back(std::move(*manifest));
  }
  return install_all(g, manifests, a.activate, a.trust);
}

int list(Globals& g) {
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  auto tools = st->tools();
  if (!tools) return report(g, tools.error());
  if (g.json) {
    print_json(taskyon::host::tool_list_json(*tools));
    return kExitOk;
  }
  if (tools->empty()) {
    std::cout << "no tools installed (try `tycli tool install examples/tools/*.json`)\n";
    return kExitOk;
  }
  const std::size_t width = g.full_ids ? 71 : 19;
  std::cout << fmt::format("{:<24} {:<{}} {}\n", "NAME", "ACTIVE REVISION", width, "REVISIONS");
  for (const auto& t : *tools)
    std::cout << fmt::format("{:<24} {:<{}} {}\n", t.name,
                             t.active_revision.empty() ? "-" : table_id(g, t.active_revision), width, t.revisions);
  return kExitOk;
}

int show(Globals& g, const std::string& ref) {
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  auto rev = st->resolve(ref);
  if (!rev) return report(g, rev.error());
  auto active = st->active(rev->name);
  if (!active) return report(g, active.error());
  const bool is_active = *active && (*active)->revision == rev->id;
  if (g.json) {
    print_json(taskyon::host::tool_show_json(*rev, is_active));
  } else {
    std::cout << taskyon::escape_json_dump(rev->definition) << "\n";  // JCS leaves C1 and bidi characters raw
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
  auto st = open_store(g, StoreUse::read);
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
    std::cout << fmt::format("{}  {}{}\n", b.activated_at, table_id(g, b.revision), i + 1 == h->size() ? "  (active)" : "");
  }
  return kExitOk;
}

// Imports the tools of an MCP server as external-service manifests. Starting
// the server is already running its code: --trust comes first.
int import_mcp(Globals& g, const ImportArgs& a) {
  if (!a.trust)
    return report(g, {taskyon::Errc::bad_usage,
                      "R6: an MCP server over stdio is a local program that runs with tycli's own authority; review "
                      "it, then import it with --trust to record that you did",
                      "import-mcp"});
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec).string();
  const taskyon::external::McpServer server{a.command, cwd};
  auto tools = taskyon::external::list_tools(server, std::chrono::milliseconds(a.timeout_ms));
  if (!tools) return report(g, tools.error());
  std::vector<registry::Manifest> manifests;
  for (const auto& t : *tools) {
    Value service = {{"command", a.command}, {"cwd", cwd}, {"tool", t.name}};
    if (t.output_schema.is_object()) service["outputSchema"] = t.output_schema;
    Value def = {{"name", t.name},          {"description", t.description}, {"parameters", t.input_schema},
                 {"execution", "external-service"}, {"service", {{"mcp", service}}}};
    auto m = registry::parse_manifest(def);
    if (!m) {
      std::cerr << fmt::format("tycli: skipped MCP tool \"{}\": {}\n", taskyon::escape_terminal(t.name),
                               taskyon::escape_terminal(m.error().describe()));
      continue;
    }
    manifests.push_back(std::move(*m));
  }
  return install_all(g, manifests, a.activate, /*trusted=*/true);
}

// The native functions compiled into this host, as installable manifests.
int natives(Globals& g) {
  Value out = Value::array();
  for (const auto& f : taskyon::native::all()) {
    auto name = f.id.substr(f.id.rfind('.') + 1);
    out.push_back(taskyon::native::manifest_for(f, name));
  }
  if (g.json) {
    print_json(out);
    return kExitOk;
  }
  for (const auto& m : out)
    std::cout << fmt::format("{:<24} {}\n  manifest: {}\n", m["native"].get<std::string>(),
                             m["description"].get<std::string>(), m.dump());
  std::cout << "(save a manifest to a file, review the function, then `tycli tool install --trust FILE`)\n";
  return kExitOk;
}

}  // namespace

void add_tool_commands(CLI::App& app, Globals& g) {
  auto* tool = app.add_subcommand("tool", "install, inspect and activate tool revisions");
  tool->require_subcommand(1);

  auto ia = std::make_shared<InstallArgs>();
  auto* inst = tool->add_subcommand("install", "store manifests as content-addressed revisions; prints `name revision`");
  inst->add_option("files", ia->files, "manifest files (JSON); - reads one from stdin")
      ->required()
      ->check(existing_file_or_stdin());
  inst->add_flag("--activate", ia->activate, "also activate each revision (default: only when the name is unbound)");
  inst->add_flag("--trust", ia->trust,
                 "record that you reviewed tools that run with host authority (trusted-native, MCP commands)");
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

  auto im = std::make_shared<ImportArgs>();
  auto* imp = tool->add_subcommand("import-mcp", "import the tools of an MCP server (stdio) as external-service revisions");
  imp->add_flag("--trust", im->trust, "record that you reviewed the server: it runs with tycli's authority");
  imp->add_flag("--activate", im->activate, "also activate each revision (default: only when the name is unbound)");
  imp->add_option("--timeout", im->timeout_ms, "for starting the server and listing its tools, in ms (default 10000)");
  imp->add_option("command", im->command, "the server's command line, after --")->required();
  imp->callback([&g, im] { g.exit_code = guarded(g, [&] { return import_mcp(g, *im); }); });

  tool->add_subcommand("natives", "native functions compiled into this host, as manifests")->callback([&g] {
    g.exit_code = guarded(g, [&] { return natives(g); });
  });

  auto hn = std::make_shared<std::string>();
  auto* hist = tool->add_subcommand("history", "activations of a name, oldest first");
  hist->add_option("name", *hn, "tool name")->required();
  hist->callback([&g, hn] { g.exit_code = guarded(g, [&] { return history(g, *hn); }); });
}

}  // namespace tycli
