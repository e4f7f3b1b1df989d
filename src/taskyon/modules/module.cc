#include "taskyon/modules/module.h"

#include <archive.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <archive_entry.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <cctype>
#include <algorithm>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "taskyon/registry/manifest.h"

namespace taskyon::modules {
namespace {

namespace fs = std::filesystem;

bool kept(std::string_view path) {
  return path.ends_with(".js") || path.ends_with(".cjs") || path.ends_with(".mjs") || path.ends_with(".json");
}

// The file package.json's "exports" gives the package's root (".") under an
// import, node, require or default condition (in that preference), "./" stripped; empty
// when it names none. Only for a package without "main": the guest resolves
// "exports" itself for every import (docs/modules.md).
std::string exports_root(const json::Value& exports) {
  const json::Value* root = &exports;
  if (exports.is_object() && !exports.empty() && exports.begin().key().starts_with(".")) {
    if (!exports.contains(".")) return {};
    root = &exports["."];
  }
  for (int depth = 0; depth < 8; ++depth) {
    if (root->is_string()) {
      std::string target = root->get<std::string>();
      return target.starts_with("./") ? target.substr(2) : std::string();
    }
    if (root->is_array()) {
      if (root->empty()) return {};
      root = &(*root)[0];
      continue;
    }
    if (!root->is_object()) return {};
    const json::Value* next = nullptr;  // (json::Value sorts keys: the conditions by preference instead)
    for (const char* key : {"import", "node", "require", "default"})
      if (root->contains(key)) {
        next = &(*root)[key];
        break;
      }
    if (next == nullptr) return {};
    root = next;
  }
  return {};
}

// A relative path without ".", "..", empty segments, a leading "/" or a NUL.
bool is_clean_path(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string_view::npos ||
      path.find('\\') != std::string_view::npos)
    return false;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = path.find('/', start);
    const std::string_view segment = path.substr(start, end == std::string_view::npos ? path.npos : end - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

bool in_node_modules(std::string_view path) {
  return path.starts_with("node_modules/") || path.find("/node_modules/") != std::string_view::npos;
}

// npm's integrity string of a tarball: "sha512-" + base64 of its SHA-512 (W3C SRI).
std::string sri_sha512(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha512(), nullptr) != 1) return {};
  std::string out(4 * ((length + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), digest, static_cast<int>(length));
  out.resize(static_cast<std::size_t>(n));
  return "sha512-" + out;
}

// Everything `fd` (a regular file, opened by the caller) holds from its
// current offset; more than `max` bytes is Errc::bad_usage. `where` names it.
Result<std::string> read_all(int fd, std::size_t max, const std::string& where) {
  std::string bytes;
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Errc::io, fmt::format("cannot read the file: {}", std::strerror(errno)), where);
    if (n == 0) return bytes;
    if (bytes.size() + static_cast<std::size_t>(n) > max)
      return fail(Errc::bad_usage, fmt::format("the file is larger than {} bytes", max), where);
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
}

// A descriptor that closes itself.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// name, version and main from package.json's text; `name`/`version` given win.
Result<void> apply_package_json(Module& m, std::string_view where) {
  auto it = m.files.find("package.json");
  if (it == m.files.end()) return fail(Errc::bad_usage, "the package has no package.json", std::string(where));
  auto pkg = json::parse(it->second);
  if (!pkg || !pkg->is_object())
    return fail(Errc::bad_usage, "package.json is not a JSON object", std::string(where) + "/package.json");
  auto field = [&](const char* key) {
    return pkg->contains(key) && (*pkg)[key].is_string() ? (*pkg)[key].get<std::string>() : std::string();
  };
  if (m.name.empty()) m.name = field("name");
  if (m.version.empty()) m.version = field("version");
  std::string main = field("main");
  if (main.empty() && pkg->contains("exports")) main = exports_root((*pkg)["exports"]);
  while (main.starts_with("./")) main.erase(0, 2);
  if (main.empty()) main = "index.js";
  // Node's resolution of "main": the file, FILE.js, FILE/index.js.
  for (const std::string& candidate : {main, main + ".js", main + "/index.js"})
    if (m.files.contains(candidate)) {
      m.main = candidate;
      return {};
    }
  return fail(Errc::bad_usage, fmt::format("package.json's main \"{}\" is not among the package's .js/.cjs/.mjs/.json files", main),
              std::string(where) + "/package.json");
}

// A later file of the same path replaces an earlier one, as tar and npm's
// extraction do.
Result<void> add_file(Module& m, std::string path, std::string bytes, std::size_t& total) {
  if (in_node_modules(path) || !kept(path)) {
    m.skipped.push_back(std::move(path));
    return {};
  }
  if (auto old = m.files.find(path); old != m.files.end()) total -= old->second.size();
  total += bytes.size();
  if (total > kMaxModuleBytes)
    return fail(Errc::bad_usage, fmt::format("the package's .js/.cjs/.mjs/.json files exceed {} bytes together (docs/modules.md)",
                                             kMaxModuleBytes), path);
  m.files.insert_or_assign(std::move(path), std::move(bytes));
  return {};
}

Result<Module> read_tarball(const std::string& bytes, const fs::path& source) {
  Module m;
  m.integrity = sri_sha512(bytes);
  std::unique_ptr<archive, decltype(&archive_read_free)> a(archive_read_new(), archive_read_free);
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_memory(a.get(), bytes.data(), bytes.size()) != ARCHIVE_OK)
    return fail(Errc::bad_usage, fmt::format("not a gzipped tar archive: {}", archive_error_string(a.get())),
                source.string());
  std::size_t total = 0;
  std::string root;  // the package's directory in the archive ("package" from npm pack): one for every file
  archive_entry* entry = nullptr;
  for (;;) {
    const int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK)
      return fail(Errc::bad_usage, fmt::format("the archive is damaged: {}", archive_error_string(a.get())),
                  source.string());
    if (archive_entry_filetype(entry) != AE_IFREG) continue;  // directories, links: never followed
    const std::string name = archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "";
    // npm pack puts every file under "package/" (some registries' tarballs
    // use another directory): every file must be under the same one, a
    // normal name, and its path below it relative and normalized.
    const auto slash = name.find('/');
    const std::string first = name.substr(0, slash);
    if (slash == std::string::npos || first.empty() || first == "." || first == ".." || !is_clean_path(first))
      return fail(Errc::bad_usage, "the archive holds a file outside a package directory (npm pack: package/)", name);
    if (root.empty()) root = first;
    if (first != root)
      return fail(Errc::bad_usage, fmt::format("the archive holds files under two directories, {}/ and {}/", root, first),
                  name);
    std::string path = name.substr(slash + 1);
    if (!is_clean_path(path))
      return fail(Errc::bad_usage, "a path in the archive leaves its package or is not normalized (\"..\", \"//\", \"\\\")",
                  name);
    const la_int64_t size = archive_entry_size(entry);
    if (size < 0) return fail(Errc::bad_usage, "the archive is damaged", name);
    if (static_cast<std::size_t>(size) > kMaxModuleBytes) {
      if (kept(path) && !in_node_modules(path))
        return fail(Errc::bad_usage, fmt::format("the file is {} bytes; a module's files are at most {} bytes together "
                                                 "(docs/modules.md)", size, kMaxModuleBytes), name);
      m.skipped.push_back(path);
      continue;
    }
    std::string data(static_cast<std::size_t>(size), '\0');
    if (archive_read_data(a.get(), data.data(), data.size()) != size)
      return fail(Errc::bad_usage, "the archive is damaged", path);
    if (auto added = add_file(m, std::move(path), std::move(data), total); !added) return std::unexpected(added.error());
  }
  return m;
}

// A wheel's file name: NAME-VERSION(-BUILD)?-PYTAGS-ABI-PLATFORM.whl (PEP 427).
struct WheelName {
  std::string name, version, python, abi, platform;
};
std::optional<WheelName> parse_wheel_name(std::string file) {
  if (!file.ends_with(".whl")) return std::nullopt;
  file.resize(file.size() - 4);
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const std::size_t dash = file.find('-', start);
    parts.push_back(file.substr(start, dash == std::string::npos ? dash : dash - start));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  if (parts.size() != 5 && parts.size() != 6) return std::nullopt;
  for (const auto& p : parts)
    if (p.empty()) return std::nullopt;
  const std::size_t n = parts.size();
  return WheelName{parts[0], parts[1], parts[n - 3], parts[n - 2], parts[n - 1]};
}

// PEP 503: lower case, each run of "-", "_" and "." one "-".
std::string normalized_distribution(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

Result<Module> read_wheel(const std::string& bytes, const fs::path& source) {
  const std::string file = source.filename().string();
  const auto tags = parse_wheel_name(file);
  if (!tags)
    return fail(Errc::bad_usage, "a wheel is named NAME-VERSION(-BUILD)?-PYTHON-ABI-PLATFORM.whl (PEP 427)",
                source.string());
  bool pure_python_tag = true;
  for (std::size_t start = 0; start <= tags->python.size();) {
    const std::size_t dot = tags->python.find('.', start);
    const std::string tag = tags->python.substr(start, dot == std::string::npos ? dot : dot - start);
    pure_python_tag = pure_python_tag && tag.starts_with("py");
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!pure_python_tag || tags->abi != "none" || tags->platform != "any")
    return fail(Errc::bad_usage,
                fmt::format("only pure-Python wheels (py3-none-any) can be stored; this one is tagged {}-{}-{} "
                            "(compiled code would run outside what the sandbox can vouch for)",
                            tags->python, tags->abi, tags->platform),
                source.string());
  Module m;
  m.kind = std::string(kWheelKind);
  m.name = normalized_distribution(tags->name);
  m.version = tags->version;
  m.integrity = sri_sha512(bytes);
  std::unique_ptr<archive, decltype(&archive_read_free)> a(archive_read_new(), archive_read_free);
  archive_read_support_format_zip(a.get());
  if (archive_read_open_memory(a.get(), bytes.data(), bytes.size()) != ARCHIVE_OK)
    return fail(Errc::bad_usage, fmt::format("not a zip archive: {}", archive_error_string(a.get())), source.string());
  std::size_t total = 0;
  archive_entry* entry = nullptr;
  for (;;) {
    const int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK)
      return fail(Errc::bad_usage, fmt::format("the wheel is damaged: {}", archive_error_string(a.get())),
                  source.string());
    if (archive_entry_filetype(entry) != AE_IFREG) continue;  // directories, links: never followed
    std::string path = archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "";
    if (auto ok = check_wheel_path(path); !ok) return std::unexpected(ok.error());
    const std::string top = path.substr(0, path.find('/'));
    if (top.ends_with(".data")) {
      const std::string below = path.substr(top.size() + 1);
      if (below.starts_with("purelib/") || below.starts_with("platlib/"))
        return fail(Errc::bad_usage, "the wheel installs code from its .data/purelib or .data/platlib, which is not "
                                     "supported (build it with the code at the wheel's root)", path);
      m.skipped.push_back(std::move(path));
      continue;
    }
    const la_int64_t size = archive_entry_size(entry);
    if (size < 0) return fail(Errc::bad_usage, "the wheel is damaged", path);
    if (static_cast<std::size_t>(size) > kMaxModuleBytes - std::min(total, kMaxModuleBytes))
      return fail(Errc::bad_usage, fmt::format("the wheel's files exceed {} bytes together (docs/modules.md)",
                                               kMaxModuleBytes), path);
    std::string data(static_cast<std::size_t>(size), '\0');
    if (size > 0 && archive_read_data(a.get(), data.data(), data.size()) != size)
      return fail(Errc::bad_usage, "the wheel is damaged", path);
    if (!json::canonicalize(json::Value(data)))
      return fail(Errc::bad_usage, "the wheel holds a file that is not UTF-8 text; the module store keeps text files only",
                  path);
    if (auto old = m.files.find(path); old != m.files.end()) total -= old->second.size();
    total += data.size();
    m.files.insert_or_assign(std::move(path), std::move(data));
  }
  const std::string dist_info = tags->name + "-" + tags->version + ".dist-info/";
  const auto wheel_file = m.files.find(dist_info + "WHEEL");
  if (wheel_file == m.files.end() || !m.files.contains(dist_info + "METADATA"))
    return fail(Errc::bad_usage, fmt::format("the wheel has no {}WHEEL and METADATA", dist_info), source.string());
  if (wheel_file->second.find("Root-Is-Purelib: true") == std::string::npos)
    return fail(Errc::bad_usage, "the wheel's WHEEL file does not say Root-Is-Purelib: true (not a pure-Python wheel)",
                wheel_file->first);
  m.main = dist_info + "METADATA";
  return m;
}

// CPython 3.10–3.14's sys.stdlib_module_names together (3.11's, plus what
// 3.12–3.14 added: _pydatetime, _pylong, _sha2, _wmi; _android_support,
// _apple_support, _colorize, _interp*, _ios_support, _opcode_metadata,
// _pyrepl, _suggestions, _sysconfig; _hmac, _py_warnings, _remote_debugging,
// _types, _zstd, annotationlib, compression), sorted for binary search.
constexpr std::string_view kStdlibModules[] = {
    "__future__", "_abc", "_aix_support", "_android_support", "_apple_support", "_ast", "_asyncio", "_bisect",
    "_blake2", "_bootsubprocess", "_bz2", "_codecs", "_codecs_cn", "_codecs_hk", "_codecs_iso2022", "_codecs_jp",
    "_codecs_kr", "_codecs_tw", "_collections", "_collections_abc", "_colorize", "_compat_pickle", "_compression",
    "_contextvars", "_crypt", "_csv", "_ctypes", "_curses", "_curses_panel", "_datetime", "_dbm", "_decimal",
    "_elementtree", "_frozen_importlib", "_frozen_importlib_external", "_functools", "_gdbm", "_hashlib", "_heapq",
    "_hmac", "_imp", "_interpchannels", "_interpqueues", "_interpreters", "_io", "_ios_support", "_json", "_locale",
    "_lsprof", "_lzma", "_markupbase", "_md5", "_msi", "_multibytecodec", "_multiprocessing", "_opcode",
    "_opcode_metadata", "_operator", "_osx_support", "_overlapped", "_pickle", "_posixshmem", "_posixsubprocess",
    "_py_abc", "_py_warnings", "_pydatetime", "_pydecimal", "_pyio", "_pylong", "_pyrepl", "_queue", "_random",
    "_remote_debugging", "_scproxy", "_sha1", "_sha2", "_sha256", "_sha3", "_sha512", "_signal", "_sitebuiltins",
    "_socket", "_sqlite3", "_sre", "_ssl", "_stat", "_statistics", "_string", "_strptime", "_struct",
    "_suggestions", "_symtable", "_sysconfig", "_thread", "_threading_local", "_tkinter", "_tokenize",
    "_tracemalloc", "_types", "_typing", "_uuid", "_warnings", "_weakref", "_weakrefset", "_winapi", "_wmi",
    "_zoneinfo", "_zstd", "abc", "aifc", "annotationlib", "antigravity", "argparse", "array", "ast", "asynchat",
    "asyncio", "asyncore", "atexit", "audioop", "base64", "bdb", "binascii", "bisect", "builtins", "bz2",
    "cProfile", "calendar", "cgi", "cgitb", "chunk", "cmath", "cmd", "code", "codecs", "codeop", "collections",
    "colorsys", "compileall", "compression", "concurrent", "configparser", "contextlib", "contextvars", "copy",
    "copyreg", "crypt", "csv", "ctypes", "curses", "dataclasses", "datetime", "dbm", "decimal", "difflib", "dis",
    "distutils", "doctest", "email", "encodings", "ensurepip", "enum", "errno", "faulthandler", "fcntl", "filecmp",
    "fileinput", "fnmatch", "fractions", "ftplib", "functools", "gc", "genericpath", "getopt", "getpass", "gettext",
    "glob", "graphlib", "grp", "gzip", "hashlib", "heapq", "hmac", "html", "http", "idlelib", "imaplib", "imghdr",
    "imp", "importlib", "inspect", "io", "ipaddress", "itertools", "json", "keyword", "lib2to3", "linecache",
    "locale", "logging", "lzma", "mailbox", "mailcap", "marshal", "math", "mimetypes", "mmap", "modulefinder",
    "msilib", "msvcrt", "multiprocessing", "netrc", "nis", "nntplib", "nt", "ntpath", "nturl2path", "numbers",
    "opcode", "operator", "optparse", "os", "ossaudiodev", "pathlib", "pdb", "pickle", "pickletools", "pipes",
    "pkgutil", "platform", "plistlib", "poplib", "posix", "posixpath", "pprint", "profile", "pstats", "pty", "pwd",
    "py_compile", "pyclbr", "pydoc", "pydoc_data", "pyexpat", "queue", "quopri", "random", "re", "readline",
    "reprlib", "resource", "rlcompleter", "runpy", "sched", "secrets", "select", "selectors", "shelve", "shlex",
    "shutil", "signal", "site", "smtpd", "smtplib", "sndhdr", "socket", "socketserver", "spwd", "sqlite3",
    "sre_compile", "sre_constants", "sre_parse", "ssl", "stat", "statistics", "string", "stringprep", "struct",
    "subprocess", "sunau", "symtable", "sys", "sysconfig", "syslog", "tabnanny", "tarfile", "telnetlib", "tempfile",
    "termios", "textwrap", "this", "threading", "time", "timeit", "tkinter", "token", "tokenize", "tomllib",
    "trace", "traceback", "tracemalloc", "tty", "turtle", "turtledemo", "types", "typing", "unicodedata",
    "unittest", "urllib", "uu", "uuid", "venv", "warnings", "wave", "weakref", "webbrowser", "winreg", "winsound",
    "wsgiref", "xdrlib", "xml", "xmlrpc", "zipapp", "zipfile", "zipimport", "zlib", "zoneinfo",
};

// What a loader takes for native code, by name (the last segment) or by
// its first bytes; empty when neither.
std::string native_code(std::string_view path, std::string_view bytes) {
  std::string name(path.substr(path.rfind('/') + 1));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const std::string_view suffix : {".so", ".pyd", ".dylib", ".dll"})
    if (name.ends_with(suffix)) return fmt::format("its name ends in {} (a native extension or shared library)", suffix);
  if (const auto so = name.find(".so."); so != std::string::npos &&
      name.find_first_not_of("0123456789.", so + 4) == std::string::npos && so + 4 < name.size())
    return "its name is a versioned shared library's (.so.N)";
  struct Magic {
    std::string_view bytes, what;
  };
  static constexpr Magic kMagic[] = {
      {"\x7f" "ELF", "an ELF executable or shared object"},
      {"\xfe\xed\xfa\xce", "a Mach-O file"},
      {"\xfe\xed\xfa\xcf", "a Mach-O file"},
      {"\xce\xfa\xed\xfe", "a Mach-O file"},
      {"\xcf\xfa\xed\xfe", "a Mach-O file"},
      {"\xca\xfe\xba\xbe", "a Mach-O universal binary"},
      {"!<arch>\n", "an ar archive of object files"},
      {std::string_view("\0asm", 4), "a WebAssembly module"},
  };
  for (const auto& magic : kMagic)
    if (bytes.starts_with(magic.bytes)) return fmt::format("its bytes are {}", magic.what);
  // PE (Windows executables and DLLs): "MZ", and at the offset the DOS
  // header's e_lfanew gives, "PE\0\0" (a text file may begin "MZ").
  if (bytes.starts_with("MZ") && bytes.size() >= 0x40) {
    std::uint32_t offset = 0;
    for (int i = 3; i >= 0; --i) offset = (offset << 8) | static_cast<unsigned char>(bytes[0x3c + i]);
    if (offset <= bytes.size() - 4 && bytes.substr(offset, 4) == std::string_view("PE\0\0", 4))
      return "its bytes are a PE executable or DLL";
  }
  return {};
}

// The files beneath the directory `dir` (an open descriptor) whose paths
// start with `prefix`, into `m`. Every name is opened beneath its parent's
// descriptor with O_NOFOLLOW and classified by fstat of what was opened, so
// what is read is what was classified: a link (there when listed, or put
// there since) is never followed, a FIFO or device never read (O_NONBLOCK:
// opening one does not wait), a file swapped for a link after the listing
// is left out like any link. The top-level node_modules/ is not entered;
// files below another node_modules/ are listed as skipped.
constexpr int kMaxDirectoryDepth = 64;
Result<void> read_tree(int dir, const std::string& prefix, const fs::path& source, Module& m, std::size_t& total,
                       int depth) {
  if (depth > kMaxDirectoryDepth)
    return fail(Errc::bad_usage, fmt::format("the package nests directories deeper than {} levels", kMaxDirectoryDepth),
                (source / prefix).string());
  const int listing = ::dup(dir);
  if (listing < 0) return fail(Errc::io, fmt::format("cannot read the package directory: {}", std::strerror(errno)),
                               (source / prefix).string());
  DIR* d = ::fdopendir(listing);
  if (d == nullptr) {
    ::close(listing);
    return fail(Errc::io, fmt::format("cannot read the package directory: {}", std::strerror(errno)),
                (source / prefix).string());
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  const int read_errno = errno;
  ::closedir(d);
  if (read_errno != 0)
    return fail(Errc::io, fmt::format("cannot read the package directory: {}", std::strerror(read_errno)),
                (source / prefix).string());
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::string rel = prefix + name;
    Fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (fd.fd < 0) {
      if (errno == ELOOP || errno == ENXIO || errno == ENOENT) continue;  // a link, a socket, gone: nothing to read
      return fail(Errc::io, fmt::format("cannot open the file: {}", std::strerror(errno)), (source / rel).string());
    }
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0)
      return fail(Errc::io, fmt::format("cannot read the file: {}", std::strerror(errno)), (source / rel).string());
    if (S_ISDIR(st.st_mode)) {
      if (rel == "node_modules") continue;
      if (auto r = read_tree(fd.fd, rel + "/", source, m, total, depth + 1); !r) return r;
      continue;
    }
    if (!S_ISREG(st.st_mode)) continue;  // FIFOs, devices: never read
    if (in_node_modules(rel) || !kept(rel)) {
      m.skipped.push_back(std::move(rel));
      continue;
    }
    auto bytes = read_all(fd.fd, kMaxModuleBytes, (source / rel).string());
    if (!bytes) return std::unexpected(bytes.error());
    if (auto added = add_file(m, std::move(rel), std::move(*bytes), total); !added) return added;
  }
  return {};
}

Result<Module> read_directory(int dir, const fs::path& source) {
  Module m;
  std::size_t total = 0;
  if (auto r = read_tree(dir, "", source, m, total, 0); !r) return std::unexpected(r.error());
  return m;
}

}  // namespace

bool is_stdlib_module(std::string_view name) {
  return std::binary_search(std::begin(kStdlibModules), std::end(kStdlibModules), name);
}

Result<void> check_wheel_path(std::string_view path) {
  if (!is_clean_path(path))
    return fail(Errc::bad_usage, "a path in the wheel leaves it or is not normalized (\"..\", \"/\" first, \"\\\")",
                std::string(path));
  for (const char c : path)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return fail(Errc::bad_usage, "a path in the wheel holds a control character", json::Value(std::string(path)).dump());
  if (path.size() > 1024) return fail(Errc::bad_usage, "a path in the wheel is longer than 1024 bytes", std::string(path));
  for (std::size_t start = 0; start <= path.size();) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    if (slash - start > 255)
      return fail(Errc::bad_usage, "a name in a wheel path is longer than 255 bytes", std::string(path));
    start = slash + 1;
  }
  return {};
}

Result<void> check_wheel_files(const std::map<std::string, std::string>& files) {
  std::set<std::string> modules;  // top-level module names
  for (const auto& [path, bytes] : files) {
    if (auto ok = check_wheel_path(path); !ok) return ok;
    for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1))
      if (files.contains(path.substr(0, slash)))
        return fail(Errc::bad_usage,
                    fmt::format("the wheel holds {} both as a file and as a directory of {}", path.substr(0, slash), path),
                    path);
    if (const std::string why = native_code(path, bytes); !why.empty())
      return fail(Errc::bad_usage,
                  fmt::format("the wheel holds native code ({}): only pure-Python wheels are stored, and compiled code "
                              "would run outside what the sandbox can vouch for", why),
                  path);
    const std::size_t slash = path.find('/');
    if (slash != std::string::npos) {
      if (path.ends_with(".py") || path.ends_with(".pyc")) modules.insert(path.substr(0, slash));
    } else if (path.ends_with(".py")) {
      modules.insert(path.substr(0, path.size() - 3));
    } else if (path.ends_with(".pyc")) {
      modules.insert(path.substr(0, path.size() - 4));
    }
  }
  for (const auto& name : modules)
    if (is_stdlib_module(name))
      return fail(Errc::bad_usage,
                  fmt::format("the wheel's top-level module {} has the name of a standard-library module: the "
                              "interpreter's own is imported first (a wheel comes after the standard library on "
                              "sys.path), so the wheel's would never run", name),
                  name);
  return {};
}

Result<void> check(const Module& m) {
  if (!m.kind.empty() && m.kind != kWheelKind)
    return fail(Errc::bad_usage, fmt::format("\"{}\" is not a kind of module (npm, or {})", m.kind, kWheelKind));
  if (!registry::is_module_specifier(m.name))
    return fail(Errc::bad_usage, fmt::format("\"{}\" is not an npm package name (lower case, URL-safe, at most 214 "
                                             "characters, an optional @scope/); give one with --name", m.name));
  if (m.version.empty() || m.version.size() > 256)
    return fail(Errc::bad_usage, "the module has no version (package.json \"version\", or --version)");
  if (m.files.empty() || m.files.size() > kMaxModuleFiles)
    return fail(Errc::bad_usage, fmt::format("a module holds 1 to {} .js/.cjs/.mjs/.json files; this one {}",
                                             kMaxModuleFiles, m.files.size()));
  std::size_t total = 0;
  for (const auto& [path, bytes] : m.files) {
    if (!json::canonicalize(json::Value(path))) return fail(Errc::bad_usage, "a module's file names are UTF-8 text");
    if (!is_clean_path(path))
      return fail(Errc::bad_usage, "a module's file paths are relative and normalized, without \"..\" or backslashes", path);
    if (!json::canonicalize(json::Value(bytes))) return fail(Errc::bad_usage, "a module's files are UTF-8 text", path);
    total += bytes.size();
  }
  if (total > kMaxModuleBytes)
    return fail(Errc::bad_usage, fmt::format("the module's files are {} bytes; the limit is {} (docs/modules.md)",
                                             total, kMaxModuleBytes));
  if (!m.files.contains(m.main)) return fail(Errc::bad_usage, "the module's main file is not among its files", m.main);
  if (m.kind == kWheelKind) return check_wheel_files(m.files);
  return {};
}

Result<json::Value> record(const Module& m) {
  if (auto ok = check(m); !ok) return std::unexpected(ok.error());
  json::Value files = json::Value::object();
  for (const auto& [path, bytes] : m.files) files[path] = json::content_id(bytes);
  json::Value r = {{"files", std::move(files)}, {"main", m.main}, {"name", m.name}, {"version", m.version}};
  if (!m.integrity.empty()) r["integrity"] = m.integrity;
  if (!m.kind.empty()) r["kind"] = m.kind;
  return r;
}

Result<std::string> module_id(const Module& m) {
  auto r = record(m);
  if (!r) return std::unexpected(r.error());
  return json::content_id_of(*r);
}

Result<Module> read_module(const fs::path& source, std::string_view name, std::string_view version) {
  // The source is opened once (a link to it followed: the user named it) and
  // read through that descriptor only; a directory's entries beneath it
  // (read_tree). Its type is checked before it is opened, so a FIFO or a
  // device is never opened, and again on the descriptor.
  struct stat named {};
  if (::stat(source.c_str(), &named) != 0)
    return fail(Errc::io, errno == ENOENT ? std::string("no such file or directory")
                                          : fmt::format("cannot read it: {}", std::strerror(errno)),
                source.string());
  if (!S_ISDIR(named.st_mode) && !S_ISREG(named.st_mode))
    return fail(Errc::bad_usage, "a module is read from a regular file or a directory", source.string());
  Fd fd(::open(source.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat st {};
  if (fd.fd < 0 || ::fstat(fd.fd, &st) != 0)
    return fail(Errc::io, fmt::format("cannot read it: {}", std::strerror(errno)), source.string());
  if (st.st_dev != named.st_dev || st.st_ino != named.st_ino || (st.st_mode & S_IFMT) != (named.st_mode & S_IFMT))
    return fail(Errc::io, "it changed while it was being opened", source.string());
  const std::string file = source.filename().string();
  Result<Module> m = Module{};
  const bool directory = S_ISDIR(st.st_mode);
  const bool bundle = !directory && (file.ends_with(".js") || file.ends_with(".cjs") || file.ends_with(".mjs"));
  if (directory) {
    m = read_directory(fd.fd, source);
  } else {
    auto bytes = read_all(fd.fd, bundle ? kMaxModuleBytes : kMaxArchiveBytes, source.string());
    if (!bytes) return std::unexpected(bytes.error());
    if (file.ends_with(".whl")) {
      auto wheel = read_wheel(*bytes, source);
      if (!wheel) return wheel;
      if (!name.empty() || !version.empty())
        return fail(Errc::bad_usage, "a wheel's name and version are its file name's: --name and --version do not apply",
                    source.string());
      if (auto ok = check(*wheel); !ok) return std::unexpected(ok.error());
      return wheel;
    }
    if (bundle) {
      m->files.emplace(file, std::move(*bytes));
      m->main = file;
      m->version = "0.0.0";
    } else {
      m = read_tarball(*bytes, source);
    }
  }
  if (!m) return m;
  if (!name.empty()) m->name = name;
  if (!version.empty()) m->version = version;
  if (!bundle) {
    if (auto applied = apply_package_json(*m, source.string()); !applied) return std::unexpected(applied.error());
  } else if (m->name.empty()) {
    return fail(Errc::bad_usage, "a single-file bundle needs --name (the specifier tool code will require)",
                source.string());
  }
  if (auto ok = check(*m); !ok) return std::unexpected(ok.error());
  return m;
}

}  // namespace taskyon::modules
