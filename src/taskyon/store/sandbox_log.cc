#include "taskyon/store/sandbox_log.h"

#include "taskyon/store/audit.h"
#include "taskyon/store/clock.h"

namespace taskyon::store {

Result<Destruction> record_destruction(Store& store, std::string_view revision, std::string_view tool,
                                       std::string_view reason, std::int64_t pid) {
  Destruction d{0, now_iso8601(), std::string(revision), std::string(tool), std::string(reason), pid};
  auto stmt = store.database().prepare(
      "INSERT INTO sandbox_destructions(at, revision, tool, reason, pid) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING seq");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, d.at).bind(2, d.revision).bind(3, d.tool).bind(4, d.reason).bind(5, d.pid);
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  d.seq = stmt->integer(0);
  if (auto done = stmt->run(); !done) return std::unexpected(done.error());
  return d;
}

Result<std::vector<Destruction>> destructions(Store& store, std::size_t limit,
                                              const std::optional<std::string>& revision) {
  auto stmt = store.database().prepare(
      "SELECT * FROM (SELECT seq, at, revision, tool, reason, pid FROM sandbox_destructions "
      "WHERE ?1 IS NULL OR revision = ?1 ORDER BY seq DESC LIMIT ?2) ORDER BY seq");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind_nullable(1, revision).bind(2, limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
  std::vector<Destruction> out;
  for (;;) {
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back({stmt->integer(0), stmt->text(1), stmt->text(2), stmt->text(3), stmt->text(4), stmt->integer(5)});
  }
  return out;
}

Result<std::int64_t> prune_destructions(Store& store, std::string_view before) {
  return detail::prune_log(store, "sandbox_destructions", before);
}

}  // namespace taskyon::store
