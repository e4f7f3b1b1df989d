// executePython under --python-isolation strict (docs/sandbox.md, "Native
// Python"). Two arrangements, both ending in hardening::contain():
//
//   bubblewrap usable (user namespaces allowed, `bwrap` on PATH):
//     host ──fork with the baseline steps only (own session, parent-death
//     signal, descriptors, private cwd, no_new_privs, empty environment; bwrap
//     cannot start under RLIMIT_FSIZE=0; a root host also builds a staged
//     root of bwrap's bind sources in a private mount namespace and drops to
//     uid/gid 65534, Staged in python_internal.h)──▶ bwrap (new user/net/ipc/uts/pid/cgroup namespaces,
//     minimal read-only root, private /tmp, /proc, a read-only /dev of its own
//     with read-only binds of null, zero and urandom only, no
//     capabilities) ──▶ tycli __python-contain (this file's contain_main) ──fork,
//     contain(): rlimits, descriptors, no_new_privs, Landlock, seccomp──▶ python3
//   Landlock and seccomp forbid mount and unshare, so they cannot come before
//   bwrap; they are applied inside it by our own helper, last before python.
//
//   no usable bubblewrap:
//     host ──Launcher, the full contain() (namespaces, Landlock, seccomp, …)──▶ python3
//
// Landlock grants (both): read+execute the interpreter and its ELF loader;
// read its shared libraries and /etc/ld.so.cache; read and list the trees of
// its sys.path under -I -S (the stdlib and lib-dynload) and the directories
// of its libraries (the system library directory: lib-dynload's extension
// modules link libffi, libssl, libz, … from there). Nothing else: no /proc,
// /tmp, /home, /etc; no write anywhere.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "taskyon/hardening/contain.h"
#include "taskyon/hardening/probe.h"
#include "taskyon/hardening/runtime_files.h"
#include "taskyon/native/python_internal.h"
#include "taskyon/sandbox/workdir.h"

namespace taskyon::native::python {

using json::Value;

namespace {

constexpr std::chrono::milliseconds kProbeTimeout{10000};
constexpr const char* kStrictEnv = "LANG=C.UTF-8";
constexpr std::uint64_t kOpenFiles = 256;
constexpr const char* kDevNodes[] = {"/dev/zero", "/dev/urandom"};  // strict /dev inside bwrap, read-only

// Landlock (include/uapi/linux/landlock.h): rights for a directory tree.
constexpr long kSysLandlockAddRule = 445;
constexpr int kRulePathBeneath = 1;
constexpr std::uint64_t kFsReadFile = 1ull << 2;
constexpr std::uint64_t kFsReadDir = 1ull << 3;

struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

// Adds read + list rules for whole directory trees to a prepared ruleset.
// hardening::landlock grants single files only; the stdlib is a tree whose
// directories the import system lists (FileFinder), so it needs READ_DIR.
Result<void> add_tree_rules(const hardening::Policy& policy, const std::vector<std::string>& trees) {
  const auto* ruleset = policy.ruleset();
  if (!ruleset) return {};  // no Landlock on this kernel: nothing to widen
  for (const std::string& dir : trees) {
    hardening::Fd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return fail(Errc::internal, fmt::format("Landlock: cannot open {}: {}", dir, std::strerror(errno)), dir);
    PathBeneathAttr rule{kFsReadFile | kFsReadDir, fd.get()};
    if (::syscall(kSysLandlockAddRule, ruleset->fd(), kRulePathBeneath, &rule, 0) != 0)
      return fail(Errc::internal, fmt::format("Landlock: cannot add a rule for {}: {}", dir, std::strerror(errno)),
                  dir);
  }
  return {};
}

std::string dirname_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? std::string("/") : path.substr(0, slash);
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string real(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

// What the strict interpreter may read beyond its executable and libraries.
struct Reads {
  std::vector<std::string> trees;  // read + list beneath
  std::vector<std::string> files;  // read
};

Reads strict_reads(const Interpreter& python, const hardening::RuntimeFiles& files) {
  Reads r;
  std::set<std::string> seen;
  auto tree = [&](const std::string& dir) {
    const std::string resolved = real(dir);
    if (!resolved.empty() && resolved != "/" && seen.insert(resolved).second) r.trees.push_back(resolved);
  };
  for (const std::string& entry : python.path) {
    if (is_dir(entry)) {
      tree(entry);
    } else if (const std::string file = real(entry); !file.empty()) {
      r.files.push_back(file);  // e.g. a zipped stdlib
    }
  }
  for (const std::string& lib : files.libraries) tree(dirname_of(lib));
  return r;
}

const hardening::Layers kAllLayers{};

// The first layer strict mode wants that `prepared` lacks; empty: none.
std::string missing_prepared_layer(const hardening::Layers& prepared, bool namespaces) {
  if (!prepared.landlock) return "Landlock";
  if (!prepared.seccomp) return "seccomp";
  if (namespaces && !prepared.namespaces) return "the sandbox namespaces";
  if (namespaces && !prepared.mount_namespace) return "the mount namespace";
  return {};
}

std::string refusal(std::string_view why) {
  return fmt::format("strict Python refuses to run with fewer layers: {}. Run it where that layer exists, or choose "
                     "--python-isolation host explicitly (your own OS permissions, no sandbox)",
                     why);
}

// The kernel layers for the interpreter itself (`namespaces`: false inside
// bwrap, which made them already).
Result<std::shared_ptr<const hardening::Policy>> python_policy(const std::string& executable, const Reads& reads,
                                                               bool namespaces) {
  hardening::Layers layers = kAllLayers;
  layers.namespaces = namespaces;
  // Without bwrap: our own mount namespace, which binds the interpreter's
  // trees (its prefix's stdlib and site directories, the libraries'
  // directories) read-only at the same paths, so the sandbox uid needs no
  // traversal of a 0700 /root (pyenv). Inside bwrap, bwrap's root holds
  // (namespaces is false: neither applies).
  layers.mount_namespace = namespaces;
  layers.sandbox_uid = namespaces;
  // The PID namespace stays (without bwrap the Launcher's child is its init;
  // inside bwrap `namespaces` is false and bwrap's own PID namespace holds).
  auto policy = hardening::Policy::prepare(executable, reads.files, layers, {}, reads.trees);
  if (!policy) return std::unexpected(std::move(policy.error()));
  if (auto added = add_tree_rules(**policy, reads.trees); !added) return std::unexpected(std::move(added.error()));
  return policy;
}

bool under(const std::string& path, const std::set<std::string>& roots) {
  for (const std::string& root : roots)
    if (path == root || path.starts_with(root + "/")) return true;
  return false;
}

// What bwrap reads from the host to build its root: bound read-only (files
// as the runtime names them, symlinks on the way recreated, and whole
// directories), and the writable /dev/null file. A root host stages them
// first (Staged).
struct Sources {
  std::vector<std::string> files, trees;
  std::vector<std::string> writable;  // bound writable at the same path (tests: a canary)
  std::string null_file;              // bound writable on /dev/null; empty: the host's node read-only
};

// bwrap's namespaces and the system part of its minimal root: private
// /tmp, /proc and a minimal /dev. Nothing of the host's tree: bind_paths()
// adds exactly the runtime's files and trees (issue 11 item 3: `stat` of any
// other host path, /usr/bin/* included, answers ENOENT). `src` receives what
// it reads. `uid`: the sandbox's uid and gid inside.
std::vector<std::string> bwrap_root(const std::string& bwrap, Sources& src, unsigned uid) {
  const std::string id = std::to_string(uid);
  std::vector<std::string> a = {bwrap,       "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
                                "--cap-drop", "ALL",           "--hostname",        "sandbox",       "--uid",
                                id,           "--gid",         id,                  "--tmpfs",       "/tmp",
                                "--proc",     "/proc"};
  // Our own /dev, never the host's nodes writable: a tmpfs holding read-only
  // binds of zero and urandom and, as null, `src.null_file` (an empty file
  // of this run's scratch directory, mode 0666, bound writable: the helper's
  // loader query opens /dev/null for writing) or, for the probe, the host's
  // node read-only; then made read-only itself. bwrap's --dev would bind the
  // host's nodes writable (utime/chmod of the host's /dev/null). bwrap 0.8
  // marks every read-only bind nodev (its remount adds MS_NODEV, and it has
  // no read-only device bind), so zero and urandom are there but cannot be
  // opened — strict Python's Landlock grants none of these anyway (it takes
  // entropy from getrandom(2)).
  a.insert(a.end(), {"--tmpfs", "/dev"});
  for (const char* node : kDevNodes) {
    a.insert(a.end(), {"--ro-bind", node, node});
    src.files.emplace_back(node);
  }
  if (src.null_file.empty()) {
    a.insert(a.end(), {"--ro-bind", "/dev/null", "/dev/null"});
    src.files.emplace_back("/dev/null");
  } else {
    a.insert(a.end(), {"--bind", src.null_file, "/dev/null"});
  }
  a.insert(a.end(), {"--remount-ro", "/dev"});
  if (struct stat st {}; ::stat("/etc/ld.so.cache", &st) == 0) {
    a.insert(a.end(), {"--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"});
    src.files.emplace_back("/etc/ld.so.cache");
  }
  return a;
}

// `paths` (files as the runtime names them, or directories it lists) as
// bwrap's arguments, planned as our own mount namespace plans them
// (mounts::plan_files: each symlink on the way recreated, each directory on
// the way empty, each file and tree a read-only bind at its path); then
// `src.writable`, bound writable.
Result<void> bind_paths(std::vector<std::string>& a, Sources& src, const std::vector<std::string>& paths) {
  std::vector<std::string> files, trees;
  for (const std::string& p : paths) {
    if (p.empty()) continue;
    (is_dir(p) ? trees : files).push_back(p);
  }
  auto ops = hardening::mounts::plan_files(files, trees);
  if (!ops) return std::unexpected(std::move(ops.error()));
  using Kind = hardening::mounts::Op::Kind;
  for (const auto& op : *ops) {
    switch (op.kind) {
      case Kind::dir: a.insert(a.end(), {"--dir", op.path}); break;
      case Kind::symlink: a.insert(a.end(), {"--symlink", op.source, op.path}); break;
      case Kind::bind:
      case Kind::bind_tree: a.insert(a.end(), {"--ro-bind", op.source, op.path}); break;
    }
  }
  src.files.insert(src.files.end(), files.begin(), files.end());
  src.trees.insert(src.trees.end(), trees.begin(), trees.end());
  for (const std::string& p : src.writable) a.insert(a.end(), {"--bind", p, p});
  return {};
}

// The root a root host builds before it drops to the sandbox uid and starts
// bwrap (Staged, python_internal.h), on `stage_dir` (an existing empty
// directory): every path of `src` bwrap binds, bwrap itself, and the host's
// procfs (bwrap writes its id maps there and may only mount a new procfs
// where one is fully visible).
Result<detail::Staged> stage(const std::string& bwrap, const Sources& src, const std::string& stage_dir) {
  auto bwrap_files = hardening::runtime_files(bwrap);
  if (!bwrap_files) return std::unexpected(std::move(bwrap_files.error()));
  std::set<std::string> trees;
  for (const std::string& t : src.trees) trees.insert(real(t));
  std::vector<std::string> files;
  auto file = [&](const std::string& f) {  // as named: its symlinks on the way must be recreated
    if (!f.empty() && !under(f, trees)) files.push_back(f);
  };
  for (const std::string& f : src.files) file(f);
  for (const std::string& f : bwrap_files->named) file(f);
  std::set<std::string> writable;
  for (std::string f : src.writable) writable.insert(real(f));
  if (!src.null_file.empty()) writable.insert(real(src.null_file));
  std::vector<std::string> trees_too = src.trees;
  for (const std::string& f : writable) (is_dir(f) ? trees_too : files).push_back(f);
  auto ops = hardening::mounts::plan_files(files, trees_too);
  if (!ops) return std::unexpected(std::move(ops.error()));
  using Op = hardening::mounts::Op;
  std::vector<Op> all;
  for (Op& op : *ops) {
    if (op.kind != Op::Kind::dir && op.kind != Op::Kind::symlink && writable.contains(op.source))
      op.remount_flags = 0;  // stays writable
    all.push_back(std::move(op));
  }
  all.push_back({Op::Kind::bind_tree, "/proc", "/proc", 0, /*recursive=*/true});
  return detail::Staged{hardening::mounts::plan_root(all, stage_dir),
                hardening::namespaces::plan_namespaces(
                    {.user_net_ipc_uts = false, .drop_ids = true, .mount = false, .pid = false})};
}

// Starts bwrap's command line `a` (built from `src`): on a root host with
// `sandbox_uid`, as 65534 in a staged root under `workdir` (created there as
// "root"), else as this process.
Result<std::unique_ptr<sandbox::Child>> start_bwrap(const std::vector<std::string>& a, const Sources& src,
                                                    const std::string& workdir, bool sandbox_uid) {
  if (!sandbox_uid || !hardening::namespaces::host_is_root())
    return detail::spawn_plain(a, {}, workdir, /*no_new_privs=*/true);
  const std::string stage_dir = workdir + "/root";
  if (::mkdir(stage_dir.c_str(), 0700) != 0)
    return fail(Errc::io, fmt::format("cannot create {}: {}", stage_dir, std::strerror(errno)), stage_dir);
  auto staged = stage(a.front(), src, stage_dir);
  if (!staged) return std::unexpected(std::move(staged.error()));
  return detail::spawn_plain(a, {}, workdir, /*no_new_privs=*/true, &*staged);
}

// The sandbox's uid inside bwrap: the overflow id (65534) when a root host
// starts bwrap as 65534 (inside and outside agree), else bwrap's usual.
unsigned inside_uid(bool sandbox_uid) {
  return sandbox_uid && hardening::namespaces::host_is_root() ? hardening::namespaces::kOverflowId
                                                              : hardening::namespaces::kSandboxId;
}

}  // namespace

namespace detail {

Result<std::unique_ptr<sandbox::Child>> spawn_bwrap(const BwrapRun& run, const std::string& workdir) {
  Sources src;
  src.writable = run.writable;
  if (run.null_file) {
    // The sandbox's /dev/null: an empty file of its own, removed with the
    // working directory; 0666 and the host's, so the sandbox uid writes it
    // and cannot change it.
    src.null_file = workdir + "/null";
    const int fd = ::open(src.null_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || ::fchmod(fd, 0666) != 0) {
      if (fd >= 0) ::close(fd);
      return fail(Errc::io, fmt::format("cannot create {}: {}", src.null_file, std::strerror(errno)), src.null_file);
    }
    ::close(fd);
  }
  std::vector<std::string> a = bwrap_root(run.bwrap, src, inside_uid(run.sandbox_uid));
  if (auto bound = bind_paths(a, src, run.binds); !bound) return std::unexpected(std::move(bound.error()));
  a.insert(a.end(), {"--chdir", "/tmp", "--"});
  a.insert(a.end(), run.command.begin(), run.command.end());
  return start_bwrap(a, src, workdir, run.sandbox_uid);
}

Result<std::vector<std::string>> strict_binds(const Interpreter& python) {
  auto files = hardening::runtime_files(python.executable);
  if (!files) return std::unexpected(std::move(files.error()));
  const Reads reads = strict_reads(python, *files);
  std::vector<std::string> paths = files->named;
  paths.insert(paths.end(), reads.trees.begin(), reads.trees.end());
  paths.insert(paths.end(), reads.files.begin(), reads.files.end());
  return paths;
}

Result<std::unique_ptr<sandbox::Child>> spawn_strict(const Interpreter& python, const std::string& helper,
                                                     const std::string& workdir, sandbox::Launcher& launcher,
                                                     const std::vector<std::string>& sys_path) {
  const auto argv = python_argv(python, PythonIsolation::strict, sys_path);
  auto python_files = hardening::runtime_files(python.executable);
  if (!python_files) return std::unexpected(std::move(python_files.error()));
  Reads reads = strict_reads(python, *python_files);
  // The run's unpacked wheels: read and listed (Landlock), bound read-only.
  reads.trees.insert(reads.trees.end(), sys_path.begin(), sys_path.end());
  const hardening::rlimits::Limits limits{.data_bytes = kStrictDataBytes, .open_files = kOpenFiles};
  const Bubblewrap& bw = bubblewrap();
  if (const auto& strict = strict_available(); !strict) return std::unexpected(strict.error());

  if (bw.path.empty()) {
    auto policy = python_policy(python.executable, reads, /*namespaces=*/true);
    if (!policy) return std::unexpected(std::move(policy.error()));
    if (auto missing = missing_prepared_layer((*policy)->layers(), /*namespaces=*/true); !missing.empty())
      return fail(Errc::runtime_missing, refusal(missing + " could not be prepared"), missing);
    return launcher.spawn({.policy = *policy, .argv = argv, .env = {kStrictEnv}, .workdir = workdir, .limits = limits});
  }

  const std::string helper_path = real(helper.empty() ? "/proc/self/exe" : helper);
  if (helper_path.empty())
    return fail(Errc::runtime_missing, fmt::format("the strict-mode helper {} does not resolve", helper));
  auto helper_files = hardening::runtime_files(helper_path);
  if (!helper_files) return std::unexpected(std::move(helper_files.error()));
  // bwrap itself gets the baseline only (own session and process group,
  // parent-death signal, pipes only, no_new_privs, empty environment; on a
  // root host the sandbox uid, in a staged root): it cannot run under
  // RLIMIT_FSIZE=0, Landlock or seccomp. The helper applies the resource
  // limits and kernel layers inside it, last before python3.
  BwrapRun run{.bwrap = bw.path};
  auto binds = strict_binds(python);
  if (!binds) return std::unexpected(std::move(binds.error()));
  run.binds = std::move(*binds);
  run.binds.insert(run.binds.end(), sys_path.begin(), sys_path.end());
  run.binds.insert(run.binds.end(), helper_files->named.begin(), helper_files->named.end());
  run.command = {helper_path, std::string(kContainEntry), "--data-bytes", std::to_string(kStrictDataBytes)};
  for (const std::string& t : reads.trees) run.command.insert(run.command.end(), {"--tree", t});
  for (const std::string& f : reads.files) run.command.insert(run.command.end(), {"--file", f});
  run.command.push_back("--");
  run.command.insert(run.command.end(), argv.begin(), argv.end());
  return spawn_bwrap(run, workdir);
}

}  // namespace detail

Result<void> strict_requirements(const hardening::Support& support, bool bubblewrap_usable) {
  if (support.landlock_abi < 1)
    return fail(Errc::runtime_missing,
                refusal("this kernel has no Landlock (file-access rules; Linux >= 5.13 with landlock in lsm=)"),
                "Landlock");
  if (!support.seccomp)
    return fail(Errc::runtime_missing, refusal("this kernel has no seccomp filters (system-call rules)"), "seccomp");
  if (!support.user_namespaces)
    return fail(Errc::runtime_missing,
                refusal("user namespaces are not allowed here (" + support.namespaces_error +
                        "); bubblewrap and the sandbox namespaces both need them"),
                "user namespaces");
  if (!bubblewrap_usable && support.landlock_abi < 6)
    return fail(Errc::runtime_missing,
                refusal(fmt::format("without bubblewrap (its PID namespace) strict Python needs Landlock ABI 6 to "
                                    "scope signals, and this kernel has ABI {}; install bubblewrap",
                                    support.landlock_abi)),
                "Landlock signal scope");
  return {};
}

const Result<void>& strict_available() {
  static const Result<void> available = strict_requirements(hardening::support(), !bubblewrap().path.empty());
  return available;
}

const Bubblewrap& bubblewrap() {
  static const Bubblewrap found = [] {
    Bubblewrap b;
    const char* path_env = std::getenv("PATH");
    const std::string bwrap = detail::find_on_path(path_env ? path_env : "", "bwrap");
    if (bwrap.empty()) {
      b.why = "bwrap is not on PATH (Debian package bubblewrap)";
      return b;
    }
    if (const auto& machine = hardening::support(); !machine.user_namespaces) {
      b.why = "user namespaces are not allowed here: " + machine.namespaces_error;
      return b;
    }
    // The probe builds a root as strict runs do (as the sandbox uid in a
    // staged root on a root host) and runs bwrap itself in it.
    auto scratch = detail::ScratchDir::make(sandbox::kPythonWorkdirPrefix);
    if (!scratch) {
      b.why = scratch.error().message;
      return b;
    }
    // bwrap's own files are all the probe's root holds besides the system part.
    auto files = hardening::runtime_files(bwrap);
    if (!files) {
      b.why = files.error().message;
      return b;
    }
    auto child = detail::spawn_bwrap(
        {.bwrap = bwrap, .binds = files->named, .null_file = false, .command = {bwrap, "--version"}},
        scratch->path());
    if (!child) {
      b.why = child.error().message;
      return b;
    }
    const auto c = detail::collect(**child, "", kProbeTimeout, 64 * 1024);
    if (c.timed_out || !WIFEXITED(c.wait_status) || WEXITSTATUS(c.wait_status) != 0) {
      b.why = fmt::format("{} cannot build a sandbox here: {}", bwrap,
                          c.err.empty() ? sandbox::describe_wait_status(c.wait_status) : detail::first_line(c.err));
      return b;
    }
    b.path = bwrap;
    return b;
  }();
  return found;
}

Value explain() {
  const auto& found = interpreter();
  const Bubblewrap& bw = bubblewrap();
  Value out = {{"native", kPythonId}};
  if (found) {
    out["interpreter"] = {{"command", found->command},
                          {"executable", found->executable},
                          {"version", found->version},
                          {"sysPath", found->path}};
  } else {
    out["interpreter"] = Value();
    out["why"] = found.error().message;
  }
  out["bubblewrap"] = {{"path", bw.path}, {"usable", !bw.path.empty()}, {"why", bw.why}};
  const bool root = hardening::namespaces::host_is_root();
  out["strict"] = bw.path.empty()
                      ? fmt::format("the sandbox kernel layers around python3; no bubblewrap ({})", bw.why)
                      : std::string("bubblewrap (minimal read-only root, private /tmp, no network) and, inside it, "
                                    "the sandbox kernel layers around python3");
  // Who the interpreter is outside: what owner checks (chmod, chown, utimes,
  // xattrs, signals) compare against the host's files.
  out["sandboxUid"] =
      !root ? std::string("the invoking user's uid (tycli is not root: only its own uid can be mapped; seccomp, "
                          "Landlock and the minimal root carry the owner rule)")
      : bw.path.empty()
          ? std::string("uid/gid 65534 outside, no supplementary groups (1000 inside its user namespace): it owns "
                        "none of the host's files, so chmod, chown, utimes and xattr changes fail the owner check")
          : std::string("uid/gid 65534 inside and outside, no supplementary groups: tycli stages bwrap's bind "
                        "sources in a private root and starts bwrap as 65534, so the sandbox owns none of the "
                        "host's files and chmod, chown, utimes and xattr changes fail the owner check");
  out["host"] = "python3 -I with your own OS permissions: timeout, minimal environment, bounded output, "
                "process-group kill — no containment; only when chosen (--python-isolation host), with a warning";
  out["default"] = "strict";
  const auto& strict = strict_available();
  out["strictAvailable"] = strict.has_value();
  if (!strict) out["strictMissing"] = strict.error().message;
  return out;
}

int contain_main(int argc, char** argv) {
  // tycli __python-contain --data-bytes N [--tree DIR]... [--file F]... -- PYTHON ARG...
  Reads reads;
  std::uint64_t data_bytes = kStrictDataBytes;
  std::vector<std::string> python_argv;
  int i = 2;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (i + 1 >= argc) break;
    if (arg == "--data-bytes") {
      data_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--tree") {
      reads.trees.emplace_back(argv[++i]);
    } else if (arg == "--file") {
      reads.files.emplace_back(argv[++i]);
    } else {
      break;
    }
  }
  if (i >= argc || std::string_view(argv[i]) != "--" || i + 1 >= argc) {
    std::fprintf(stderr, "taskyon: %s: usage: --data-bytes N [--tree DIR]... [--file F]... -- PYTHON ARG...\n",
                 kContainEntry.data());
    return 125;
  }
  for (++i; i < argc; ++i) python_argv.emplace_back(argv[i]);

  auto policy = python_policy(python_argv.front(), reads, /*namespaces=*/false);
  if (!policy) {
    std::fprintf(stderr, "taskyon: %s: %s\n", kContainEntry.data(), policy.error().describe().c_str());
    return 125;
  }
  if (const std::string missing = missing_prepared_layer((*policy)->layers(), false); !missing.empty()) {
    std::fprintf(stderr, "taskyon: %s: %s\n", kContainEntry.data(),
                 refusal(missing + " could not be prepared inside bubblewrap").c_str());
    return 125;
  }
  const int in = ::fcntl(0, F_DUPFD_CLOEXEC, 3), out = ::fcntl(1, F_DUPFD_CLOEXEC, 3),
            err = ::fcntl(2, F_DUPFD_CLOEXEC, 3);
  auto containment = hardening::Containment::prepare(
      *policy,
      {.argv = python_argv, .env = {kStrictEnv}, .workdir = "/tmp",
       .limits = {.data_bytes = data_bytes, .open_files = kOpenFiles}},
      {in, out, err});
  if (!containment || in < 0 || out < 0 || err < 0) {
    std::fprintf(stderr, "taskyon: %s: cannot prepare the containment\n", kContainEntry.data());
    return 125;
  }
  const pid_t pid = ::fork();
  if (pid < 0) return 125;
  if (pid == 0) hardening::contain(**containment);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 125;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 125;
}

}  // namespace taskyon::native::python
