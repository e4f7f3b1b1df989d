#include "cli.h"
#include "suggest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "taskyon/base/escape.h"
#include "taskyon/host/views.h"

namespace tycli {

using taskyon::Errc;

int exit_code_for(const taskyon::Error& error) {
  switch (error.code) {
    case Errc::store:
    case Errc::io:
    case Errc::runtime_missing:
    case Errc::internal:
      return kExitEnvironment;
    default:
      return kExitBadInput;
  }
}

int report(const Globals& g, const taskyon::Error& error) {
  if (g.json) {
    print_json(taskyon::host::error_json(error));
  } else {
    // Messages may quote tool text (a tool's error, a name it chose): escaped.
    std::cerr << fmt::format("tycli: error: {} [{}]\n", taskyon::escape_terminal(plain_words(error.describe())),
                             taskyon::code_name(error.code));
  }
  return exit_code_for(error);
}

taskyon::Result<taskyon::store::Store> open_store(const Globals& g, StoreUse use) {
  std::string path = g.db_path;
  if (path.empty()) {
    auto p = taskyon::store::default_db_path();
    if (!p) return std::unexpected(p.error());
    path = *p;
  }
  if (use == StoreUse::read) {
    // A read never creates a store (issue 16): a mistyped --db or
    // TASKYON_HOME would otherwise show an empty one as if it were yours.
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      return taskyon::fail(Errc::not_found,
                           fmt::format("there is no store at {} (check --db and TASKYON_HOME); commands that write "
                                       "create it, e.g. `tycli tool install FILE`",
                                       path),
                           path);
    return taskyon::store::Store::open_for_reading(path);
  }
  return taskyon::store::Store::open(path);
}

namespace {

// `path` is a file's path or "from stdin"; the error's place is the path or "stdin".
std::string place(const std::string& path) { return path == "from stdin" ? "stdin" : path; }

std::unexpected<taskyon::Error> too_large(std::string_view what, const std::string& path, std::size_t limit,
                                          std::string_view size) {
  return taskyon::fail(Errc::bad_usage,
                       fmt::format("{} {} is {}; the limit is {} bytes (docs/limits.md)", what, path, size, limit),
                       place(path));
}

// Reads `fd` to its end, refusing more than `limit` bytes without reading them.
taskyon::Result<std::string> read_capped(int fd, std::size_t limit, std::string_view what, const std::string& name) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return out;
    if (n < 0) {
      if (errno == EINTR) continue;
      return taskyon::fail(Errc::io, fmt::format("cannot read {} {}: {}", what, name, std::strerror(errno)), place(name));
    }
    if (out.size() + static_cast<std::size_t>(n) > limit)
      return too_large(what, name, limit, fmt::format("more than {} bytes", limit));
    out.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

taskyon::Result<std::string> read_bounded_stdin(std::size_t limit, std::string_view what) {
  static bool taken = false;  // one tycli process runs one command
  if (taken)
    return taskyon::fail(Errc::bad_usage,
                         fmt::format("stdin was already read for this command; {} cannot be `-` too (put one of "
                                     "them in a file)",
                                     what),
                         "-");
  taken = true;
  return read_capped(STDIN_FILENO, limit, what, "from stdin");
}

taskyon::Result<std::string> read_bounded_file(const std::string& path, std::size_t limit, std::string_view what,
                                               bool stdin_ok) {
  if (path == "-" && stdin_ok) return read_bounded_stdin(limit, what);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    return taskyon::fail(Errc::bad_usage, fmt::format("cannot open {} {}: {}", what, path, std::strerror(errno)),
                         path);
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return taskyon::fail(Errc::bad_usage,
                         fmt::format("{} {} is not a regular file (a device, FIFO or directory is refused{})", what,
                                     path, stdin_ok ? "; `-` reads stdin" : ""),
                         path);
  }
  if (static_cast<std::uint64_t>(st.st_size) > limit) {
    ::close(fd);
    return too_large(what, path, limit, fmt::format("{} bytes", st.st_size));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  auto text = read_capped(fd, limit, what, path);  // the file may grow after fstat
  ::close(fd);
  return text;
}

taskyon::Result<taskyon::json::Value> read_json_file(const std::string& path, std::size_t limit,
                                                     std::string_view what, bool stdin_ok) {
  auto text = read_bounded_file(path, limit, what, stdin_ok);
  if (!text) return std::unexpected(text.error());
  auto value = taskyon::json::parse(*text);
  if (!value) {
    auto e = value.error();
    const std::string name = stdin_ok && path == "-" ? "stdin" : path;
    e.where = e.where.empty() ? name : name + ": " + e.where;
    if (e.code == Errc::io) e.code = Errc::invalid_json;
    return std::unexpected(e);
  }
  return value;
}

taskyon::Result<taskyon::json::Value> json_argument(const std::string& text, const std::string& option,
                                                    std::size_t limit) {
  if (!text.empty() && text.front() == '@') {
    auto v = read_json_file(text.substr(1), limit, fmt::format("the {} file", option), /*stdin_ok=*/true);
    if (!v && v.error().code == Errc::io) v.error().code = Errc::bad_usage;
    return v;
  }
  if (text.size() > limit)
    return taskyon::fail(Errc::bad_usage,
                         fmt::format("{} has {} bytes; the limit is {} bytes (docs/limits.md)", option, text.size(), limit),
                         option);
  auto value = taskyon::json::parse(text);
  if (!value) {
    auto e = value.error();
    e.where = e.where.empty() ? option : option + ": " + e.where;
    return std::unexpected(e);
  }
  return value;
}

void print_json(const taskyon::json::Value& value) {
  // Tool text (logs, errors, audit targets, a page's sandbox log detail) may hold C1 controls
  // and bidi format characters, which JSON leaves raw: escaped here, for every --json output.
  std::cout << taskyon::escape_json_dump(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) << "\n";
}

std::string short_id(const std::string& id) { return id.size() > 19 ? id.substr(0, 19) : id; }

std::string table_id(const Globals& g, const std::string& id) { return g.full_ids ? id : short_id(id); }

const CLI::Validator& existing_file_or_stdin() {
  static const CLI::Validator check(
      [](std::string& path) { return path == "-" ? std::string() : CLI::ExistingFile(path); }, "FILE or -");
  return check;
}

}  // namespace tycli
