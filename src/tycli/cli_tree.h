// A plain description of tycli's command tree, walked from CLI11's App at run
// time, so the shell completions and the man page (completion.cc, man.cc) list
// every command and option without a hand-kept copy. Hidden commands and
// options (CLI11 group "") are left out.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tycli {

struct OptionNode {
  std::vector<std::string> names;    // "-h", "--help" (short first); empty for a positional
  std::string positional;            // a positional's name ("files"), else empty
  std::string description;           // the --help text
  std::string value;                 // the value's placeholder ("TEXT", "INT", "FILE"); empty: a flag
  std::vector<std::string> choices;  // a fixed set of values (CLI::IsMember), in declared order
  bool file = false;                 // the value names a file (CLI::ExistingFile or a FILE placeholder)
  bool required = false;
  bool repeatable = false;           // takes several values (a vector option or positional)
};

struct CommandNode {
  std::string name;         // "tycli", "tool", "install"
  std::string path;         // "tycli tool install"
  std::string description;
  std::vector<OptionNode> options;  // flags, options and positionals, in declared order
  std::vector<CommandNode> commands;
};

// The tree under `app` (the root's name is given, CLI11's root has none).
CommandNode describe_commands(CLI::App& app, const std::string& root_name = "tycli");

// `tycli completion bash|zsh|fish` and the hidden `tycli man` (cmd_completion.cc):
// both describe `root` when they run. Add them after every other command.
void add_completion_commands(CLI::App& root);

// The completion script of `shell` (bash, zsh or fish) for `tree` (completion.cc).
std::string completion_script(const CommandNode& tree, const std::string& shell);

// The man(7) page of `tree` (man.cc); `version` is the footer ("tycli 0.1.0").
std::string man_page(const CommandNode& tree, const std::string& version);

}  // namespace tycli
