// The module store (issue 17, modules/module.h): modules are added once and
// never change (R2: the database refuses UPDATE and DELETE); each file is
// stored under the content id of its bytes, shared by every module holding
// it, and every read re-hashes the record and the files (Errc::integrity for
// a tampered one, naming it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"
#include "taskyon/modules/module.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/store/store.h"

namespace taskyon::store {

struct ModuleSummary {
  std::string id;        // "sha256:…" of the module's record
  std::string name;
  std::string version;
  std::string main;
  std::string integrity;  // "sha512-…" of the tarball or wheel it came from
  std::size_t files = 0;
  std::size_t bytes = 0;  // its files together
  std::string created_at;
  std::string problem = {};  // empty; else why the stored module cannot be used (tampered), for list_modules
  std::string kind = {};     // empty: npm; modules::kWheelKind: a pure-Python wheel
};

// Stores `module` (idempotent by content); its id. `created` says whether it was new.
struct AddedModule {
  std::string id;
  bool created = false;
};
Result<AddedModule> add_module(Store& store, const modules::Module& module);

// The module with this id (or unique prefix of >= 12 hex digits), its record
// and every file re-hashed once, with its summary. Errc::not_found,
// Errc::ambiguous, Errc::integrity (naming the tampered file).
struct StoredModule {
  ModuleSummary summary;
  modules::Module module;
};
Result<StoredModule> stored_module(Store& store, std::string_view ref);
Result<modules::Module> load_module(Store& store, std::string_view ref);  // stored_module's module
// Every stored module, each re-hashed: a tampered one is listed with its
// `problem` (the others are still listed).
Result<std::vector<ModuleSummary>> list_modules(Store& store);

// The modules a manifest's `modules` ({SPECIFIER: MODULE ID}; null: none)
// names, read and re-hashed: Errc::not_found naming every one this store does
// not hold, Errc::bad_usage past modules::kMaxRevisionModuleBytes together or
// when they and `code` would not fit in modules::kMaxLoadFrameBytes as JSON,
// and for a module of another kind than `kind` (empty: npm, for JavaScript;
// modules::kWheelKind for a Python tool), naming it.
// What the load frame hands the sandbox (sandbox::ToolCode::modules), and
// what a Python tool unpacks (native::Context::modules):
// {SPECIFIER: {"main": PATH, "files": {PATH: TEXT}}}; null for none.
Result<json::Value> code_modules(Store& store, const json::Value& modules, std::string_view code,
                                 std::string_view kind = {});

// The kind of module `manifest`'s `modules` name: modules::kWheelKind for
// registry::kPythonNative, empty (npm) for sandboxed code.
std::string_view module_kind(const registry::Manifest& manifest);

}  // namespace taskyon::store
