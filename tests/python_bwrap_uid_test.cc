// Issue 11 item 1 for strict Python inside bubblewrap: a root host starts
// bwrap as the sandbox uid (65534) in a staged root (python_internal.h,
// Staged), so the sandbox is 65534 inside and outside and owns nothing of the
// host's. Real bwrap and python3, run directly in strict mode's bwrap root
// (detail::spawn_bwrap) without the helper, so no Landlock and no seccomp:
// only the uid stands between the script and a directory of root's (0755,
// bound writable) holding a canary file of root's (0644). The control, with
// the uid switch off (bwrap's own mapping of root), changes both.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "taskyon/native/python.h"
#include "taskyon/native/python_internal.h"
#include "taskyon/sandbox/workdir.h"
#include "test_util.h"

namespace taskyon::native::python {
namespace {

namespace fs = std::filesystem;
using taskyon::testing::TempDir;

class PythonBwrapUid : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the sandbox uid is a root host's (without root, bwrap maps the user)";
    if (bubblewrap().path.empty()) GTEST_SKIP() << "bubblewrap is not usable here: " << bubblewrap().why;
    if (!interpreter()) GTEST_SKIP() << "no python3: " << interpreter().error().message;
    ::chmod(dir_.path().c_str(), 0755);
    canary_ = dir_.write("canary.txt", "canary-65534\n");
    ::chmod(canary_.c_str(), 0644);
  }

  // Runs `script` with python3 -I -S -c in strict mode's bwrap root, the
  // canary's directory bound writable; its stdout, or why not.
  std::string run(const std::string& script, bool sandbox_uid) {
    auto binds = detail::strict_binds(*interpreter());
    EXPECT_TRUE(binds.has_value()) << binds.error().describe();
    auto work = detail::ScratchDir::make(sandbox::kPythonWorkdirPrefix);
    EXPECT_TRUE(work.has_value()) << work.error().describe();
    if (!binds || !work) return "no setup";
    auto child = detail::spawn_bwrap({.bwrap = bubblewrap().path,
                                      .binds = *binds,
                                      .writable = {dir_.path().string()},
                                      .null_file = true,
                                      .command = {interpreter()->executable, "-I", "-S", "-c", script},
                                      .sandbox_uid = sandbox_uid},
                                     work->path());
    EXPECT_TRUE(child.has_value()) << child.error().describe();
    if (!child) return "no child";
    const auto c = detail::collect(**child, "", std::chrono::seconds(30), 1 << 20);
    EXPECT_TRUE(WIFEXITED(c.wait_status) && WEXITSTATUS(c.wait_status) == 0)
        << sandbox::describe_wait_status(c.wait_status) << ": " << c.err;
    return c.out;
  }

  // The ids, then each owner or write check on root's canary and directory.
  std::string script() const {
    const std::string d = dir_.path().string(), f = canary_;
    return "import os\n"
           "def t(f):\n"
           "    try:\n"
           "        f(); return 'ok'\n"
           "    except OSError as e:\n"
           "        return 'err:%d' % e.errno\n"
           "r = [os.getuid(), os.getgid(), os.getgroups()]\n"
           "r.append(t(lambda: os.chmod('" + f + "', 0o6777)))\n"
           "r.append(t(lambda: os.chown('" + f + "', os.getuid(), os.getgid())))\n"
           "r.append(t(lambda: os.utime('" + f + "', (0, 0))))\n"
           "r.append(t(lambda: open('" + f + "', 'a').write('x')))\n"
           "r.append(t(lambda: open('" + d + "/new.txt', 'w').write('x')))\n"
           "r.append(t(lambda: os.unlink('" + f + "')))\n"
           "print(' '.join(map(str, r)))\n";
  }

  TempDir dir_;
  std::string canary_;
};

TEST_F(PythonBwrapUid, TheSandboxIs65534AndOwnsNothingOfTheHosts) {
  struct stat before {};
  ASSERT_EQ(::stat(canary_.c_str(), &before), 0);
  // chmod, chown, utime to a chosen time: EPERM (not the owner); writing
  // the file, creating and unlinking in the directory: EACCES.
  EXPECT_EQ(run(script(), true), "65534 65534 [] err:1 err:1 err:1 err:13 err:13 err:13\n");
  struct stat after {};
  ASSERT_EQ(::stat(canary_.c_str(), &after), 0);
  EXPECT_EQ(after.st_mode, before.st_mode);
  EXPECT_EQ(after.st_uid, before.st_uid);
  EXPECT_EQ(after.st_size, before.st_size);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_FALSE(fs::exists(dir_.path() / "new.txt"));

  // The control: bwrap's mapping of root (sandbox 1000 inside, root outside)
  // owns the canary, and every call succeeds.
  EXPECT_EQ(run(script(), false), "1000 1000 [] ok ok ok ok ok ok\n");
  EXPECT_FALSE(fs::exists(canary_));
}

}  // namespace
}  // namespace taskyon::native::python
