// `make install` and what it installs: the installed tycli run away from the
// source tree, its man page through groff, and the bash, zsh and fish
// completions through the real shells (each SKIPs when its shell is absent).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_tree.h"
#include "test_util.h"

namespace taskyon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_command;
using testing::run_tycli;

const std::string kDenoPackage = std::string(TASKYON_SOURCE_DIR) + "/" + testing::kDenoPackageBinary;

bool have(const std::string& program) {
  for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"})
    if (::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  return false;
}

// The top-level commands as `tycli --help` lists them (CLI11's "Subcommands:" section).
std::vector<std::string> top_level_commands(const fs::path& home) {
  const auto help = run_tycli({"--help"}, home);
  std::vector<std::string> names;
  std::istringstream lines(help.out);
  bool in_section = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Subcommands:")) {
      in_section = true;
    } else if (in_section && line.starts_with("  ") && line.size() > 2 && line[2] != ' ') {
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
    } else if (in_section && !line.empty() && !line.starts_with(" ")) {
      break;
    }
  }
  return names;
}

TEST(Install, InstalledTycliFindsItsDenoAndRunsOutsideTheSourceTree) {
  testing::TempDir prefix, home;  // under $TMPDIR, outside the repository
  const fs::path build_dir = fs::path(TYCLI_PATH).parent_path();
  auto inst = run_command({"cmake", "--install", build_dir.string(), "--prefix", prefix.path().string()}, home.path());
  ASSERT_EQ(inst.exit_code, 0) << inst.out << inst.err;
  const fs::path p = prefix.path();
  for (const char* file : {"bin/tycli", "share/man/man1/tycli.1", "share/bash-completion/completions/tycli",
                           "share/zsh/site-functions/_tycli", "share/fish/vendor_completions.d/tycli.fish"})
    EXPECT_TRUE(fs::is_regular_file(p / file)) << file;
  const bool deno = fs::exists(kDenoPackage);
  EXPECT_EQ(fs::exists(p / "lib/taskyon/deno"), deno);

  // cwd=/ and PATH without the repository's node_modules: nothing points back at the source tree.
  const testing::Launch away{.cwd = "/", .path = "/usr/bin:/bin"};
  const std::string tycli = (p / "bin/tycli").string();
  const std::string tool = home.write("add.json", testing::read_file(std::string(TASKYON_SOURCE_DIR) + "/examples/tools/add.json"));
  auto installed = run_command({tycli, "tool", "install", tool}, home.path(), away);
  ASSERT_EQ(installed.exit_code, 0) << installed.err;
  auto on_node = run_command({tycli, "call", "add", "--args", R"({"num1": 2, "num2": 40})"}, home.path(), away);
  EXPECT_EQ(on_node.exit_code, 0) << on_node.err;
  EXPECT_EQ(on_node.out, "42\n");
  auto explain = run_command({tycli, "sandbox", "explain"}, home.path(), away);
  EXPECT_EQ(explain.exit_code, 0) << explain.err;
  if (!deno) GTEST_SKIP() << "no " << kDenoPackage << " (scripts/setup.sh's npm ci brings it): Deno not installed";
  auto on_deno =
      run_command({tycli, "call", "add", "--js-runtime", "deno", "--args", R"({"num1": 2, "num2": 40})"}, home.path(), away);
  EXPECT_EQ(on_deno.exit_code, 0) << on_deno.err;
  EXPECT_EQ(on_deno.out, "42\n");
  auto explain_deno = run_command({tycli, "sandbox", "explain", "--js-runtime", "deno"}, home.path(), away);
  EXPECT_EQ(explain_deno.exit_code, 0) << explain_deno.err;
  EXPECT_THAT(explain_deno.out, HasSubstr("found in tycli's install: " + (p / "lib/taskyon/deno").string()))
      << explain_deno.out;
}

TEST(ManPage, RendersWithoutWarningsAndNamesEveryTopLevelCommand) {
  testing::TempDir home;
  auto man = run_tycli({"man"}, home.path());
  ASSERT_EQ(man.exit_code, 0) << man.err;
  const std::string page = home.write("tycli.1", man.out);
  auto groff = run_command({"groff", "-man", "-Tutf8", "-ww", "-z", page}, home.path());
  EXPECT_EQ(groff.exit_code, 0);
  EXPECT_EQ(groff.err, "");
  for (const char* section : {".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH COMMANDS", ".SH FILES",
                              ".SH ENVIRONMENT", ".SH \"EXIT STATUS\""})
    EXPECT_THAT(man.out, HasSubstr(section));
  const auto commands = top_level_commands(home.path());
  ASSERT_GE(commands.size(), 10u);
  for (const auto& name : commands) EXPECT_THAT(man.out, HasSubstr(".SS \"tycli " + name + "\"\n")) << name;
  EXPECT_THAT(man.out, HasSubstr("\\fB\\-\\-js\\-runtime\\fR"));  // an option's hyphens copy as ASCII
  EXPECT_THAT(man.out, Not(HasSubstr(".SS \"tycli man\"")));       // hidden
  // The file the build wrote is the same page.
  EXPECT_EQ(testing::read_file(fs::path(TYCLI_PATH).parent_path() / "share/man/man1/tycli.1"), man.out);
}

TEST(ManPage, EscapesRoff) {
  tycli::CommandNode tree{"tycli", "tycli", "root", {}, {}};
  tree.commands.push_back({"dot", "tycli dot", ".starts with a dot", {}, {}});
  tree.commands.push_back({"quote", "tycli quote", "'starts with a quote", {}, {}});
  tycli::OptionNode opt;
  opt.names = {"--some-flag"};
  opt.description = R"(a \back\slash, café, see --other-one and read-only)";
  tree.commands.back().options.push_back(opt);
  const std::string page = tycli::man_page(tree, "tycli 0.1.0");
  EXPECT_THAT(page, HasSubstr("\n\\&.starts with a dot\n"));
  EXPECT_THAT(page, HasSubstr("\n\\&'starts with a quote\n"));
  EXPECT_THAT(page, HasSubstr("\\fB\\-\\-some\\-flag\\fR"));
  EXPECT_THAT(page, HasSubstr(R"(a \eback\eslash, caf\[u00E9], see \-\-other\-one and read-only)"));
  testing::TempDir home;
  auto groff = run_command({"groff", "-man", "-Tutf8", "-ww", "-z", home.write("t.1", page)}, home.path());
  EXPECT_EQ(groff.err, "");
}

class Completion : public ::testing::Test {
 protected:
  // The script of `shell`, written to a file.
  std::string script(const std::string& shell) {
    auto r = run_tycli({"completion", shell}, home.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return home.write("tycli." + shell, r.out);
  }
  // What bash completes for `words`, the last being the word at the cursor.
  std::string bash(const std::vector<std::string>& words) {
    std::string array;
    for (const auto& w : words) array += " '" + w + "'";
    const std::string code = "source " + script("bash") + "; COMP_WORDS=(" + array + "); COMP_CWORD=" +
                             std::to_string(words.size() - 1) + "; _tycli; printf '%s\\n' \"${COMPREPLY[@]}\"";
    auto r = run_command({"bash", "-c", code}, home.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return r.out;
  }
  testing::TempDir home;
};

TEST_F(Completion, BashCompletesEveryLevelFromTheCommandTree) {
  EXPECT_EQ(bash({"tycli", "to"}), "tool\n");
  EXPECT_EQ(bash({"tycli", "tool", "in"}), "install\n");
  EXPECT_EQ(bash({"tycli", "chat", "tools", "--format", ""}), "openai-chat\nopenai-responses\nanthropic\nmcp\n");
  EXPECT_EQ(bash({"tycli", "chat", "call", "--format", "a"}), "anthropic\n");
  EXPECT_EQ(bash({"tycli", "chat", "copy", "--format", ""}), "md\njson\n");
  EXPECT_EQ(bash({"tycli", "call", "--python-isolation", ""}), "host\nstrict\n");
  EXPECT_EQ(bash({"tycli", "completion", ""}), "bash\nzsh\nfish\n");
  // A global option's value is skipped, not taken for a command.
  EXPECT_EQ(bash({"tycli", "--db", "tool", "tool", "in"}), "install\n");
  EXPECT_THAT(bash({"tycli", "call", "--js"}), HasSubstr("--js-runtime\n"));
  EXPECT_THAT(bash({"tycli", "man"}), Not(HasSubstr("man")));  // hidden
  // A FILE argument completes file names.
  home.write("manifest.json", "{}");
  EXPECT_EQ(bash({"tycli", "tool", "install", (home.path() / "manif").string()}),
            (home.path() / "manifest.json").string() + "\n");
  // One name per completion, spaces and glob characters kept.
  home.write("a b*.json", "{}");
  EXPECT_EQ(bash({"tycli", "run", (home.path() / "a").string()}), (home.path() / "a b*.json").string() + "\n");
  // A path-valued option, --opt=VALUE, and what follows `--` (another program's words).
  EXPECT_EQ(bash({"tycli", "--db", (home.path() / "manif").string()}), (home.path() / "manifest.json").string() + "\n");
  EXPECT_EQ(bash({"tycli", "call", "--js-runtime", "=", "de"}), "deno\n");
  EXPECT_EQ(bash({"tycli", "tool", "import-mcp", "--trust", "--", "node", (home.path() / "manif").string()}),
            (home.path() / "manifest.json").string() + "\n");
}

TEST_F(Completion, UnknownShellIsRefusedNamingTheChoices) {
  auto r = run_tycli({"completion", "ksh"}, home.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("ksh"));
  EXPECT_THAT(r.err, HasSubstr("{bash,zsh,fish}"));
}

TEST_F(Completion, ZshLoadsAndCompletes) {
  if (!have("zsh")) GTEST_SKIP() << "no zsh (scripts/setup.sh installs it)";
  const std::string file = script("zsh");
  auto syntax = run_command({"zsh", "-n", file}, home.path());
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
  // As installed: _tycli on fpath, found by compinit through its #compdef line.
  fs::create_directories(home / "site-functions");
  fs::copy_file(file, home / "site-functions" / "_tycli");
  auto loaded = run_command({"zsh", "-f", "-c",
                             "fpath=(" + (home / "site-functions").string() +
                                 " $fpath); autoload -U compinit; compinit -u -d " + (home / "zcompdump").string() +
                                 "; print -r -- $_comps[tycli]"},
                            home.path());
  EXPECT_EQ(loaded.exit_code, 0) << loaded.err;
  EXPECT_EQ(loaded.out, "_tycli\n") << loaded.err;
  // Sourced after compinit: registered with compdef.
  auto sourced = run_command({"zsh", "-f", "-c",
                              "autoload -U compinit; compinit -u -d " + (home / "zcompdump").string() + "; source " +
                                  file + "; print -r -- $_comps[tycli]"},
                             home.path());
  EXPECT_EQ(sourced.out, "_tycli\n") << sourced.err;
  // The walk itself, with the completion system's builtins replaced by printers.
  const std::string stubs =
      "compdef() { :; }; compadd() { [[ $1 == -- ]] && shift; print -l -- \"$@\"; }; "
      "_describe() { print -l -- ${(P)${@[-1]}}; }; _files() { print files; }; source " + file + "; ";
  auto at = [&](const std::string& words, int current) {
    auto r = run_command({"zsh", "-f", "-c", stubs + "words=(" + words + "); CURRENT=" + std::to_string(current) + "; _tycli"},
                         home.path());
    EXPECT_EQ(r.err, "");
    return r.out;
  };
  EXPECT_THAT(at("tycli to", 2), HasSubstr("tool:"));
  EXPECT_THAT(at("tycli tool in", 3), HasSubstr("install:"));
  EXPECT_EQ(at("tycli chat tools --format ''", 5), "openai-chat\nopenai-responses\nanthropic\nmcp\n");
  EXPECT_EQ(at("tycli tool install ''", 4), "files\n");
  EXPECT_THAT(at("tycli completion ''", 3), HasSubstr("fish:"));
}

TEST_F(Completion, FishLoadsAndCompletes) {
  if (!have("fish")) GTEST_SKIP() << "no fish (scripts/setup.sh installs it)";
  const std::string file = script("fish");
  auto syntax = run_command({"fish", "-n", file}, home.path());
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
  auto complete = [&](const std::string& line) {
    auto r = run_command({"fish", "--no-config", "-c", "source " + file + "; complete -C '" + line + "'"}, home.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string words;  // the completions without their descriptions
    std::istringstream lines(r.out);
    for (std::string l; std::getline(lines, l);) words += l.substr(0, l.find('\t')) + "\n";
    return words;
  };
  EXPECT_EQ(complete("tycli to"), "tool\n");
  EXPECT_EQ(complete("tycli tool in"), "install\n");
  EXPECT_EQ(complete("tycli chat tools --format "), "anthropic\nmcp\nopenai-chat\nopenai-responses\n");
  EXPECT_EQ(complete("tycli --db x tool in"), "install\n");
  EXPECT_EQ(complete("tycli completion "), "bash\nfish\nzsh\n");
  EXPECT_THAT(complete("tycli call --js"), HasSubstr("--js-runtime\n"));
}

}  // namespace
}  // namespace taskyon
