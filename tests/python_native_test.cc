// executePython, the native Python tool (DESIGN §5; P1, P2, P3; host-mode
// bounds), through tycli processes and real python3 processes. The strict
// mode's containment is tests/escape_python_test.cc.
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/native/native.h"
#include "taskyon/native/python.h"
#include "test_util.h"

namespace taskyon::native {
namespace {

namespace fs = std::filesystem;
using json::Value;
using taskyon::testing::TempDir;

// Runs tycli as a user would, with exactly this environment: TASKYON_HOME,
// TMPDIR (under `home`), PATH = `path_env`, plus `extra_env`; stdin is
// /dev/null (no terminal); `cwd` empty: the test's.
struct Tycli {
  int exit_code = -1;
  std::string out, err;
  json::Value json() const { return json::Value::parse(out, nullptr, false); }
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Tycli tycli(const std::vector<std::string>& args, const fs::path& home, const std::string& path_env,
            const std::vector<std::string>& extra_env = {}, const std::string& cwd = "") {
  fs::create_directories(home / "tmp");
  static int counter = 0;
  const fs::path out_file = home / ("tycli-out." + std::to_string(++counter));
  const fs::path err_file = home / ("tycli-err." + std::to_string(counter));
  std::vector<std::string> argv_s = {TYCLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s = {"TASKYON_HOME=" + home.string(), "TMPDIR=" + (home / "tmp").string(),
                                    "PATH=" + path_env};
  env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(devnull, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  Tycli r;
  r.exit_code = taskyon::testing::wait_exit(pid);
  r.out = slurp(out_file);
  r.err = slurp(err_file);
  fs::remove(out_file);
  fs::remove(err_file);
  return r;
}

std::string test_path() { return std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"; }

// Installs executePython (the manifest `tycli tool natives` prints) into `home`'s store.
::testing::AssertionResult install_python(const fs::path& home, const std::string& path_env) {
  const Tycli natives = tycli({"--json", "tool", "natives"}, home, path_env);
  if (natives.exit_code != 0) return ::testing::AssertionFailure() << "tool natives: " << natives.err;
  for (const auto& m : natives.json()) {
    if (m.value("native", "") != "taskyon.executePython") continue;
    std::ofstream(home / "executePython.json") << m.dump();
    const Tycli installed = tycli({"tool", "install", "--trust", (home / "executePython.json").string()}, home, path_env);
    if (installed.exit_code != 0) return ::testing::AssertionFailure() << "install: " << installed.err;
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "executePython is not listed: " << natives.out;
}

// `tycli --json call executePython` with `code`; extra flags before --args.
Tycli call_python(const fs::path& home, const std::string& path_env, const std::string& code,
                  const std::vector<std::string>& flags, const std::vector<std::string>& extra_env = {},
                  const std::string& cwd = "") {
  std::vector<std::string> args = {"--json", "call", "executePython"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--args");
  args.push_back(json::Value{{"code", code}}.dump());
  return tycli(args, home, path_env, extra_env, cwd);
}

// The interpreter the test's own PATH offers (the tests need one).
const python::Interpreter& real_python() {
  static const auto found = python::detect_python(test_path());
  if (!found) {
    ADD_FAILURE() << "these tests need python3 on PATH: " << found.error().message;
    std::abort();
  }
  return *found;
}

// A PATH directory holding only `python3` -> `target` (empty: nothing).
std::string path_with_python(const TempDir& dir, const std::string& target) {
  const fs::path bin = dir / "bin";
  fs::create_directories(bin);
  if (!target.empty()) fs::create_symlink(target, bin / "python3");
  return bin.string();
}

bool listed(const Tycli& natives) {
  for (const auto& m : natives.json())
    if (m.value("native", "") == "taskyon.executePython") return true;
  return false;
}

class PythonNative : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(install_python(home_.path(), test_path())); }
  // Host mode unless the flags choose: the P2 and Host_ cases write files and
  // start processes, which only host mode can (strict is the default).
  Tycli run(const std::string& code, std::vector<std::string> flags = {"--approve-python"},
            const std::vector<std::string>& env = {}) {
    if (std::find(flags.begin(), flags.end(), "--python-isolation") == flags.end())
      flags.insert(flags.end(), {"--python-isolation", "host"});
    return call_python(home_.path(), test_path(), code, flags, env);
  }
  TempDir home_;
};

// --- P1: offered only when an interpreter is detected ------------------------

TEST(PythonDetect, P1_ListedWhenPython3AnswersOnPath) {
  TempDir home;
  EXPECT_TRUE(listed(tycli({"--json", "tool", "natives"}, home.path(), test_path())));
  const auto& py = real_python();
  EXPECT_TRUE(py.version.starts_with("3."));
  EXPECT_EQ(fs::canonical(py.executable).string(), py.executable);
  EXPECT_FALSE(py.path.empty());
}

TEST(PythonDetect, P1_NotListedInstallableOrCallableWithoutPython3) {
  TempDir home, empty;
  const std::string no_python = path_with_python(empty, "");
  ASSERT_TRUE(install_python(home.path(), test_path()));  // installed while python3 was there

  const Tycli natives = tycli({"--json", "tool", "natives"}, home.path(), no_python);
  EXPECT_EQ(natives.exit_code, 0) << natives.err;
  EXPECT_FALSE(listed(natives)) << natives.out;
  EXPECT_NE(natives.out.find("taskyon.sha256"), std::string::npos);  // the other natives stay

  const Tycli install = tycli({"tool", "install", "--trust", (home / "executePython.json").string()}, home.path(),
                              no_python);
  EXPECT_NE(install.exit_code, 0);
  EXPECT_NE(install.err.find("taskyon.executePython"), std::string::npos) << install.err;

  const Tycli call = call_python(home.path(), no_python, "print(1)", {"--approve-python"});
  EXPECT_EQ(call.exit_code, 3) << call.out << call.err;  // refused: the runtime is missing
  const std::string said = call.out + call.err;  // --json: the error is on stdout
  EXPECT_NE(said.find("P1: taskyon.executePython is not offered"), std::string::npos) << said;
  EXPECT_NE(said.find("runtime_missing"), std::string::npos) << said;
}

TEST(PythonDetect, P1_APython3ThatDoesNotAnswerIsNotDetected) {
  TempDir home, dir;
  const fs::path bin = dir / "bin";
  fs::create_directories(bin);
  std::ofstream(bin / "python3") << "#!/bin/sh\necho 'pyenv: python3: command not found' >&2\nexit 127\n";
  fs::permissions(bin / "python3", fs::perms::owner_all);
  const auto found = python::detect_python(bin.string());
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().code, Errc::runtime_missing);
  EXPECT_NE(found.error().message.find("did not answer"), std::string::npos) << found.error().message;
  EXPECT_FALSE(listed(tycli({"--json", "tool", "natives"}, home.path(), bin.string())));
}

// A shim (a script that execs the interpreter, as pyenv's does) is resolved
// to the real ELF interpreter, and runs exec that one directly.
TEST(PythonDetect, P1_AShimIsResolvedToTheRealInterpreter) {
  TempDir home, dir;
  const fs::path bin = dir / "bin";
  fs::create_directories(bin);
  std::ofstream(bin / "python3") << "#!/bin/sh\nexec " << real_python().executable << " \"$@\"\n";
  fs::permissions(bin / "python3", fs::perms::owner_all);
  const auto found = python::detect_python(bin.string());
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->command, (bin / "python3").string());
  EXPECT_EQ(found->executable, real_python().executable);

  ASSERT_TRUE(install_python(home.path(), bin.string()));
  const Tycli r = call_python(home.path(), bin.string(), "import sys; print(sys.executable)", {"--approve-python"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.json()["result"]["stdout"], real_python().executable + "\n");
}

// --- P2: session approval before the first run -----------------------------

TEST_F(PythonNative, P2_WithoutATerminalOrTheFlagTheCallIsAToolError) {
  const fs::path marker = home_ / "ran";
  const Tycli r = run("open(" + Value(marker.string()).dump() + ", 'w').write('x')", {});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // a tool failure, not an environment error
  const Value out = r.json();
  EXPECT_EQ(out["status"], "tool_error");
  const std::string message = out["error"]["message"];
  EXPECT_NE(message.find("--approve-python"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(marker));  // nothing ran
}

TEST_F(PythonNative, P2_ApproveFlagRunsAndTheApprovalIsNotPersisted) {
  const Tycli approved = run("print('hello from python')");
  ASSERT_EQ(approved.exit_code, 0) << approved.err;
  const Value result = approved.json()["result"];
  EXPECT_EQ(result["stdout"], "hello from python\n");
  EXPECT_EQ(result["exitCode"], 0);
  EXPECT_EQ(result["isolation"], "host");

  const Tycli again = run("print('hello again')", {});  // a new process: a new session
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.json()["status"], "tool_error");
}

TEST_F(PythonNative, P2_RunApprovesWithTheFlagToo) {
  const std::string conversation = Value::array({
      {{"role", "user"}, {"content", {{"message", "run it"}}}},
      {{"role", "assistant"},
       {"content", {{"functionCall", {{"name", "executePython"}, {"arguments", {{"code", "print(6*7)"}}}}}}}},
  }).dump();
  std::ofstream(home_ / "conv.json") << conversation;
  const Tycli refused = tycli({"--json", "run", (home_ / "conv.json").string()}, home_.path(), test_path());
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  TempDir other;
  ASSERT_TRUE(install_python(other.path(), test_path()));
  std::ofstream(other / "conv.json") << conversation;
  const Tycli ran =
      tycli({"--json", "run", "--approve-python", (other / "conv.json").string()}, other.path(), test_path());
  EXPECT_EQ(ran.exit_code, 0) << ran.out << ran.err;
}

// The session asks once and remembers the answer, yes or no, in memory only.
TEST(PythonSession, P2_AsksOnceAndRemembersTheAnswer) {
  int asked = 0;
  auto asking = [&](bool answer) {
    Session::Settings s;
    s.ask = [&asked, answer](std::string_view) { ++asked; return answer; };
    return s;
  };
  Session yes(asking(true));
  EXPECT_TRUE(yes.approve("taskyon.executePython", "q?", "how"));
  EXPECT_TRUE(yes.approve("taskyon.executePython", "q?", "how"));
  EXPECT_EQ(asked, 1);

  Session no(asking(false));
  auto refused = no.approve("taskyon.executePython", "q?", "how");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("declined"), std::string::npos);
  EXPECT_FALSE(no.approve("taskyon.executePython", "q?", "how"));
  EXPECT_EQ(asked, 2);

  Session nobody;
  auto unasked = nobody.approve("taskyon.executePython", "q?", "pass --approve-python");
  ASSERT_FALSE(unasked);
  EXPECT_NE(unasked.error().message.find("pass --approve-python"), std::string::npos);
}

// On a terminal tycli asks; "y" runs the code, anything else refuses it.
TEST_F(PythonNative, P2_TheTerminalPromptSaysWhatHostModeMeans) {
  for (const std::string answer : {"y", "n"}) {
    int master = -1;
    std::vector<std::string> argv_s = {TYCLI_PATH, "call", "executePython", "--python-isolation", "host",
                                       "--args", R"j({"code":"print(40+2)"})j"};
    std::vector<std::string> env_s = {"TASKYON_HOME=" + home_.path().string(),
                                      "TMPDIR=" + (home_ / "tmp").string(), "PATH=" + test_path()};
    std::vector<char*> argv, envp;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    std::string seen;
    char buf[4096];
    bool answered = false;
    for (;;) {
      const ssize_t n = ::read(master, buf, sizeof buf);
      if (n <= 0) break;  // EIO once the child closed the terminal
      seen.append(buf, static_cast<std::size_t>(n));
      if (!answered && seen.find("[y/N]") != std::string::npos) {
        const std::string line = answer + "\n";
        ASSERT_EQ(::write(master, line.data(), line.size()), static_cast<ssize_t>(line.size()));
        answered = true;
      }
    }
    ::close(master);
    const int exit_code = taskyon::testing::wait_exit(pid);
    EXPECT_TRUE(answered) << seen;
    EXPECT_NE(seen.find("your own OS permissions"), std::string::npos) << seen;
    EXPECT_NE(seen.find("read and change your files"), std::string::npos) << seen;
    if (answer == "y") {
      EXPECT_EQ(exit_code, 0) << seen;
      EXPECT_NE(seen.find("42"), std::string::npos) << seen;
    } else {
      EXPECT_EQ(exit_code, 1) << seen;
      EXPECT_NE(seen.find("declined"), std::string::npos) << seen;
    }
  }
}

// --- Host mode (an explicit choice): what it still bounds ------------------

TEST_F(PythonNative, Host_ResultShapeExitCodesAndIsolatedMode) {
  const Tycli ok = run(
      "import sys, os\nprint(sys.flags.isolated, sys.flags.dont_write_bytecode, os.getcwd())\n"
      "print('to stderr', file=sys.stderr)\nraise SystemExit(3)");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;  // the tool ran: a non-zero exit is data, not a tool error
  const Value r = ok.json()["result"];
  EXPECT_EQ(r["exitCode"], 3);
  EXPECT_EQ(r["stderr"], "to stderr\n");
  EXPECT_EQ(r["truncated"], false);
  const std::string out = r["stdout"];
  EXPECT_TRUE(out.starts_with("1 1 ")) << out;
  const std::string cwd = out.substr(4, out.size() - 5);
  EXPECT_NE(cwd.find("taskyon-python-"), std::string::npos) << cwd;
  EXPECT_FALSE(fs::exists(cwd)) << "the scratch directory is removed after the run";

  const Tycli raised = run("raise ValueError('boom')");
  EXPECT_EQ(raised.json()["result"]["exitCode"], 1);
  EXPECT_NE(raised.json()["result"]["stderr"].get<std::string>().find("ValueError: boom"), std::string::npos);
}

TEST_F(PythonNative, Host_MinimalEnvironment) {
  const std::string secret = "host-canary-" + std::to_string(::getpid());
  const Tycli r = run("import os, json; print(json.dumps(dict(os.environ)))", {"--approve-python"},
                      {"TASKYON_PY_CANARY=" + secret, "OPENAI_API_KEY=" + secret, "PYTHONPATH=/nowhere"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Value env = Value::parse(r.json()["result"]["stdout"].get<std::string>());
  EXPECT_EQ(env, (Value{{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"LANG", "C.UTF-8"}})) << env.dump();
  EXPECT_EQ(r.out.find(secret), std::string::npos);
}

TEST_F(PythonNative, Host_OutputIsBoundedAndTheProcessKilled) {
  const Tycli r = run("import sys\nwhile True: sys.stdout.write('x' * 65536)");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Value result = r.json()["result"];
  EXPECT_EQ(result["truncated"], true);
  EXPECT_EQ(result["stdout"].get<std::string>().size(), python::kMaxOutputBytes);
  EXPECT_EQ(result["exitCode"], 128 + SIGKILL);
}

// The timeout kills the whole process group: a grandchild the code started
// does not outlive the call.
TEST_F(PythonNative, Host_TimeoutKillsTheProcessGroup) {
  const fs::path pid_file = home_ / "grandchild.pid";
  const Tycli r = run("import subprocess\np = subprocess.Popen(['sleep', '300'])\nopen(" +
                          Value(pid_file.string()).dump() + ", 'w').write(str(p.pid))\nwhile True: pass",
                      {"--approve-python", "--timeout", "3000"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const Value out = r.json();
  EXPECT_EQ(out["status"], "tool_error");
  EXPECT_NE(out["error"]["message"].get<std::string>().find("timeout"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(pid_file));
  const int grandchild = std::stoi(slurp(pid_file));
  // Killed by then; it may take the kernel a moment to reap the orphan.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    gone = text.empty() || text.find(") Z") != std::string::npos;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_TRUE(gone) << "pid " << grandchild << " survived the call";
}

// --- P3: the CLI never loads Pyodide ----------------------------------------

bool contains_ci(std::string haystack, const std::string& needle) {
  std::transform(haystack.begin(), haystack.end(), haystack.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return haystack.find(needle) != std::string::npos;
}

TEST(PythonP3, TheCliAndItsGuestCodeNeverMentionPyodide) {
  const std::string needle = std::string("pyo") + "dide";  // this test binary is not the CLI
  // The binary may name it in prose (the P3 diagnostic does); nothing in it
  // can load it: no loader entry point, no distribution file, no CDN path.
  std::string binary = slurp(TYCLI_PATH);
  ASSERT_FALSE(binary.empty());
  std::transform(binary.begin(), binary.end(), binary.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const std::string& loader : std::vector<std::string>{"load" + needle, needle + ".js", needle + ".mjs", needle + ".asm",
                                   needle + "-lock", "/" + needle + "/", needle + "_py"})
    EXPECT_EQ(binary.find(loader), std::string::npos) << TYCLI_PATH << " contains " << loader;
  int guest_files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(TASKYON_SOURCE_DIR) / "src" / "guest")) {
    if (!entry.is_regular_file()) continue;
    ++guest_files;
    EXPECT_FALSE(contains_ci(slurp(entry.path()), needle)) << entry.path();
  }
  EXPECT_GT(guest_files, 0);
  // package.json may carry it only as a devDependency: the browser host's
  // Python (docs/browser.md "Browser Python"), never something the CLI needs.
  const Value package = Value::parse(slurp(fs::path(TASKYON_SOURCE_DIR) / "package.json"));
  for (const auto& [key, section] : package.items()) {
    if (key != "devDependencies") {
      EXPECT_FALSE(contains_ci(section.dump(), needle)) << "package.json \"" << key << "\"";
    }
  }
  // And the one Python the CLI offers is the native interpreter.
  TempDir home;
  for (const auto& m : tycli({"--json", "tool", "natives"}, home.path(), test_path()).json())
    EXPECT_FALSE(contains_ci(m.dump(), needle));
}

}  // namespace
}  // namespace taskyon::native
