// `tycli completion bash|zsh|fish` and the hidden `tycli man`: the command
// tree as a shell completion script or a man page, on stdout.
#include <iostream>
#include <memory>

#include "cli.h"
#include "cli_tree.h"

namespace tycli {

void add_completion_commands(CLI::App& root) {
  auto shell = std::make_shared<std::string>();
  auto* c = root.add_subcommand("completion",
                                "print a completion script for bash, zsh or fish (e.g. source <(tycli completion bash))");
  c->add_option("shell", *shell, "the shell")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  c->callback([&root, shell] { std::cout << completion_script(describe_commands(root), *shell); });
  auto* m = root.add_subcommand("man", "print the man page (roff): man -l <(tycli man)");
  m->group("");  // hidden: the build writes tycli.1 with it
  m->callback([&root] { std::cout << man_page(describe_commands(root), kVersion); });
}

}  // namespace tycli
