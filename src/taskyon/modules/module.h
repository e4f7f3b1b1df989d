// Modules: libraries tool code may load (issue 17). A module is an immutable,
// content-addressed set of text files (an npm package's JavaScript and JSON,
// or one bundle; or a pure-Python wheel's files) with the package's name,
// version and entry file. Its id is the content id (json.h) of its record,
// RFC 8785 canonical JSON of
//   {"files": {PATH: "sha256:…" of the file's bytes, …}, "integrity"?: NPM
//    INTEGRITY, "kind"?: "python-wheel", "main": PATH, "name": NAME,
//    "version": VERSION}
// ("kind" only for a wheel: an npm module's record is what it was before
// wheels existed, so its id too)
// so one changed byte of any file changes the module id, and with it the
// revision id of every manifest that names it (a manifest's `modules` maps
// a specifier to a module id; it is part of the hashed definition, R1).
// Tool code loads them from memory the host hands over (sandbox/protocol.h
// load frame), never from a path or the network.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"

namespace taskyon::modules {

inline constexpr std::size_t kMaxModuleBytes = 4u << 20;    // one module's files together, bytes
inline constexpr std::size_t kMaxRevisionModuleBytes = 4u << 20;  // every module of one revision, bytes
inline constexpr std::size_t kMaxModuleFiles = 2000;         // files of one module
inline constexpr std::size_t kMaxArchiveBytes = 256u << 20;  // a tarball or wheel read_module reads, bytes
// A revision's code and modules as the sandbox's load frame carries them
// (sandbox/protocol.h encode_load: JSON, so a control character takes 6
// bytes): at most the sandbox's default max_frame_bytes (sandbox/pool.h).
inline constexpr std::size_t kMaxLoadFrameBytes = 8u << 20;

// Module::kind of a pure-Python wheel; an npm module's kind is empty.
inline constexpr std::string_view kWheelKind = "python-wheel";

struct Module {
  std::string kind;       // empty: an npm module (JavaScript); kWheelKind: a pure-Python wheel
  std::string name;       // the npm package name, e.g. "papaparse" or "@scope/pkg"; a wheel's
                          // distribution name, PEP 503-normalized (lower case, "-" for runs of -_.)
  std::string version;    // its version, e.g. "5.7.1"; "0.0.0" for a bundle without one
  std::string main;       // the entry file, a key of `files` (a wheel: its NAME-VERSION.dist-info/METADATA)
  std::string integrity;  // "sha512-…" (W3C SRI, as npm's) of the tarball or wheel it came from; empty otherwise
  std::map<std::string, std::string> files;  // relative path ("lib/x.js") -> bytes (UTF-8 text)
  std::vector<std::string> skipped = {};     // package files left out (not .js/.cjs/.json), for the report
};

// The record above, and its content id. Errc::invalid_manifest-free: these
// only fail for a Module that check() refuses.
Result<json::Value> record(const Module& module);
Result<std::string> module_id(const Module& module);

// A module's rules: a valid npm name (registry::is_module_specifier), a version, 1..kMaxModuleFiles files of
// relative, normalized paths (no "..", no leading "/"), valid UTF-8, at most
// kMaxModuleBytes in all, `main` one of them; a wheel (kind kWheelKind) also
// check_wheel_files'. Errc::bad_usage naming the rule (and the file).
Result<void> check(const Module& module);

// What a pure-Python wheel's files must be, beyond check()'s rules, so that
// executePython can unpack them and what they run is Python
// (docs/modules.md, "Python wheels"):
//   * every path passes check_wheel_path;
//   * no file is also a directory of another's path ("a" next to "a/b.py");
//   * no file is native code: a name a loader takes for a shared object
//     (".so", ".so.N…", ".pyd", ".dylib", ".dll", any case), or bytes that
//     begin as an executable or object file does (ELF, Mach-O, PE, an ar
//     archive, WebAssembly) — UTF-8 text can be an ELF shared object;
//   * no top-level module — a root file "X.py"/"X.pyc", or a root directory
//     "X" with a .py/.pyc file below it — is named as a standard-library
//     module of CPython 3.10–3.14 (is_stdlib_module): the interpreter's own
//     comes first on sys.path, so the wheel's would never run, and before
//     that rule it shadowed the standard library.
// Errc::bad_usage naming the file. read_module applies it to a wheel before
// it is stored; store::code_modules (check()) at install and at every call.
Result<void> check_wheel_files(const std::map<std::string, std::string>& files);

// A wheel file's path as executePython writes it under its scratch
// directory: check()'s relative, normalized path (no "", "." or ".."
// segment, no leading "/", no "\\" or NUL), no other control character,
// segments of at most 255 bytes and at most 1024 bytes in all.
// Errc::bad_usage.
Result<void> check_wheel_path(std::string_view path);

// True when `name` is a top-level module of CPython 3.10–3.14's standard
// library: the union of their sys.stdlib_module_names.
bool is_stdlib_module(std::string_view name);

// Reads a module from `source`:
//   a pure-Python wheel (NAME-VERSION(-BUILD)?-PY-none-any.whl, PEP 427; a
//   zip read with libarchive): ABI tag "none", platform "any", every Python
//   tag "py…", its WHEEL file saying Root-Is-Purelib: true; every regular
//   file kept, each UTF-8 text (the store holds text), paths relative and
//   normalized; NAME-VERSION.data/ is refused for purelib/platlib (code that
//   would be lost) and left out otherwise (scripts, headers, data);
//   an npm package tarball (`npm pack` output, .tgz/.tar.gz; its files under
//   "package/"), read with libarchive; `integrity` is its sha512;
//   a package directory (with package.json, e.g. node_modules/papaparse);
//   a single .js/.cjs/.mjs file (a bundle; .mjs an ES module): `name` must be
//   given, version "0.0.0".
// name/version/main come from package.json ("main"; without one, the root
// of "exports" under import/node/require/default; else "index.js"); `name`
// and `version`, when not empty, override them. Only .js, .cjs, .mjs and
// .json files are kept (others are listed in `skipped`); node_modules/ inside a
// package is skipped (a module's dependencies are modules of their own).
// The source is opened once (a link to it followed) and read through that
// descriptor; a directory's files are opened beneath it without following
// any link (a link is left out, whenever it appeared), and a FIFO or device
// is never read. A tarball or wheel is at most kMaxArchiveBytes.
// Errc::io when the source cannot be read, Errc::bad_usage for a package
// check() refuses.
Result<Module> read_module(const std::filesystem::path& source, std::string_view name = {},
                           std::string_view version = {});

}  // namespace taskyon::modules
