// The sandbox's own root: a mount namespace in which the child sees only the
// files its runtime needs, read-only, and empty directories for /tmp and its
// working directory — nothing else of the host's tree, so stat(2), access(2),
// readlink(2) and path lookups of any other host path answer ENOENT (Landlock
// does not mediate those; corpus FS-02).
//
// Host side: plan_root() walks every path the runtime is known to open (each
// symlink on the way is recreated as a symlink, each directory as an empty
// directory, the file itself as a read-only bind mount of the host's file)
// and formats every string the child will need. Child side (after
// unshare(CLONE_NEWNS), syscalls only): build_root():
//   1. the whole tree private (no mount event reaches the host, none comes in)
//   2. a small tmpfs (nosuid, nodev) on the sandbox's working directory, the
//      new root: the host sees nothing of it
//   3. the planned directories, symlinks and empty files in it; each file gets
//      a bind mount of the host's file, remounted read-only with the source
//      mount's locked flags (nosuid, nodev, noexec, atime) kept; each tree
//      (a directory the runtime lists, e.g. Python's stdlib) an empty
//      directory with a read-only bind mount of the host's directory (not
//      recursive: mounts below it stay out)
//   4. pivot_root into it, the old root detached (umount2 MNT_DETACH)
//   5. the new root remounted read-only; chdir to the working directory (the
//      same path inside as outside, empty)
// The runtime is exec'd through a descriptor opened on the host, so its own
// path need not resolve inside; its libraries, loader cache and the files it
// reads at start (e.g. /dev/null, bound read-only: writes answer EROFS, never
// the host's node) do. No /proc, /sys or /dev beyond those files.
#pragma once

#include <string>
#include <vector>

#include "taskyon/base/error.h"

namespace taskyon::hardening::mounts {

struct Op {
  enum class Kind { dir, symlink, bind, bind_tree };
  Kind kind = Kind::dir;
  std::string path;    // absolute, under the new root as the host sees it before pivot: <root><inside path>
  std::string source;  // bind, bind_tree: the host's file or directory; symlink: the link's target text
  unsigned long remount_flags = 0;  // bind, bind_tree: MS_REMOUNT|MS_BIND|MS_RDONLY|the source's locked flags;
                                    // 0: no remount (the bind stays writable, as its source)
  bool recursive = false;           // bind_tree: with the mounts below the source (MS_REC; a procfs for bwrap)
};

// Prepared before fork; immutable.
struct RootPlan {
  std::string root;         // the host directory the tmpfs is mounted on (the working directory)
  std::string tmpfs_options;
  std::vector<Op> ops;      // in creation order (parents first)
  std::string workdir_inside;  // the working directory's path inside (== root's host path)
  std::string put_old;      // "." for pivot_root(".", ".")
};

// The ops for `files` and whole directory `trees` (absolute paths as the
// runtime names them; symlinks followed and recreated) under a root at
// `workdir`. Trees come after the files (a file inside a tree is then shown
// by the tree's mount); a tree inside another is left to the outer one.
// Errc::internal when a path cannot be resolved or a tree is not a
// directory. The working directory and /tmp are empty directories inside.
Result<std::vector<Op>> plan_files(const std::vector<std::string>& files,
                                   const std::vector<std::string>& trees = {});
RootPlan plan_root(const std::vector<Op>& files, const std::string& workdir);

// Child side: steps 1-5 above; false on failure (errno set). No allocation.
bool build_root(const RootPlan& plan) noexcept;

}  // namespace taskyon::hardening::mounts
