#include "taskyon/hardening/mounts.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <string_view>

#include <fmt/format.h>

namespace taskyon::hardening::mounts {

namespace {

constexpr int kMaxSymlinks = 40;  // as the kernel's own lookup limit

// The mount flags a bind mount inherits from its source and may not drop in a
// user namespace (MNT_LOCK_*): they are repeated on the read-only remount.
unsigned long locked_flags(const std::string& path) {
  struct statvfs vfs {};
  if (::statvfs(path.c_str(), &vfs) != 0) return 0;
  unsigned long flags = 0;
  if (vfs.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (vfs.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (vfs.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (vfs.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (vfs.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (vfs.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return flags;
}

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    const std::size_t start = path.find_first_not_of('/');
    if (start == std::string_view::npos) break;
    path.remove_prefix(start);
    const std::size_t end = std::min(path.find('/'), path.size());
    out.push_back(path.substr(0, end));
    path.remove_prefix(end);
  }
  return out;
}

class Walker {
 public:
  // `tree`: the path is a directory to bind whole.
  Result<void> add(const std::string& path, bool tree = false) {
    std::string todo = path;
    for (int hops = 0; hops <= kMaxSymlinks; ++hops) {
      auto next = step(todo, tree);
      if (!next) return std::unexpected(std::move(next.error()));
      if (next->empty()) return {};
      todo = std::move(*next);
    }
    return fail(Errc::internal, fmt::format("too many symlinks resolving {}", path), path);
  }
  std::vector<Op> ops;

 private:
  // Walks `path` from the root; returns the path to walk next when a symlink
  // was met (its target joined with the rest), empty when the file was reached.
  Result<std::string> step(const std::string& path, bool tree) {
    const auto parts = components(path);
    std::string cur;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (parts[i] == ".") continue;
      if (parts[i] == "..") {
        cur = cur.substr(0, cur.rfind('/'));
        continue;
      }
      const std::string next = cur + "/" + std::string(parts[i]);
      struct stat st {};
      if (::lstat(next.c_str(), &st) != 0) {
        return fail(Errc::internal, fmt::format("cannot stat {}: {}", next, std::strerror(errno)), next);
      }
      if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        const ssize_t n = ::readlink(next.c_str(), target, sizeof target - 1);
        if (n <= 0) return fail(Errc::internal, fmt::format("cannot read the link {}", next), next);
        const std::string link(target, static_cast<std::size_t>(n));
        if (seen_.insert(next).second) ops.push_back({Op::Kind::symlink, next, link, 0});
        std::string rest;
        for (std::size_t j = i + 1; j < parts.size(); ++j) rest += "/" + std::string(parts[j]);
        return (link.front() == '/' ? link : cur + "/" + link) + rest;
      }
      const bool last = i + 1 == parts.size();
      if (tree && last) {
        if (!S_ISDIR(st.st_mode)) return fail(Errc::internal, fmt::format("{} is not a directory", next), next);
        if (seen_.insert(next + "/").second) {
          ops.push_back({Op::Kind::bind_tree, next, next, MS_REMOUNT | MS_BIND | MS_RDONLY | locked_flags(next)});
        }
      } else if (S_ISDIR(st.st_mode)) {
        if (seen_.insert(next).second) ops.push_back({Op::Kind::dir, next, {}, 0});
      } else if (last) {
        if (seen_.insert(next).second) {
          ops.push_back({Op::Kind::bind, next, next, MS_REMOUNT | MS_BIND | MS_RDONLY | locked_flags(next)});
        }
      } else {
        return fail(Errc::internal, fmt::format("{} is not a directory", next), next);
      }
      cur = next;
    }
    return std::string();
  }
  std::set<std::string> seen_;
};

bool sys_mkdir(const char* path) noexcept {
  return ::syscall(SYS_mkdirat, AT_FDCWD, path, 0755) == 0 || errno == EEXIST;
}

}  // namespace

Result<std::vector<Op>> plan_files(const std::vector<std::string>& files, const std::vector<std::string>& trees) {
  Walker walker;
  for (const std::string& file : files) {
    if (file.empty() || file.front() != '/') {
      return fail(Errc::internal, fmt::format("the runtime file {} is not an absolute path", file), file);
    }
    if (auto ok = walker.add(file); !ok) return std::unexpected(std::move(ok.error()));
  }
  // Trees by their real paths, outer ones first; one inside another is shown by the outer.
  std::vector<std::string> real_trees;
  for (const std::string& tree : trees) {
    char buf[PATH_MAX];
    if (tree.empty() || tree.front() != '/' || !::realpath(tree.c_str(), buf)) {
      return fail(Errc::internal, fmt::format("the runtime tree {} does not resolve", tree), tree);
    }
    real_trees.emplace_back(buf);
  }
  std::sort(real_trees.begin(), real_trees.end());
  std::vector<std::string> kept;
  for (const std::string& tree : real_trees) {
    const bool inside = std::any_of(kept.begin(), kept.end(), [&](const std::string& outer) {
      return tree == outer || outer == "/" || tree.starts_with(outer + "/");
    });
    if (inside) continue;
    kept.push_back(tree);
    if (auto ok = walker.add(tree, /*tree=*/true); !ok) return std::unexpected(std::move(ok.error()));
  }
  return std::move(walker.ops);
}

RootPlan plan_root(const std::vector<Op>& files, const std::string& workdir) {
  RootPlan plan;
  plan.root = workdir;
  // Room for the directories, links and empty bind targets, nothing more.
  plan.tmpfs_options = "size=256k,nr_inodes=1024,mode=0755";
  plan.workdir_inside = workdir;
  plan.put_old = ".";
  std::string dir;
  auto add_dir = [&](const std::string& path) {
    for (std::string_view part : components(path)) {
      dir += "/" + std::string(part);
      plan.ops.push_back({Op::Kind::dir, workdir + dir, {}, 0});
    }
    dir.clear();
  };
  add_dir("/tmp");
  for (Op op : files) {
    op.path = workdir + op.path;
    plan.ops.push_back(std::move(op));
  }
  add_dir(workdir);  // after the files: a file's directory may be a symlink created above
  return plan;
}

bool build_root(const RootPlan& plan) noexcept {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  if (::mount("tmpfs", plan.root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, plan.tmpfs_options.c_str()) != 0) {
    return false;
  }
  ::umask(022);
  for (const Op& op : plan.ops) {
    switch (op.kind) {
      case Op::Kind::dir:
        if (!sys_mkdir(op.path.c_str())) return false;
        break;
      case Op::Kind::symlink:
        if (::syscall(SYS_symlinkat, op.source.c_str(), AT_FDCWD, op.path.c_str()) != 0 && errno != EEXIST) {
          return false;
        }
        break;
      case Op::Kind::bind_tree:
        if (!sys_mkdir(op.path.c_str())) return false;
        if (::mount(op.source.c_str(), op.path.c_str(), nullptr, MS_BIND | (op.recursive ? MS_REC : 0), nullptr) != 0)
          return false;
        if (op.remount_flags != 0 && ::mount(nullptr, op.path.c_str(), nullptr, op.remount_flags, nullptr) != 0)
          return false;
        break;
      case Op::Kind::bind: {
        const long fd = ::syscall(SYS_openat, AT_FDCWD, op.path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) return false;
        ::syscall(SYS_close, fd);
        if (::mount(op.source.c_str(), op.path.c_str(), nullptr, MS_BIND, nullptr) != 0) return false;
        if (op.remount_flags != 0 && ::mount(nullptr, op.path.c_str(), nullptr, op.remount_flags, nullptr) != 0)
          return false;
        break;
      }
    }
  }
  if (::chdir(plan.root.c_str()) != 0) return false;
  if (::syscall(SYS_pivot_root, plan.put_old.c_str(), plan.put_old.c_str()) != 0) return false;
  if (::umount2(plan.put_old.c_str(), MNT_DETACH) != 0) return false;
  if (::mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0) {
    return false;
  }
  return ::chdir(plan.workdir_inside.c_str()) == 0;
}

}  // namespace taskyon::hardening::mounts
