// tycli: installs tools as content-addressed revisions and runs pinned calls
// in sandboxes. One file per subcommand group; this file wires them up.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli.h"
#include "cli_tree.h"
#include "suggest.h"
#include "taskyon/native/python.h"

int main(int argc, char** argv) {
  // Internal re-exec entry of --python-isolation strict, run inside bubblewrap (native/python.h).
  if (argc > 1 && argv[1] == taskyon::native::python::kContainEntry)
    return taskyon::native::python::contain_main(argc, argv);
  tycli::sweep_stale_workdirs();  // work directories of tycli processes killed before they could clean up
  tycli::Globals g;
  CLI::App app{"tycli: Taskyon's tool registry, task compiler and sandbox host"};
  app.set_version_flag("--version", tycli::kVersion);
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--db", g.db_path,
                 "SQLite store (default $TASKYON_HOME/taskyon.db; TASKYON_HOME defaults to "
                 "$XDG_DATA_HOME/taskyon, else ~/.local/share/taskyon)")
      ->type_name("FILE");  // completions and the man page offer file names (cli_tree.h)
  app.add_flag("--json", g.json, "machine-readable JSON output on stdout");
  app.add_flag("--full-ids", g.full_ids,
               "whole ids in tables (default: sha256: + 12 hex digits, accepted as a prefix; --json prints them whole)");
  app.add_flag("--ask", g.ask, "call/run: on a terminal, ask before denying a fetch no grant allows (the answer is "
                               "once: this call only; always: recorded as a grant; no: denied)");
  app.add_option("--fetch-allow-cidr", g.fetch_allow_cidr,
                 "TEST ONLY: admit fetches to addresses in this block (e.g. a loopback test server); repeatable")
      ->group("Test-only")
      ->each([](const std::string& v) { tycli::warn_test_only("--fetch-allow-cidr", v); });
  app.add_option("--fetch-ca-file", g.fetch_ca_file, "TEST ONLY: trust these PEM anchors instead of the system's")
      ->type_name("FILE")
      ->group("Test-only")
      ->each([](const std::string& v) { tycli::warn_test_only("--fetch-ca-file", v); });

  tycli::add_tool_commands(app, g);
  tycli::add_module_commands(app, g);
  tycli::add_call_command(app, g);
  tycli::add_sandbox_commands(app, g);
  tycli::add_run_command(app, g);
  tycli::add_task_commands(app, g);
  tycli::add_chat_commands(app, g);
  tycli::add_policy_commands(app, g);
  tycli::add_grant_commands(app, g);
  tycli::add_secret_commands(app, g);
  tycli::add_audit_command(app, g);
  tycli::add_settings_commands(app, g);
  tycli::add_popup_commands(app, g);
  tycli::add_diagnostics_commands(app, g);
  tycli::add_mcp_command(app, g);
  tycli::add_serve_command(app, g);
  tycli::add_completion_commands(app);  // last: it describes every command above

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // An unknown or missing command is named in plain words, with the nearest one (suggest.h).
    if (const std::string why = tycli::explain_parse_error(app, e); !why.empty())
      return tycli::report(g, taskyon::Error{taskyon::Errc::bad_usage, why, {}});
    app.exit(e);
    return tycli::kExitBadInput;
  }
  return g.exit_code;
}
