#include "taskyon/hardening/runtime_files.h"

#include <elf.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "taskyon/base/spawn.h"
#include "taskyon/hardening/fd.h"

namespace taskyon::hardening {

namespace {

constexpr std::size_t kMaxListOutput = 1u << 20;  // ld.so --list output, bytes

Result<std::string> real_path(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) {
    return fail(Errc::runtime_missing, fmt::format("cannot resolve {}: {}", path, std::strerror(errno)), path);
  }
  return std::string(buf);
}

bool read_at(int fd, void* out, std::size_t size, std::uint64_t offset) {
  return ::pread(fd, out, size, static_cast<off_t>(offset)) == static_cast<ssize_t>(size);
}

// PT_INTERP of an ELF file whose header class is Ehdr/Phdr.
template <typename Ehdr, typename Phdr>
Result<std::string> interp_of(int fd, const std::string& path) {
  Ehdr ehdr;
  if (!read_at(fd, &ehdr, sizeof ehdr, 0) || ehdr.e_phentsize != sizeof(Phdr)) {
    return fail(Errc::runtime_missing, fmt::format("{} is not a valid ELF file", path), path);
  }
  for (unsigned i = 0; i < ehdr.e_phnum; ++i) {
    Phdr phdr;
    if (!read_at(fd, &phdr, sizeof phdr, ehdr.e_phoff + std::uint64_t{i} * sizeof(Phdr))) {
      return fail(Errc::runtime_missing, fmt::format("{} is not a valid ELF file", path), path);
    }
    if (phdr.p_type != PT_INTERP) continue;
    if (phdr.p_filesz < 2 || phdr.p_filesz > PATH_MAX) {
      return fail(Errc::runtime_missing, fmt::format("{} has an invalid ELF interpreter", path), path);
    }
    std::string interp(phdr.p_filesz, '\0');
    if (!read_at(fd, interp.data(), interp.size(), phdr.p_offset) || interp.back() != '\0') {
      return fail(Errc::runtime_missing, fmt::format("{} has an invalid ELF interpreter", path), path);
    }
    interp.pop_back();
    return interp;
  }
  return std::string();
}

// Runs `interpreter --list executable` with an empty environment; its stdout.
Result<std::string> list_libraries(const std::string& interpreter, const std::string& executable) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return fail(Errc::internal, fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  Fd read_end(fds[0]), write_end(fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::string arg0 = interpreter, list = "--list", exe = executable;
  char* argv[] = {arg0.data(), list.data(), exe.data(), nullptr};
  char* envp[] = {nullptr};
  pid_t pid = -1;
  const SpawnAttributes attr;
  const int rc = ::posix_spawn(&pid, interpreter.c_str(), &actions, attr.get(), argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  write_end.reset();
  if (rc != 0) {
    return fail(Errc::internal, fmt::format("cannot run {} --list: {}", interpreter, std::strerror(rc)), interpreter);
  }
  std::string out;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(read_end.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() < kMaxListOutput) out.append(chunk, static_cast<std::size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fail(Errc::internal, fmt::format("{} --list {} failed (wait status {})", interpreter, executable, status),
                executable);
  }
  return out;
}

}  // namespace

Result<std::string> elf_interpreter(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail(Errc::runtime_missing, fmt::format("cannot open {}: {}", path, std::strerror(errno)), path);
  unsigned char ident[EI_NIDENT];
  if (!read_at(fd.get(), ident, sizeof ident, 0) || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return fail(Errc::runtime_missing, fmt::format("{} is not an ELF executable", path), path);
  }
  if (ident[EI_CLASS] == ELFCLASS64) return interp_of<Elf64_Ehdr, Elf64_Phdr>(fd.get(), path);
  if (ident[EI_CLASS] == ELFCLASS32) return interp_of<Elf32_Ehdr, Elf32_Phdr>(fd.get(), path);
  return fail(Errc::runtime_missing, fmt::format("{} is not an ELF executable", path), path);
}

Result<RuntimeFiles> runtime_files(const std::string& executable) {
  RuntimeFiles files;
  auto exe = real_path(executable);
  if (!exe) return std::unexpected(std::move(exe.error()));
  files.executable = std::move(*exe);
  files.named.push_back(executable.starts_with("/") ? executable : files.executable);
  auto interp = elf_interpreter(files.executable);
  if (!interp) return std::unexpected(std::move(interp.error()));
  if (interp->empty()) return files;
  auto interp_real = real_path(*interp);
  if (!interp_real) return std::unexpected(std::move(interp_real.error()));
  files.interpreter = std::move(*interp_real);
  files.named.push_back(*interp);

  auto listed = list_libraries(*interp, files.executable);
  if (!listed) return std::unexpected(std::move(listed.error()));
  // Lines: "\tNAME => /PATH (0x…)", "\t/PATH (0x…)" (the interpreter),
  // "\tlinux-vdso.so.1 (0x…)" (no file), "\tNAME => not found".
  std::string_view text = *listed;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    if (line.find("=> not found") != std::string_view::npos) {
      return fail(Errc::runtime_missing, fmt::format("{} needs a library that is not installed: {}", executable,
                                                     line.substr(line.find_first_not_of(" \t"))),
                  executable);
    }
    std::size_t start = line.find("=> ");
    start = start == std::string_view::npos ? line.find_first_not_of(" \t") : start + 3;
    if (start == std::string_view::npos || line[start] != '/') continue;
    const std::size_t stop = line.find(" (0x", start);
    const std::string named(line.substr(start, stop == std::string_view::npos ? line.npos : stop - start));
    auto lib = real_path(named);
    if (!lib) return std::unexpected(std::move(lib.error()));
    if (std::ranges::find(files.named, named) == files.named.end()) files.named.push_back(named);
    if (*lib == files.interpreter || std::ranges::find(files.libraries, *lib) != files.libraries.end()) continue;
    files.libraries.push_back(std::move(*lib));
  }
  return files;
}

}  // namespace taskyon::hardening
