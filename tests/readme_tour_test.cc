// The README's tour runs as written (issue 16 item 6): every command line of
// the ```sh block under "## A short tour of `tycli`", read from README.md as it
// is, run in order by bash from a copy of the repository root (a symlink farm,
// so files the tour writes land in a temporary directory) with `tycli` on
// PATH, a fresh TASKYON_HOME and stdin /dev/null. A line fails the test with
// its exit code and stderr. A line whose comment says "(exit N)" must exit N
// (a deny verdict is an answer, not an error). Lines needing Deno or python3
// are skipped, and said so, only when that program is absent. `tycli serve`
// runs until it printed where it listens, then gets SIGTERM and must exit 0.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "taskyon/sandbox/runtime.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using taskyon::testing::Launch;
using taskyon::testing::TempDir;

const fs::path kSource = TASKYON_SOURCE_DIR;
constexpr const char* kLineTimeout = "180";  // seconds: a safety net against a hung line, not an assertion

using taskyon::testing::read_file;

// The command lines of the tour's sh block (blank and comment-only lines left out).
std::vector<std::string> tour_lines(const std::string& readme) {
  const auto section = readme.find("## A short tour of `tycli`");
  if (section == std::string::npos) return {};
  const auto open = readme.find("```sh\n", section);
  if (open == std::string::npos) return {};
  const auto begin = open + 6;
  const auto close = readme.find("```", begin);
  if (close == std::string::npos) return {};
  std::vector<std::string> lines;
  std::istringstream block(readme.substr(begin, close - begin));
  for (std::string line; std::getline(block, line);) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    lines.push_back(line);
  }
  return lines;
}

// The comment of a line (after the first " #"), for "(exit N)".
int expected_exit(const std::string& line) {
  static const std::regex exit_note(R"(#.*\(exit (\d+)\))");
  std::smatch m;
  return std::regex_search(line, m, exit_note) ? std::stoi(m[1]) : 0;
}

// Whether tycli can use `program`: Deno as tycli finds it (PATH, its install, the
// repository's node_modules: sandbox::find_deno), python3 on PATH.
bool available(const std::string& program, const fs::path& home) {
  if (program == "deno") return taskyon::sandbox::find_deno("").has_value();
  return taskyon::testing::run_command({"bash", "-c", "command -v " + program}, home).exit_code == 0;
}

// The optional program a line needs, if any.
std::string optional_program(const std::string& line) {
  if (line.find("deno") != std::string::npos) return "deno";
  if (line.find("executePython") != std::string::npos || line.find("py.json") != std::string::npos) return "python3";
  return {};
}

bool is_serve(const std::string& line) {
  static const std::regex serve(R"(^\s*tycli\s+(--\S+\s+)*serve(\s|$))");
  return std::regex_search(line, serve);
}

// A copy of the repository root: a symlink per top-level entry (build
// directories and .git left out).
void make_farm(const fs::path& farm) {
  fs::create_directories(farm);
  for (const auto& entry : fs::directory_iterator(kSource)) {
    const auto name = entry.path().filename().string();
    if (name.starts_with("build") || name == ".git") continue;
    fs::create_symlink(entry.path(), farm / name);
  }
}

// Runs `tycli serve` until it says where it listens, then stops it with SIGTERM.
std::string run_serve(const std::string& line, const fs::path& home, const Launch& launch, const fs::path& log) {
  const int pid = taskyon::testing::spawn_command({"bash", "-c", "exec " + line}, home, launch, log.string());
  bool listening = false;
  for (int i = 0; i < 1200 && !listening; ++i) {  // 120 s at most: a safety net
    listening = read_file(log).find("listening on http://127.0.0.1:") != std::string::npos;
    if (!listening) usleep(100 * 1000);
  }
  kill(pid, SIGTERM);
  const int exit = taskyon::testing::wait_exit(pid);
  if (!listening) return "never said where it listens; output:\n" + read_file(log);
  if (exit != 0) return "exit " + std::to_string(exit) + " after SIGTERM (want a clean exit 0); output:\n" + read_file(log);
  return {};
}

TEST(ReadmeTour, EveryLineRunsAsWritten) {
  const auto lines = tour_lines(read_file(kSource / "README.md"));
  ASSERT_GE(lines.size(), 20u) << "README.md has no tour block under \"## A short tour of `tycli`\"";

  TempDir dir;
  const fs::path home = dir / "home";
  const fs::path bin = dir / "bin";
  const fs::path farm = dir / "repo";
  fs::create_directories(home);
  fs::create_directories(bin);
  fs::create_symlink(TYCLI_PATH, bin / "tycli");
  make_farm(farm);
  const Launch launch{farm, bin.string()};

  int ran = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& line = lines[i];
    const std::string where = "README tour line " + std::to_string(i + 1) + ": " + line;
    if (const auto program = optional_program(line); !program.empty() && !available(program, home)) {
      std::cout << "[ SKIPPED  ] " << program << " is not installed: " << line << "\n";
      continue;
    }
    ++ran;
    if (is_serve(line)) {
      const auto why = run_serve(line, home, launch, dir / "serve.log");
      ASSERT_TRUE(why.empty()) << where << "\n" << why;
      continue;
    }
    const auto r = taskyon::testing::run_command(
        {"timeout", "-k", "10", kLineTimeout, "bash", "-o", "pipefail", "-c", line}, home, launch);
    ASSERT_NE(r.exit_code, 124) << where << "\ntimed out after " << kLineTimeout << " s; stderr:\n" << r.err;
    ASSERT_EQ(r.exit_code, expected_exit(line)) << where << "\nexit " << r.exit_code << "; stderr:\n"
                                                << r.err << "stdout:\n" << r.out;
  }
  std::cout << "[   TOUR   ] " << ran << " of " << lines.size() << " tour lines ran\n";
  EXPECT_GE(ran, 20);
}

// The parts the tour test relies on, checked on their own.
TEST(ReadmeTour, ReadsTheBlockAndItsNotes) {
  const auto lines = tour_lines("x\n## A short tour of `tycli`\n\n```sh\na   # one\n\n   # note\nb (x)\n```\nc\n");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "a   # one");
  EXPECT_EQ(lines[1], "b (x)");
  EXPECT_EQ(expected_exit("tycli policy check x   # deny (exit 1)"), 1);
  EXPECT_EQ(expected_exit("tycli call add   # fails (exit 2)"), 2);
  EXPECT_EQ(expected_exit("tycli call add --args '(exit 1)'"), 0);
  EXPECT_TRUE(is_serve("tycli serve          # the same host"));
  EXPECT_TRUE(is_serve("tycli --json serve"));
  EXPECT_FALSE(is_serve("tycli server"));
  EXPECT_EQ(optional_program("tycli call uppercase --js-runtime deno"), "deno");
  EXPECT_EQ(optional_program("tycli tool install --trust py.json"), "python3");
  EXPECT_EQ(optional_program("tycli call add"), "");
}

}  // namespace
