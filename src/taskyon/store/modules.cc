#include "taskyon/store/modules.h"

#include <fmt/format.h>

#include "taskyon/store/clock.h"

namespace taskyon::store {
namespace {

struct StoredRecord {
  std::string id;
  json::Value record;
  std::string created_at;
};

Result<StoredRecord> stored_record(Store& store, std::string_view ref) {
  auto id = store.expand_prefix("modules", ref);
  if (!id) return std::unexpected(id.error());
  auto stmt = store.database().prepare("SELECT record, created_at FROM modules WHERE id = ?1");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, *id);
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return fail(Errc::not_found, "no such module", *id);
  const std::string text = stmt->text(0), created_at = stmt->text(1);
  if (json::content_id(text) != *id)
    return fail(Errc::integrity, "the stored module record does not hash to its id (tampered)", *id);
  auto record = json::parse(text);
  if (!record || !record->is_object() || !(*record)["files"].is_object())
    return fail(Errc::integrity, "the stored module record is not a module record", *id);
  return StoredRecord{*id, std::move(*record), created_at};
}

ModuleSummary summary_of(const StoredRecord& r, std::size_t bytes) {
  return {r.id,
          r.record.value("name", ""),
          r.record.value("version", ""),
          r.record.value("main", ""),
          r.record.value("integrity", ""),
          r.record["files"].size(),
          bytes,
          r.created_at,
          {},
          r.record.value("kind", "")};
}

}  // namespace

Result<AddedModule> add_module(Store& store, const modules::Module& module) {
  auto record = modules::record(module);
  if (!record) return std::unexpected(record.error());
  auto canonical = json::canonicalize(*record);
  if (!canonical) return std::unexpected(canonical.error());
  AddedModule added{json::content_id(*canonical), false};
  auto tx = sql::Transaction::begin(store.database());
  if (!tx) return std::unexpected(tx.error());
  auto file = store.database().prepare("INSERT INTO module_files(id, content) VALUES (?1, ?2) ON CONFLICT(id) DO NOTHING");
  if (!file) return std::unexpected(file.error());
  for (const auto& [path, bytes] : module.files) {
    file->reset();
    file->bind(1, (*record)["files"][path].get<std::string>()).bind(2, bytes);
    if (auto r = file->run(); !r) return std::unexpected(r.error());
  }
  auto insert = store.database().prepare(
      "INSERT INTO modules(id, name, version, record, created_at) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(id) DO NOTHING");
  if (!insert) return std::unexpected(insert.error());
  insert->bind(1, added.id).bind(2, module.name).bind(3, module.version).bind(4, *canonical).bind(5, now_iso8601());
  if (auto r = insert->run(); !r) return std::unexpected(r.error());
  added.created = store.database().changes() == 1;
  if (auto r = tx->commit(); !r) return std::unexpected(r.error());
  return added;
}

Result<StoredModule> stored_module(Store& store, std::string_view ref) {
  auto r = stored_record(store, ref);
  if (!r) return std::unexpected(r.error());
  modules::Module m;
  m.name = r->record.value("name", "");
  m.version = r->record.value("version", "");
  m.main = r->record.value("main", "");
  m.integrity = r->record.value("integrity", "");
  m.kind = r->record.value("kind", "");
  auto stmt = store.database().prepare("SELECT content FROM module_files WHERE id = ?1");
  if (!stmt) return std::unexpected(stmt.error());
  std::size_t bytes_total = 0;
  for (const auto& [path, id] : r->record["files"].items()) {
    if (!id.is_string()) return fail(Errc::integrity, "the stored module record is not a module record", r->id);
    stmt->reset();
    stmt->bind(1, id.get<std::string>());
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return fail(Errc::integrity, fmt::format("the module's file {} is missing from the store", path), r->id);
    std::string bytes = stmt->text(0);
    if (json::content_id(bytes) != id.get<std::string>())
      return fail(Errc::integrity, fmt::format("the module's file {} does not hash to its id (tampered)", path), r->id);
    bytes_total += bytes.size();
    m.files.emplace(path, std::move(bytes));
  }
  stmt->reset();
  return StoredModule{summary_of(*r, bytes_total), std::move(m)};
}

Result<modules::Module> load_module(Store& store, std::string_view ref) {
  auto s = stored_module(store, ref);
  if (!s) return std::unexpected(s.error());
  return std::move(s->module);
}

Result<std::vector<ModuleSummary>> list_modules(Store& store) {
  auto stmt = store.database().prepare("SELECT id FROM modules ORDER BY name, version, id");
  if (!stmt) return std::unexpected(stmt.error());
  std::vector<std::string> ids;
  for (;;) {
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    ids.push_back(stmt->text(0));
  }
  std::vector<ModuleSummary> out;
  for (const auto& id : ids) {
    auto s = stored_module(store, id);  // re-hashed: a summary never vouches for a tampered module
    if (s) {
      out.push_back(std::move(s->summary));
    } else if (s.error().code == Errc::integrity) {
      ModuleSummary broken;
      broken.id = id;
      broken.problem = s.error().message;
      out.push_back(std::move(broken));
    } else {
      return std::unexpected(s.error());
    }
  }
  return out;
}

std::string_view module_kind(const registry::Manifest& manifest) {
  return manifest.execution == registry::Execution::trusted_native && manifest.native == registry::kPythonNative
             ? modules::kWheelKind
             : std::string_view();
}

Result<json::Value> code_modules(Store& store, const json::Value& named, std::string_view code, std::string_view kind) {
  if (!named.is_object()) return json::Value();
  std::vector<std::string> missing;
  json::Value out = json::Value::object();
  std::size_t bytes = 0;
  for (const auto& [specifier, id] : named.items()) {
    const std::string ref = id.is_string() ? id.get<std::string>() : id.dump();
    auto m = id.is_string() && json::is_content_id(ref) ? load_module(store, ref)
                                                         : fail(Errc::not_found, "not a module id", ref);
    if (!m && m.error().code == Errc::not_found) {
      missing.push_back(fmt::format("{} ({})", specifier, ref));
      continue;
    }
    if (!m) return std::unexpected(m.error());
    if (m->kind != kind)
      return fail(Errc::bad_usage,
                  m->kind.empty() ? fmt::format("the module {} ({}) is an npm package; a Python tool's modules are "
                                                "pure-Python wheels", specifier, ref)
                                  : fmt::format("the module {} ({}) is a Python wheel; a JavaScript tool's modules are "
                                                "npm packages", specifier, ref),
                  "/modules/" + specifier);
    // A wheel stored before a rule of check_wheel_files existed (native code, a
    // standard-library name, a path it cannot be unpacked to) is refused here,
    // at install and at every call, as `module add` refuses it now.
    if (!kind.empty())
      if (auto ok = modules::check_wheel_files(m->files); !ok)
        return fail(Errc::bad_usage, fmt::format("the wheel {} ({}) cannot be used: {}", specifier, ref, ok.error().message),
                    ok.error().where.empty() ? "/modules/" + specifier : ok.error().where);
    json::Value files = json::Value::object();
    for (auto& [path, text] : m->files) {
      bytes += text.size();
      files[path] = std::move(text);
    }
    out[specifier] = {{"main", m->main}, {"files", std::move(files)}};
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return fail(Errc::not_found,
                fmt::format("the manifest names modules this store does not hold: {}; add each with `tycli module add`", list),
                "/modules");
  }
  if (bytes > modules::kMaxRevisionModuleBytes)
    return fail(Errc::bad_usage,
                fmt::format("the manifest's modules are {} bytes together; the limit is {} (docs/modules.md)", bytes,
                            modules::kMaxRevisionModuleBytes),
                "/modules");
  const std::size_t frame =
      json::Value{{"code", std::string(code)}, {"modules", out}, {"type", "load"}}
          .dump(-1, ' ', false, json::Value::error_handler_t::replace)
          .size() + 1;
  if (frame > modules::kMaxLoadFrameBytes)
    return fail(Errc::bad_usage,
                fmt::format("the code and its modules are {} bytes as JSON in the sandbox's load frame; the limit is {} "
                            "(docs/modules.md: control characters and backslashes take more than one byte there)",
                            frame, modules::kMaxLoadFrameBytes),
                "/modules");
  return out;
}

}  // namespace taskyon::store
