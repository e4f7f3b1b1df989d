// Issue 11, items 1 and 3 for strict Python without bubblewrap: the mount
// namespace binds the interpreter's prefix read-only at the same paths, so the
// sandbox uid (65534, which cannot traverse pyenv's 0700 /root) still starts
// it, and a host path the interpreter does not need answers ENOENT. Each claim
// with its control: with the layers off, the same stat succeeds. Real python3,
// hardening::Policy directly (Landlock off, so only the mount namespace
// stands between the script and the host's tree).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/hardening/contain.h"
#include "taskyon/hardening/probe.h"
#include "test_util.h"

namespace taskyon::hardening {
namespace {

namespace fs = std::filesystem;
using taskyon::testing::TempDir;

// What this machine's python3 says of itself: "<real executable>\n<base prefix>\n".
std::array<std::string, 2> python_paths() {
  std::array<std::string, 2> out;
  FILE* p = ::popen("python3 -c 'import os, sys; print(os.path.realpath(sys.executable)); "
                    "print(os.path.realpath(sys.base_prefix))' 2>/dev/null",
                    "r");
  if (!p) return out;
  char line[4096];
  for (std::string& field : out) {
    if (!std::fgets(line, sizeof line, p)) break;
    field = line;
    if (!field.empty() && field.back() == '\n') field.pop_back();
  }
  ::pclose(p);
  return out;
}

class PythonKernelLayers : public ::testing::Test {
 protected:
  void SetUp() override {
    const Support& s = support();
    if (!s.full_error.empty() || !s.mount_namespace) GTEST_SKIP() << "needs the mount namespace: " << s.full_error;
    paths_ = python_paths();
    if (paths_[0].empty()) GTEST_SKIP() << "no python3";
    ::chmod(dir_.path().c_str(), 0755);
    canary_ = dir_.write("canary.txt", "canary-7c1d\n");
    work_ = dir_ / "work";
    fs::create_directory(work_);
  }

  // Runs `script` with `python3 -I -S -c` under `layers`; its stdout, or why not.
  std::string run(Layers layers, const std::string& script) {
    auto policy = Policy::prepare(paths_[0], {"/dev/null"}, layers, {}, {paths_[1]});
    EXPECT_TRUE(policy.has_value()) << policy.error().describe();
    if (!policy) return "no policy";
    int in[2], out[2], err[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
    Fd report_host, report_child;
    if ((*policy)->namespace_plan().pid()) {
      EXPECT_TRUE(report_socket(report_host, report_child));
    }
    auto containment = Containment::prepare(
        *policy,
        {.argv = {paths_[0], "-I", "-S", "-c", script},
         .env = {},
         .workdir = work_.string(),
         .limits = {.data_bytes = 512u << 20, .open_files = 64}},
        ChildStdio{in[0], out[1], err[1], report_child.get(), report_host.get()});
    EXPECT_TRUE(containment.has_value()) << containment.error().describe();
    if (!containment) return "no containment";
    const pid_t pid = start(**containment);
    report_child.reset();
    ::close(in[0]);
    ::close(in[1]);
    ::close(out[1]);
    ::close(err[1]);
    std::string text, errors;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(out[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
    while ((n = ::read(err[0], buf, sizeof buf)) > 0) errors.append(buf, static_cast<std::size_t>(n));
    ::close(out[0]);
    ::close(err[0]);
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "wait status " << status << " (" << step_name(WIFEXITED(status) ? WEXITSTATUS(status) : 0) << ") "
        << errors;
    return text;
  }

  std::string stat_script() const {
    return "import os\n"
           "def t(p):\n"
           "    try:\n"
           "        os.stat(p); return 'ok'\n"
           "    except OSError as e:\n"
           "        return 'err:%d' % e.errno\n"
           "print(t('/etc/shadow'), t('" + canary_ + "'), os.getuid())\n";
  }

  std::array<std::string, 2> paths_;
  TempDir dir_;
  std::string canary_;
  fs::path work_;
};

TEST_F(PythonKernelLayers, TheMountNamespaceHidesHostPathsFromTheSandboxUid) {
  Layers layers;
  layers.landlock = false;  // only the mount namespace stands
  // Python starts (its prefix is bound), as the sandbox uid when tycli is
  // root; host paths it does not need are not there.
  EXPECT_EQ(run(layers, stat_script()), "err:2 err:2 1000\n");
  layers.mount_namespace = false;
  layers.sandbox_uid = false;  // 65534 could not reach a pyenv interpreter under /root without the binds
  EXPECT_EQ(run(layers, stat_script()), "ok ok 1000\n");
}

}  // namespace
}  // namespace taskyon::hardening
