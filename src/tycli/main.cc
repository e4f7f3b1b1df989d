// tycli: installs tools as content-addressed revisions and runs pinned calls
// in sandboxes. One file per subcommand group; this file wires them up.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli.h"

int main(int argc, char** argv) {
  tycli::Globals g;
  CLI::App app{"tycli: Taskyon's tool registry, task compiler and sandbox host"};
  app.set_version_flag("--version", "tycli 0.1.0");
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--db", g.db_path,
                 "SQLite store (default $TASKYON_HOME/taskyon.db; TASKYON_HOME defaults to "
                 "$XDG_DATA_HOME/taskyon, else ~/.local/share/taskyon)");
  app.add_flag("--json", g.json, "machine-readable JSON output on stdout");

  tycli::add_tool_commands(app, g);
  tycli::add_call_command(app, g);
  tycli::add_sandbox_commands(app, g);
  tycli::add_run_command(app, g);
  tycli::add_task_commands(app, g);
  tycli::add_chat_commands(app, g);
  tycli::add_policy_commands(app, g);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return tycli::kExitBadInput;
  }
  return g.exit_code;
}
