// Hostile Python from ../shared/corpora/escape_cases.md under
// `--python-isolation strict`, through tycli and real python3 processes: one
// test per Python row (PROC-08, PROC-09, ENV-03, PY-01, PY-02, PY-04, PY-05)
// and a few `any` rows, each run in both strict arrangements:
//   * Bwrap: bubblewrap's minimal root, our kernel layers inside it (the
//     test's PATH, which has bwrap);
//   * KernelLayers: our kernel layers alone (a PATH that holds python3 but no
//     bwrap, as on a machine without bubblewrap).
// Each asserts what the code saw (every attempt fails) and the absence of
// host-side effects, with canaries: a secret in a temporary HOME (~/.ssh,
// ~/.aws, the Taskyon store), an environment variable of tycli, a TCP
// listener on 127.0.0.1, marker files the attempts would create, a shared
// object whose constructor would leave a marker. The code gets the canaries'
// coordinates: an attacker is assumed to know them.
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>
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

// Stands for tycli's own pid in an argument (replaced in the child before exec).
const std::string kTycliPid = "@TYCLI_PID@";

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
    // kTycliPid in an argument becomes this process's pid: tycli's, once it execs.
    const std::string self = std::to_string(::getpid());
    for (std::string& a : argv_s)
      for (std::size_t at; (at = a.find(kTycliPid)) != std::string::npos;) a.replace(at, kTycliPid.size(), self);
    argv.clear();
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
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

constexpr const char* kEnvCanary = "TASKYON_PY_ESCAPE_CANARY";

// t(name, f): record 'ok:<value>' or 'err:<exception>:<errno>' for one attempt.
// sc(name, nr, *args): a raw syscall through ctypes, recorded as 'ret:errno'.
const std::string kPrelude = R"(import json, os, sys
R = {}
def t(name, f):
    try:
        R[name] = 'ok:' + str(f())[:300]
    except BaseException as e:
        R[name] = 'err:%s:%s' % (type(e).__name__, getattr(e, 'errno', ''))
def sc(name, nr, *args):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    R[name] = '%d:%d' % (r, ctypes.get_errno())
)";
const std::string kPostlude = "\nprint(json.dumps(R))\n";

enum class Arrangement { bwrap, kernel_layers };

class EscapePython : public ::testing::TestWithParam<Arrangement> {
 protected:
  void SetUp() override {
    struct utsname u {};
    ::uname(&u);
    if (std::string(u.machine) != "x86_64") GTEST_SKIP() << "syscall numbers below are x86_64's";
    const auto& bw = python::bubblewrap();
    if (GetParam() == Arrangement::bwrap) {
      if (bw.path.empty()) GTEST_SKIP() << "bubblewrap is not usable here: " << bw.why;
      path_ = test_path();
    } else {
      const auto found = python::detect_python(test_path());
      ASSERT_TRUE(found) << found.error().message;
      fs::create_directories(bin_ / "bin");
      fs::create_symlink(found->executable, bin_ / "bin" / "python3");
      path_ = (bin_ / "bin").string();
    }
    secret_ = "py-canary-secret-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand());
    fs::create_directories(home_ / ".ssh");
    fs::create_directories(home_ / ".aws");
    std::ofstream(home_ / ".ssh" / "id_rsa") << secret_;
    std::ofstream(home_ / ".aws" / "credentials") << "[default]\naws_secret_access_key=" << secret_ << "\n";
    std::ofstream(home_ / ".bashrc") << "# canary\n";
    bashrc_mtime_ = fs::last_write_time(home_ / ".bashrc");
    ASSERT_TRUE(install_python(home_.path(), path_));

    tcp_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(tcp_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(tcp_, 8), 0);
    socklen_t len = sizeof addr;
    ::getsockname(tcp_, reinterpret_cast<sockaddr*>(&addr), &len);
    tcp_port_ = ntohs(addr.sin_port);
  }

  void TearDown() override {
    if (tcp_ < 0) return;
    // No connection reached the listener, and no canary changed.
    EXPECT_LT(::accept(tcp_, nullptr, nullptr), 0) << "a connection reached the host's loopback listener";
    ::close(tcp_);
    EXPECT_EQ(slurp(home_ / ".ssh" / "id_rsa"), secret_);
    EXPECT_EQ(fs::last_write_time(home_ / ".bashrc"), bashrc_mtime_);
  }

  // Runs prelude + body + postlude under strict isolation; the R dictionary.
  Value attempt(const std::string& body, const std::vector<std::string>& env = {}, const std::string& cwd = "") {
    std::vector<std::string> full_env = {std::string(kEnvCanary) + "=" + secret_};
    full_env.insert(full_env.end(), env.begin(), env.end());
    last_ = call_python(home_.path(), path_, kPrelude + body + kPostlude,
                        {"--approve-python", "--python-isolation", "strict", "--timeout", "30000"}, full_env, cwd);
    EXPECT_EQ(last_.exit_code, 0) << last_.out << last_.err;
    EXPECT_EQ(last_.out.find(secret_), std::string::npos) << "the secret reached the tool: " << last_.out;
    const Value result = last_.json()["result"];
    EXPECT_EQ(result["isolation"], "strict");
    EXPECT_EQ(result["exitCode"], 0) << result.dump();
    const std::string out = result.value("stdout", "");
    const std::size_t line = out.rfind("\n{");  // the last line: json.dumps(R)
    if (line == std::string::npos && !out.starts_with("{")) {
      ADD_FAILURE() << "no result from the code: " << result.dump();
      return Value::object();
    }
    return Value::parse(line == std::string::npos ? out : out.substr(line + 1), nullptr, false);
  }

  static void expect_err(const Value& r, const std::string& key) {
    ASSERT_TRUE(r.contains(key)) << key << " missing in " << r.dump();
    EXPECT_TRUE(r[key].get<std::string>().starts_with("err:")) << key << " = " << r[key];
  }
  // A raw syscall that failed with `err` (errno).
  static void expect_syscall(const Value& r, const std::string& key, int err) {
    ASSERT_TRUE(r.contains(key)) << key << " missing in " << r.dump();
    EXPECT_EQ(r[key], "-1:" + std::to_string(err)) << key;
  }
  std::string q(const fs::path& p) const { return Value(p.string()).dump(); }

  TempDir home_, bin_;
  std::string path_, secret_;
  fs::file_time_type bashrc_mtime_;
  int tcp_ = -1;
  int tcp_port_ = 0;
  Tycli last_;
};

// Works at all: the stdlib imports (the import system lists its directories).
TEST_P(EscapePython, StrictRunsOrdinaryCode) {
  const Value r = attempt("import json, re, collections, decimal, ctypes, hashlib\nR['sum'] = str(sum(range(10)))\n"
                          "R['flags'] = '%d %d' % (sys.flags.isolated, sys.flags.no_site)\n");
  EXPECT_EQ(r["sum"], "45");
  EXPECT_EQ(r["flags"], "1 1");
}

TEST_P(EscapePython, PROC_08_NoSubprocessForkOrExec) {
  const fs::path marker = home_ / "proc08";
  const std::string touch = "['/bin/sh', '-c', 'echo x > " + marker.string() + "']";
  const Value r = attempt("import subprocess, multiprocessing, pty\n"
                          "t('subprocess', lambda: subprocess.run(" + touch + "))\n"
                          "t('fork', lambda: os.fork())\n"
                          "t('system', lambda: os.system('echo x > " + marker.string() + "'))\n"
                          "t('posix_spawn', lambda: os.posix_spawn('/bin/sh', " + touch + ", {}))\n"
                          "t('multiprocessing', lambda: multiprocessing.Process(target=print).start())\n"
                          "t('pty', lambda: pty.fork())\n"
                          "t('execv', lambda: os.execv('/bin/sh', " + touch + "))\n");
  for (const char* key : {"subprocess", "fork", "posix_spawn", "multiprocessing", "pty", "execv"}) expect_err(r, key);
  EXPECT_NE(r["system"], "ok:0");  // system() cannot fork: -1
  EXPECT_FALSE(fs::exists(marker));
}

TEST_P(EscapePython, PROC_09_RawSyscallsThroughCtypes) {
  const Value r = attempt(
      "sc('socket_inet', 41, 2, 1, 0)\n"          // socket(AF_INET, SOCK_STREAM)
      "sc('socket_unix', 41, 1, 1, 0)\n"          // socket(AF_UNIX, SOCK_STREAM)
      "sc('ptrace', 101, 16, os.getppid(), 0, 0)\n"  // PTRACE_ATTACH to the parent
      "sc('process_vm_readv', 310, os.getppid(), 0, 0, 0, 0, 0)\n"
      "sc('unshare', 272, 0x10000000)\n"          // CLONE_NEWUSER
      "sc('mount', 165, 0, 0, 0, 0, 0)\n"
      "sc('bpf', 321, 0, 0, 0)\n"
      "sc('perf_event_open', 298, 0, 0, -1, -1, 0)\n"
      "sc('io_uring_setup', 425, 8, 0)\n");
  expect_syscall(r, "socket_inet", EACCES);
  expect_syscall(r, "socket_unix", EACCES);
  for (const char* key : {"ptrace", "process_vm_readv", "unshare", "mount", "bpf", "perf_event_open", "io_uring_setup"})
    expect_syscall(r, key, EPERM);
}

TEST_P(EscapePython, ENV_03_OnlyAMinimalEnvironment) {
  const Value r = attempt("R['environ'] = json.dumps(dict(os.environ))\n"
                          "t('proc_environ', lambda: open('/proc/self/environ', 'rb').read())\n"
                          "t('proc_parent_environ', lambda: open('/proc/%d/environ' % os.getppid(), 'rb').read())\n",
                          {"OPENAI_API_KEY=sk-" + secret_, "PYTHONPATH=/nowhere"});
  EXPECT_EQ(Value::parse(r["environ"].get<std::string>()), (Value{{"LANG", "C.UTF-8"}})) << r["environ"];
  expect_err(r, "proc_environ");
  expect_err(r, "proc_parent_environ");
}

TEST_P(EscapePython, PY_01_ReadTheUsersSecrets) {
  const Value r = attempt("t('ssh', lambda: open(" + q(home_ / ".ssh" / "id_rsa") + ").read())\n"
                          "t('aws', lambda: open(" + q(home_ / ".aws" / "credentials") + ").read())\n"
                          "t('store', lambda: open(" + q(home_ / "taskyon.db") + ", 'rb').read(64))\n"
                          "t('listdir_home', lambda: os.listdir(" + q(home_.path()) + "))\n"
                          "t('passwd', lambda: open('/etc/passwd').read())\n"
                          "t('root_ssh', lambda: os.listdir('/root/.ssh'))\n");
  for (const char* key : {"ssh", "aws", "store", "listdir_home", "passwd", "root_ssh"}) expect_err(r, key);
  ASSERT_TRUE(fs::exists(home_ / "taskyon.db"));  // the store was there to be read
}

TEST_P(EscapePython, PY_02_ImportHijackAndPersistence) {
  // Planted where an attacker would: the working directory, PYTHONPATH,
  // PYTHONSTARTUP, the user site-packages, a .pth file.
  TempDir plant;
  const fs::path marker = home_ / "hijacked";
  const std::string evil = "open(" + q(marker) + ", 'w').write('x')\n";
  for (const char* name : {"json.py", "sitecustomize.py", "usercustomize.py", "startup.py", "persisted.py"})
    std::ofstream(plant / name) << evil;
  std::ofstream(plant / "evil.pth") << "import os; " << evil;
  const fs::path user_site = home_ / ".local" / "lib";
  fs::create_directories(user_site);
  for (const char* name : {"usercustomize.py", "sitecustomize.py"}) std::ofstream(user_site / name) << evil;
  const std::vector<std::string> env = {"PYTHONPATH=" + plant.path().string(),
                                        "PYTHONSTARTUP=" + (plant / "startup.py").string(),
                                        "PYTHONUSERBASE=" + (home_ / ".local").string(), "HOME=" + home_.path().string()};
  const Value r = attempt("R['json'] = json.__file__\nR['path'] = json.dumps(sys.path)\n"
                          "for i, d in enumerate(sys.path + [os.getcwd(), '/tmp']):\n"
                          "    t('write%d' % i, lambda: open(os.path.join(d, 'persisted.py'), 'w').write('x=1'))\n",
                          env, plant.path().string());
  EXPECT_FALSE(fs::exists(marker)) << "planted code ran";
  EXPECT_EQ(r["json"].get<std::string>().find(plant.path().string()), std::string::npos) << r["json"];
  EXPECT_EQ(r["path"].get<std::string>().find(plant.path().string()), std::string::npos) << r["path"];
  for (const auto& [key, value] : r.items())
    if (key.starts_with("write")) {
      EXPECT_TRUE(value.get<std::string>().starts_with("err:")) << key << " " << value;
    }
  // Nothing persists: a second run (a new process) cannot import it either.
  const Value again = attempt("t('import', lambda: __import__('persisted'))\n", env, plant.path().string());
  expect_err(again, "import");
  EXPECT_FALSE(fs::exists(marker));
}

TEST_P(EscapePython, PY_04_LoosenTheFiltersWithCtypes) {
  const Value r = attempt(R"(import ctypes
libc = ctypes.CDLL(None, use_errno=True)
R['nnp_clear'] = '%d:%d' % (libc.prctl(38, 0, 0, 0, 0), ctypes.get_errno())  # PR_SET_NO_NEW_PRIVS 0
R['nnp'] = str(libc.prctl(39, 0, 0, 0, 0))                                 # PR_GET_NO_NEW_PRIVS
class F(ctypes.Structure):
    _fields_ = [('code', ctypes.c_ushort), ('jt', ctypes.c_ubyte), ('jf', ctypes.c_ubyte), ('k', ctypes.c_uint)]
class P(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.POINTER(F))]
allow = (F * 1)(F(0x06, 0, 0, 0x7fff0000))                                 # return SECCOMP_RET_ALLOW
R['seccomp_allow_all'] = '%d:%d' % (libc.prctl(22, 2, ctypes.byref(P(1, allow)), 0, 0), ctypes.get_errno())
class A(ctypes.Structure):
    _fields_ = [('fs', ctypes.c_ulonglong)]
libc.syscall.restype = ctypes.c_long
fd = libc.syscall(ctypes.c_long(444), ctypes.byref(A(1 << 2)), ctypes.c_long(8), ctypes.c_long(0))
R['landlock_new'] = '%d:%d' % (libc.syscall(ctypes.c_long(446), ctypes.c_long(fd), ctypes.c_long(0)), ctypes.get_errno())
R['personality'] = str(libc.personality(0x0040000))                         # ADDR_NO_RANDOMIZE
# Every denial still holds.
sc('socket_after', 41, 2, 1, 0)
t('fork_after', lambda: os.fork())
t('read_after', lambda: open()" + q(home_ / ".ssh" / "id_rsa") + R"().read())
t('write_after', lambda: open('/tmp/py04', 'w').write('x'))
)");
  EXPECT_EQ(r["nnp_clear"], "-1:" + std::to_string(EINVAL));
  EXPECT_EQ(r["nnp"], "1");
  expect_syscall(r, "socket_after", EACCES);
  for (const char* key : {"fork_after", "read_after", "write_after"}) expect_err(r, key);
}

TEST_P(EscapePython, PY_05_LoadASharedObjectFromTmp) {
  // A real shared object whose constructor leaves a marker: it loads and runs
  // in host mode (the control below), so the strict result is the layers' doing.
  const fs::path marker = home_ / "so-ran";
  const fs::path source = home_ / "evil.c";
  std::ofstream(source) << "#include <stdio.h>\n__attribute__((constructor)) static void run(void) { FILE* f = "
                           "fopen(\"" << marker.string() << "\", \"w\"); if (f) fclose(f); }\n";
  const std::string host_tmp = "/tmp/taskyon-py05-" + std::to_string(::getpid()) + ".so";
  const auto cc = taskyon::testing::run_command({"cc", "-shared", "-fPIC", "-o", host_tmp, source.string()}, home_.path());
  if (cc.exit_code != 0) GTEST_SKIP() << "no C compiler to build the shared object: " << cc.err;
  fs::copy_file(host_tmp, home_ / "evil.so");
  const std::string code = "import ctypes\nt('tmp', lambda: ctypes.CDLL('" + host_tmp + "'))\n" +
                           "t('home', lambda: ctypes.CDLL(" + q(home_ / "evil.so") + "))\n";
  const Value r = attempt(code);
  expect_err(r, "tmp");
  expect_err(r, "home");
  EXPECT_FALSE(fs::exists(marker));

  const Tycli control = call_python(home_.path(), path_, kPrelude + code + kPostlude,
                                     {"--approve-python", "--python-isolation", "host"});
  fs::remove(host_tmp);
  ASSERT_EQ(control.exit_code, 0) << control.err;
  EXPECT_TRUE(fs::exists(marker)) << "host mode (the user's authority) loads it: " << control.out;
}

// `any` rows that Python meets the same way.
TEST_P(EscapePython, NET_01_ConnectToTheHostAndTheInternet) {
  const Value r = attempt("import socket\n"
                          "t('loopback', lambda: socket.create_connection(('127.0.0.1', " + std::to_string(tcp_port_) +
                          "), timeout=3))\n"
                          "t('public', lambda: socket.create_connection(('1.1.1.1', 443), timeout=3))\n"
                          "t('dns', lambda: socket.getaddrinfo('example.com', 443))\n");
  for (const char* key : {"loopback", "public", "dns"}) expect_err(r, key);
}

TEST_P(EscapePython, FS_05_WriteAnywhere) {
  const Value r = attempt("t('cwd', lambda: open('x', 'w').write('x'))\n"
                          "t('tmp', lambda: open('/tmp/taskyon-py-fs05', 'w').write('x'))\n"
                          "t('bashrc', lambda: open(" + q(home_ / ".bashrc") + ", 'a').write('evil'))\n"
                          "t('mkdir', lambda: os.mkdir(" + q(home_ / "newdir") + "))\n");
  for (const char* key : {"cwd", "tmp", "bashrc", "mkdir"}) expect_err(r, key);
  EXPECT_FALSE(fs::exists(home_ / "newdir"));
  EXPECT_FALSE(fs::exists("/tmp/taskyon-py-fs05"));
}

TEST_P(EscapePython, FS_11_ReadInheritedDescriptors) {
  const Value r = attempt("ok = []\nfor fd in range(3, 256):\n"
                          "    try:\n        os.fstat(fd); ok.append(fd)\n    except OSError:\n        pass\n"
                          "R['open_fds'] = json.dumps(ok)\n");
  EXPECT_EQ(r["open_fds"], "[]");
}

TEST_P(EscapePython, RES_01_InfiniteLoopTimesOut) {
  const Tycli r = call_python(home_.path(), path_, "while True: pass",
                              {"--approve-python", "--python-isolation", "strict", "--timeout", "2000"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("timeout"), std::string::npos) << r.out;
}

// --- Metadata and other processes (issue 11): nothing outside changes ------

// What a file's metadata is: mode, owner, times (ctime changes with any
// metadata change) and extended attributes.
struct Metadata {
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  struct timespec atime {}, mtime {}, ctime {};
  std::string xattrs;  // "name=value;…"
  bool operator==(const Metadata& o) const {
    auto same = [](const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; };
    return mode == o.mode && uid == o.uid && gid == o.gid && same(atime, o.atime) && same(mtime, o.mtime) &&
           same(ctime, o.ctime) && xattrs == o.xattrs;
  }
};

std::ostream& operator<<(std::ostream& os, const Metadata& m) {
  return os << "mode " << std::oct << m.mode << std::dec << " owner " << m.uid << ":" << m.gid << " mtime "
            << m.mtime.tv_sec << "." << m.mtime.tv_nsec << " ctime " << m.ctime.tv_sec << "." << m.ctime.tv_nsec
            << " xattrs {" << m.xattrs << "}";
}

Metadata metadata_of(const fs::path& path) {
  Metadata m;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return m;
  m.mode = st.st_mode;
  m.uid = st.st_uid;
  m.gid = st.st_gid;
  m.atime = st.st_atim;
  m.mtime = st.st_mtim;
  m.ctime = st.st_ctim;
  char names[4096];
  const ssize_t n = ::llistxattr(path.c_str(), names, sizeof names);
  for (ssize_t i = 0; i < n; i += static_cast<ssize_t>(std::strlen(names + i)) + 1) {
    char value[256];
    const ssize_t v = ::lgetxattr(path.c_str(), names + i, value, sizeof value);
    m.xattrs += std::string(names + i) + "=" + (v >= 0 ? std::string(value, static_cast<std::size_t>(v)) : "?") + ";";
  }
  return m;
}

// Puts a device node back as it was, if a failed test changed it (times
// only approximately: ctime cannot be restored).
void restore(const fs::path& node, const Metadata& m) {
  if (metadata_of(node) == m) return;
  ::chmod(node.c_str(), m.mode & 07777);
  if (::chown(node.c_str(), m.uid, m.gid) != 0) {
  }
  const timespec times[2] = {m.atime, m.mtime};
  ::utimensat(AT_FDCWD, node.c_str(), times, 0);
}

// Every way Python changes a file's mode, owner, times or extended
// attributes, on each target: a canary the host user owns (with an xattr of
// its own), the store, and /dev/null and /dev/zero (bwrap's /dev holds
// read-only binds of them; without bwrap they are the host's nodes).
TEST_P(EscapePython, META_ChangeModeOwnerTimesAndXattrsOfHostFiles) {
  const fs::path canary = home_ / "canary.txt";
  std::ofstream(canary) << "canary";
  fs::permissions(canary, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const bool xattrs = ::setxattr(canary.c_str(), "user.taskyon", "orig", 4, 0) == 0;
  const std::vector<fs::path> targets = {canary, home_ / "taskyon.db", "/dev/null", "/dev/zero"};
  std::vector<Metadata> before;
  for (const auto& t : targets) before.push_back(metadata_of(t));
  ASSERT_TRUE(fs::exists(home_ / "taskyon.db"));

  std::string code = "import stat\nP = " + Value(std::vector<std::string>(targets.begin(), targets.end())).dump() +
                     "\n" + R"(for i, p in enumerate(P):
    t('chmod%d' % i, lambda: os.chmod(p, 0o6777))
    t('chmod_nofollow%d' % i, lambda: os.chmod(p, 0o6777, follow_symlinks=False))
    t('chown%d' % i, lambda: os.chown(p, 65534, 65534))
    t('chown_root%d' % i, lambda: os.chown(p, 0, 0))
    t('lchown%d' % i, lambda: os.lchown(p, 65534, 65534))
    t('utime%d' % i, lambda: os.utime(p, (0, 0)))
    t('utime_now%d' % i, lambda: os.utime(p))
    t('utime_ns%d' % i, lambda: os.utime(p, ns=(1, 1), follow_symlinks=False))
    t('setxattr%d' % i, lambda: os.setxattr(p, 'user.evil', b'x'))
    t('setxattr_trusted%d' % i, lambda: os.setxattr(p, 'trusted.evil', b'x'))
    t('replacexattr%d' % i, lambda: os.setxattr(p, 'user.taskyon', b'evil'))
    t('removexattr%d' % i, lambda: os.removexattr(p, 'user.taskyon'))
    t('truncate%d' % i, lambda: os.truncate(p, 0))
    def via_fd():
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fchmod(fd, 0o6777)
        finally:
            os.close(fd)
    t('fchmod%d' % i, via_fd)
)";
  const Value r = attempt(code);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    for (const char* op : {"chmod", "chmod_nofollow", "chown", "chown_root", "lchown", "utime", "utime_now", "utime_ns",
                           "setxattr", "setxattr_trusted", "replacexattr", "removexattr", "truncate", "fchmod"})
      expect_err(r, op + std::to_string(i));
    Metadata after = metadata_of(targets[i]);
    if (i == 1) {  // tycli itself writes the store during the call: its times move
      after.atime = before[i].atime;
      after.mtime = before[i].mtime;
      after.ctime = before[i].ctime;
    }
    EXPECT_EQ(after, before[i]) << targets[i];
  }
  if (xattrs) {
    EXPECT_NE(metadata_of(canary).xattrs.find("user.taskyon=orig;"), std::string::npos);
  }
  for (std::size_t i = 2; i < targets.size(); ++i) restore(targets[i], before[i]);
}

// `stat` of a host secret: its contents never, and not even its existence:
// bwrap's minimal root, or without bwrap our own mount namespace (issue 11),
// holds only the interpreter's files.
TEST_P(EscapePython, META_StatTheShadowFile) {
  const Value r = attempt("t('stat', lambda: os.stat('/etc/shadow'))\n"
                          "t('read', lambda: open('/etc/shadow').read())\n"
                          "t('listdir_etc', lambda: os.listdir('/etc'))\n"
                          "t('stat_home', lambda: os.stat(" + q(home_ / ".ssh" / "id_rsa") + "))\n");
  expect_err(r, "read");
  expect_err(r, "listdir_etc");
  EXPECT_EQ(r["stat"], "err:FileNotFoundError:2");
  EXPECT_EQ(r["stat_home"], "err:FileNotFoundError:2");
}

// Issue 11 item 3: the root holds the interpreter's files and trees, not the
// host's /usr: other programs and data under /usr, and the host's /etc, are
// not there (stat, access, readlink and open answer ENOENT); a file the
// interpreter is given cannot be written (read-only: EROFS, or Landlock's
// EACCES where the mount is not the denial's first word).
TEST_P(EscapePython, META_StatHostPathsTheInterpreterDoesNotNeed) {
  const Value r = attempt("t('stat_env', lambda: os.stat('/usr/bin/env'))\n"
                          "t('stat_bwrap', lambda: os.stat('/usr/bin/bwrap'))\n"
                          "t('stat_share', lambda: os.stat('/usr/share/doc'))\n"
                          "t('access', lambda: os.access('/etc/passwd', os.F_OK) or (_ for _ in ()).throw(FileNotFoundError(2, 'absent')))\n"
                          "t('readlink', lambda: os.readlink('/etc/shadow'))\n"
                          "t('open', lambda: open('/usr/bin/env', 'rb'))\n"
                          "t('write_python', lambda: open(sys.executable, 'r+b'))\n");
  for (const char* key : {"stat_env", "stat_bwrap", "stat_share", "access", "readlink", "open"})
    EXPECT_EQ(r[key], "err:FileNotFoundError:2") << key;
  const std::string write = r["write_python"];
  EXPECT_TRUE(write == "err:OSError:30" || write == "err:PermissionError:13") << write;
}

// Issue 11 item 4: strict Python has its own PID namespace (bwrap's, or
// without bwrap the sandbox's init): no host process is there to signal, and
// its own pid is small.
TEST_P(EscapePython, PROC_HostProcessesAreNotThere) {
  const pid_t sleeper = ::fork();
  if (sleeper == 0) {
    ::execl("/bin/sleep", "sleep", "300", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(sleeper, 0);
  const Value r = attempt("t('kill_unrelated', lambda: os.kill(" + std::to_string(sleeper) + ", 0))\n"
                          "t('kill_test', lambda: os.kill(" + std::to_string(::getpid()) + ", 0))\n"
                          "t('kill_tycli', lambda: os.kill(" + kTycliPid + ", 0))\n"
                          "R['pid'] = os.getpid()\n");
  EXPECT_EQ(r["kill_unrelated"], "err:ProcessLookupError:3");
  EXPECT_EQ(r["kill_test"], "err:ProcessLookupError:3");
  EXPECT_EQ(r["kill_tycli"], "err:ProcessLookupError:3");
  EXPECT_LT(r["pid"].get<int>(), 10) << r.dump();
  int status = 0;
  EXPECT_EQ(::waitpid(sleeper, &status, WNOHANG), 0) << "the unrelated process ended";
  ::kill(sleeper, SIGKILL);
  taskyon::testing::wait_exit(sleeper);
}

// Issue 11 item 1: on a root host the sandbox is uid/gid 65534 with no
// groups — inside bubblewrap too, where bwrap is started as 65534, so the
// ids inside are the ids outside (without bwrap the sandbox's user namespace
// maps its 1000 to 65534 outside). PythonBwrapUid has the owner checks and
// their control.
TEST_P(EscapePython, TheSandboxUidIsNotTheInvokingUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "the sandbox uid is a root host's";
  const Value r = attempt("R['ids'] = '%d %d %s' % (os.getuid(), os.getgid(), os.getgroups())\n");
  EXPECT_EQ(r["ids"], GetParam() == Arrangement::bwrap ? "65534 65534 []" : "1000 1000 []");
}

std::string limits_of(int pid) { return slurp("/proc/" + std::to_string(pid) + "/limits"); }

// How `pid` is scheduled: its nice value and policy (fields 19 and 41 of
// /proc/PID/stat) and the CPUs it may run on.
std::string sched_of(int pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field, nice, policy;
  for (int i = 3; i <= 41 && fields >> field; ++i) {
    if (i == 19) nice = field;
    if (i == 41) policy = field;
  }
  const std::string status = slurp("/proc/" + std::to_string(pid) + "/status");
  const std::size_t at = status.find("Cpus_allowed_list:");
  return "nice " + nice + " policy " + policy + " " +
         (at == std::string::npos ? "" : status.substr(at, status.find('\n', at) - at));
}

// resource.prlimit and os.setpriority on processes that are not the
// sandbox's: an unrelated process of the host user, tycli's parent (this
// test) and tycli itself. Their limits and priorities stay; tycli survives
// (RLIMIT_FSIZE 0 would kill it with SIGXFSZ) and stores the call.
TEST_P(EscapePython, PROC_PrlimitAndPriorityOfOtherProcesses) {
  const pid_t sleeper = ::fork();
  if (sleeper == 0) {
    ::execl("/bin/sleep", "sleep", "300", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(sleeper, 0);
  const std::string sleeper_limits = limits_of(sleeper), sleeper_sched = sched_of(sleeper);
  const std::string own_limits = limits_of(::getpid()), own_sched = sched_of(::getpid());
  cpu_set_t own_cpus;
  ASSERT_EQ(::sched_getaffinity(0, sizeof own_cpus, &own_cpus), 0);
  const int own_priority = ::getpriority(PRIO_PROCESS, 0);
  // Should a case get through, this process must live to report it:
  // RLIMIT_FSIZE 0 would kill it with SIGXFSZ (writes fail with EFBIG instead).
  rlimit own_fsize{}, own_cpu{}, own_nofile{};
  ::getrlimit(RLIMIT_FSIZE, &own_fsize);
  ::getrlimit(RLIMIT_CPU, &own_cpu);
  ::getrlimit(RLIMIT_NOFILE, &own_nofile);
  const auto old_xfsz = ::signal(SIGXFSZ, SIG_IGN);
  const std::string pids = "{'unrelated': " + std::to_string(sleeper) + ", 'test': " + std::to_string(::getpid()) +
                           ", 'tycli': " + kTycliPid + "}";
  const Value r = attempt("import resource\nPIDS = " + pids + R"(
for name, pid in PIDS.items():
    t('nofile_' + name, lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (1, 1)))
    t('fsize_' + name, lambda: resource.prlimit(pid, resource.RLIMIT_FSIZE, (0, 0)))
    t('cpu_' + name, lambda: resource.prlimit(pid, resource.RLIMIT_CPU, (1, 1)))
    t('nice_' + name, lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
    t('sched_' + name, lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)))
    t('affinity_' + name, lambda: os.sched_setaffinity(pid, {0}))
t('own', lambda: resource.prlimit(0, resource.RLIMIT_NOFILE, (64, 64)))
)");
  // Seccomp's EPERM, for each (the filter answers before the kernel looks
  // the pid up, so even a pid outside the namespace is refused, not unknown).
  for (const char* name : {"unrelated", "test", "tycli"})
    for (const char* op : {"nofile_", "fsize_", "cpu_", "nice_", "sched_", "affinity_"})
      EXPECT_EQ(r[std::string(op) + name], "err:PermissionError:1") << op << name;
  EXPECT_TRUE(r["own"].get<std::string>().starts_with("ok:(")) << r["own"];  // its own limits, it may lower
  EXPECT_EQ(limits_of(sleeper), sleeper_limits);
  EXPECT_EQ(sched_of(sleeper), sleeper_sched);
  EXPECT_EQ(limits_of(::getpid()), own_limits);
  EXPECT_EQ(sched_of(::getpid()), own_sched);
  // Should a case have got through, this test process is put back as it was.
  ::setrlimit(RLIMIT_FSIZE, &own_fsize);
  ::setrlimit(RLIMIT_CPU, &own_cpu);
  ::setrlimit(RLIMIT_NOFILE, &own_nofile);
  ::signal(SIGXFSZ, old_xfsz);
  ::sched_setaffinity(0, sizeof own_cpus, &own_cpus);
  const sched_param normal{};
  ::sched_setscheduler(0, SCHED_OTHER, &normal);
  ::setpriority(PRIO_PROCESS, 0, own_priority);
  // tycli survived and stored the call (attempt() asserted exit 0 and the result).
  const Tycli tree = tycli({"--json", "task", "show", last_.json().value("resultTask", "")}, home_.path(), path_);
  EXPECT_EQ(tree.exit_code, 0) << tree.out << tree.err;
  ::kill(sleeper, SIGKILL);
  taskyon::testing::wait_exit(sleeper);
}

INSTANTIATE_TEST_SUITE_P(Strict, EscapePython, ::testing::Values(Arrangement::bwrap, Arrangement::kernel_layers),
                         [](const auto& info) { return info.param == Arrangement::bwrap ? "Bwrap" : "KernelLayers"; });

}  // namespace
}  // namespace taskyon::native
