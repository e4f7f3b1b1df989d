// executePython's isolation choice (issue 11 item 6), through tycli and real
// python3 processes: strict is the default; it refuses to start, naming the
// layer, when the kernel lacks one it depends on (emulated for tycli with a
// seccomp filter that makes the layer's system calls fail as on a kernel
// without it); host mode is an explicit choice that prints a warning line;
// the native's description says what host mode is.
#include <fcntl.h>
#include <seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/native/python.h"
#include "test_util.h"

namespace taskyon::native {
namespace {

namespace fs = std::filesystem;
using json::Value;
using taskyon::testing::TempDir;

// A kernel feature tycli finds missing, emulated by a seccomp filter on tycli
// and everything it starts (filters are inherited and stack).
enum class Without { nothing, landlock, seccomp, user_namespaces };

struct Ran {
  int exit_code = -1;
  std::string out, err;
  Value json() const { return Value::parse(out, nullptr, false); }
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string test_path() { return std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"; }

// Between fork and exec: makes `without` look absent. Landlock:
// landlock_create_ruleset is ENOSYS (no Landlock in the kernel). seccomp:
// PR_SET_SECCOMP and seccomp(2) are EINVAL (CONFIG_SECCOMP_FILTER off).
// User namespaces: unshare(2) and clone(2) with CLONE_NEWUSER are EPERM.
bool emulate(Without without) {
  if (without == Without::nothing) return true;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return false;
  int rc = 0;
  switch (without) {
    case Without::landlock:
      rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(landlock_create_ruleset), 0);
      break;
    case Without::seccomp:
      rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, PR_SET_SECCOMP));
      rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(seccomp), 0);
      break;
    case Without::user_namespaces:
      rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0);
      rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
      rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);  // glibc falls back to clone
      break;
    case Without::nothing:
      break;
  }
  rc |= ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  rc |= seccomp_load(ctx);
  seccomp_release(ctx);
  return rc == 0;
}

Ran tycli(const std::vector<std::string>& args, const fs::path& home, Without without = Without::nothing,
          const std::string& path_env = test_path()) {
  fs::create_directories(home / "tmp");
  static int counter = 0;
  const fs::path out_file = home / ("out." + std::to_string(++counter));
  const fs::path err_file = home / ("err." + std::to_string(counter));
  std::vector<std::string> argv_s = {TYCLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s = {"TASKYON_HOME=" + home.string(), "TMPDIR=" + (home / "tmp").string(),
                                    "PATH=" + path_env};
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
    if (!emulate(without)) ::_exit(126);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  Ran r;
  r.exit_code = taskyon::testing::wait_exit(pid);
  r.out = slurp(out_file);
  r.err = slurp(err_file);
  return r;
}

Value python_manifest(const fs::path& home) {
  for (const auto& m : tycli({"--json", "tool", "natives"}, home).json())
    if (m.value("native", "") == "taskyon.executePython") return m;
  return Value();
}

class PythonIsolationChoice : public ::testing::Test {
 protected:
  void SetUp() override {
    const Value m = python_manifest(home_.path());
    ASSERT_TRUE(m.is_object()) << "executePython is not offered (python3 on PATH?)";
    std::ofstream(home_ / "py.json") << m.dump();
    const Ran installed = tycli({"tool", "install", "--trust", (home_ / "py.json").string()}, home_.path());
    ASSERT_EQ(installed.exit_code, 0) << installed.err;
  }
  Ran call(const std::vector<std::string>& flags, Without without = Without::nothing) {
    std::vector<std::string> args = {"--json", "call", "executePython"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--timeout", "30000", "--args", R"j({"code": "print('ran', 6 * 7)"})j"});
    return tycli(args, home_.path(), without);
  }
  TempDir home_;
};

TEST(PythonStrictRequirements, EachMissingLayerIsNamed) {
  hardening::Support full;
  full.landlock_abi = 6;
  full.seccomp = true;
  full.user_namespaces = true;
  EXPECT_TRUE(python::strict_requirements(full, true));
  EXPECT_TRUE(python::strict_requirements(full, false));
  struct Case {
    hardening::Support support;
    bool bubblewrap;
    std::string names;
  };
  hardening::Support no_landlock = full, no_seccomp = full, no_userns = full, old_landlock = full;
  no_landlock.landlock_abi = 0;
  no_seccomp.seccomp = false;
  no_userns.user_namespaces = false;
  no_userns.namespaces_error = "unshare failed: Operation not permitted";
  old_landlock.landlock_abi = 5;
  for (const Case& c : {Case{no_landlock, true, "Landlock"}, Case{no_seccomp, true, "seccomp"},
                        Case{no_userns, true, "user namespaces"}, Case{no_userns, false, "user namespaces"},
                        Case{old_landlock, false, "Landlock ABI 6"}}) {
    const auto r = python::strict_requirements(c.support, c.bubblewrap);
    ASSERT_FALSE(r) << c.names;
    EXPECT_EQ(r.error().code, Errc::runtime_missing);
    EXPECT_NE(r.error().message.find(c.names), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("refuses to run with fewer layers"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("--python-isolation host"), std::string::npos) << r.error().message;
  }
  EXPECT_TRUE(python::strict_requirements(old_landlock, true));  // bwrap's PID namespace stands in
}

TEST_F(PythonIsolationChoice, StrictIsTheDefaultAndSaysNothing) {
  ASSERT_TRUE(python::strict_available()) << python::strict_available().error().message;
  const Ran r = call({"--approve-python"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.json()["result"]["isolation"], "strict") << r.out;
  EXPECT_EQ(r.json()["result"]["stdout"], "ran 42\n");
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

TEST_F(PythonIsolationChoice, HostIsAnExplicitChoiceWithAWarningLine) {
  const Ran r = call({"--approve-python", "--python-isolation", "host"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.json()["result"]["isolation"], "host");
  EXPECT_EQ(r.err, "tycli: warning: " + python::host_mode_warning(true) + "\n");
  EXPECT_NE(r.err.find("your own OS permissions"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--approve-python"), std::string::npos) << r.err;  // approved without a prompt: it says so
  // Two calls in one process: one warning.
  std::vector<std::string> args = {"call", "executePython", "--approve-python", "--python-isolation", "host",
                                   "--args", R"j({"code": "print(1)"})j", "--args", R"j({"code": "print(2)"})j"};
  const Ran twice = tycli(args, home_.path());
  ASSERT_EQ(twice.exit_code, 0) << twice.err;
  EXPECT_EQ(twice.err, "tycli: warning: " + python::host_mode_warning(true) + "\n");
}

TEST_F(PythonIsolationChoice, TheDescriptionSaysHostModeHasTheUsersAuthority) {
  const std::string description = python_manifest(home_.path()).value("description", "");
  EXPECT_NE(description.find("host mode"), std::string::npos) << description;
  EXPECT_NE(description.find("the user's authority"), std::string::npos) << description;
  EXPECT_NE(description.find("By default in the strict sandbox"), std::string::npos) << description;
}

TEST_F(PythonIsolationChoice, ExplainSaysStrictIsTheDefaultAndWhetherItRunsHere) {
  const Ran r = tycli({"--json", "sandbox", "explain"}, home_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Value py = r.json()["python"];
  EXPECT_EQ(py["default"], "strict");
  EXPECT_EQ(py["strictAvailable"], true) << py.dump();
  // Who strict Python is outside (issue 11 item 1): 65534 on a root host.
  EXPECT_NE(py.value("sandboxUid", "").find(::geteuid() == 0 ? "65534" : "invoking user"), std::string::npos)
      << py.dump();
  const Ran without = tycli({"--json", "sandbox", "explain"}, home_.path(), Without::landlock);
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_EQ(without.json()["python"]["strictAvailable"], false);
  EXPECT_NE(without.json()["python"].value("strictMissing", "").find("Landlock"), std::string::npos) << without.out;
}

// On a kernel without one of the layers strict mode depends on, it refuses
// to start, naming the layer; the code never runs, the call is stored as a
// tool error, and host mode (chosen explicitly) still runs.
class PythonStrictRefuses : public PythonIsolationChoice, public ::testing::WithParamInterface<Without> {};

TEST_P(PythonStrictRefuses, NamingTheMissingLayer) {
  const Without without = GetParam();
  const std::string layer = without == Without::landlock  ? "Landlock"
                            : without == Without::seccomp ? "seccomp"
                                                          : "user namespaces";
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--approve-python"},
        std::vector<std::string>{"--approve-python", "--python-isolation", "strict"}}) {
    const Ran r = call(flags, without);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // a tool error: the call is stored
    const Value out = r.json();
    EXPECT_EQ(out["status"], "tool_error") << r.out;
    const std::string message = out["error"].value("message", "");
    EXPECT_NE(message.find("strict Python refuses to run with fewer layers"), std::string::npos) << message;
    EXPECT_NE(message.find(layer), std::string::npos) << message;
    EXPECT_EQ(r.out.find("ran 42"), std::string::npos) << "the code ran: " << r.out;
    const Ran stored = tycli({"--json", "task", "show", out.value("resultTask", "")}, home_.path());
    EXPECT_EQ(stored.exit_code, 0) << stored.out << stored.err;
  }
  const Ran host = call({"--approve-python", "--python-isolation", "host"}, without);
  ASSERT_EQ(host.exit_code, 0) << host.out << host.err;
  EXPECT_EQ(host.json()["result"]["stdout"], "ran 42\n");
}

INSTANTIATE_TEST_SUITE_P(Kernel, PythonStrictRefuses,
                         ::testing::Values(Without::landlock, Without::seccomp, Without::user_namespaces),
                         [](const auto& info) {
                           return info.param == Without::landlock  ? "WithoutLandlock"
                                  : info.param == Without::seccomp ? "WithoutSeccomp"
                                                                   : "WithoutUserNamespaces";
                         });

}  // namespace
}  // namespace taskyon::native
