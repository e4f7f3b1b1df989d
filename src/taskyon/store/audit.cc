#include "taskyon/store/audit.h"

#include <charconv>
#include <ctime>

#include <fmt/format.h>

#include "taskyon/json/json.h"
#include "taskyon/store/clock.h"

namespace taskyon::store {
namespace {

// Reads exactly `n` ASCII digits at `pos`.
std::optional<int> digits(std::string_view s, std::size_t pos, std::size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

std::unexpected<Error> bad_since(std::string_view text) {
  return fail(Errc::bad_usage,
              fmt::format("--since \"{}\" is neither an ISO 8601 UTC time (2026-11-29, 2026-11-29T18:18:36Z, "
                          "2026-11-29T18:18:36.123Z) nor a duration (30s, 10m, 2h, 1d)",
                          text),
              std::string(text));
}

Result<std::string> parse_duration(std::string_view text, std::chrono::system_clock::time_point now) {
  std::int64_t n = 0;
  const auto* end = text.data() + text.size() - 1;
  auto [p, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || p != end || n <= 0 || n > 100'000'000) return bad_since(text);
  std::chrono::seconds unit{1};
  switch (text.back()) {
    case 's': unit = std::chrono::seconds(1); break;
    case 'm': unit = std::chrono::minutes(1); break;
    case 'h': unit = std::chrono::hours(1); break;
    case 'd': unit = std::chrono::hours(24); break;
    default: return bad_since(text);
  }
  return iso8601(now - n * unit);
}

Result<std::string> parse_time(std::string_view text) {
  using namespace std::chrono;
  auto y = digits(text, 0, 4), mo = digits(text, 5, 2), d = digits(text, 8, 2);
  if (!y || !mo || !d || text[4] != '-' || text[7] != '-') return bad_since(text);
  if (!year_month_day(year(*y), month(static_cast<unsigned>(*mo)), day(static_cast<unsigned>(*d))).ok())
    return bad_since(text);
  int hh = 0, mm = 0, ss = 0, ms = 0;
  if (text.size() > 10) {
    // THH:MM[:SS[.fff]]Z
    auto h = digits(text, 11, 2), m = digits(text, 14, 2);
    if (text[10] != 'T' || !h || !m || text.size() < 17 || text[13] != ':' || text.back() != 'Z') return bad_since(text);
    hh = *h;
    mm = *m;
    std::size_t pos = 16;
    if (text[pos] == ':') {
      auto s = digits(text, pos + 1, 2);
      if (!s) return bad_since(text);
      ss = *s;
      pos += 3;
      if (text[pos] == '.') {
        auto f = digits(text, pos + 1, 3);
        if (!f) return bad_since(text);
        ms = *f;
        pos += 4;
      }
    }
    if (pos != text.size() - 1 || hh > 23 || mm > 59 || ss > 59) return bad_since(text);
  }
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", *y, *mo, *d, hh, mm, ss, ms);
}

Result<capability::Verdict> parse_verdict(const std::string& text) {
  if (text == "allow") return capability::Verdict::allow;
  if (text == "deny") return capability::Verdict::deny;
  return fail(Errc::integrity, fmt::format("stored verdict \"{}\" is neither allow nor deny", text));
}

}  // namespace

std::string iso8601(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto since_epoch = duration_cast<milliseconds>(t.time_since_epoch()).count();
  const auto ms = ((since_epoch % 1000) + 1000) % 1000;
  const std::time_t secs = static_cast<std::time_t>((since_epoch - ms) / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

Result<std::string> parse_since(std::string_view text, std::chrono::system_clock::time_point now) {
  if (text.size() < 2) return bad_since(text);
  if (text.size() >= 10 && text[4] == '-') return parse_time(text);
  return parse_duration(text, now);
}

std::string bounded_audit_text(std::string_view text) {
  if (text.size() <= kMaxAuditText) return std::string(text);
  std::size_t cut = kAuditTextPrefix;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8 characters
  return fmt::format("{} … ({} bytes, {})", text.substr(0, cut), text.size(), json::content_id(text));
}

Result<AuditEntry> append_audit(Store& store, AuditEntry entry) {
  if (entry.capability.empty()) return fail(Errc::bad_usage, "an audit entry names its capability");
  if (entry.access != "" && entry.access != "read" && entry.access != "write")
    return fail(Errc::bad_usage,
                fmt::format("audit access class \"{}\" is not \"read\", \"write\" or empty", entry.access));
  entry.at = now_iso8601();
  entry.target = bounded_audit_text(entry.target);
  entry.reason = bounded_audit_text(entry.reason);
  auto stmt = store.database().prepare(
      "INSERT INTO audit_log(at, revision, capability, target, access, verdict, reason, task) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING seq");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, entry.at).bind(2, entry.revision).bind(3, entry.capability).bind(4, entry.target);
  stmt->bind(5, entry.access).bind(6, capability::verdict_name(entry.verdict)).bind(7, entry.reason);
  stmt->bind_nullable(8, entry.task);
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  entry.seq = stmt->integer(0);
  if (auto done = stmt->run(); !done) return std::unexpected(done.error());
  return entry;
}

Result<std::vector<AuditEntry>> query_audit(Store& store, const AuditQuery& query) {
  auto stmt = store.database().prepare(
      "SELECT * FROM (SELECT seq, at, revision, capability, target, access, verdict, reason, task FROM audit_log "
      "WHERE (?1 IS NULL OR at >= ?1) AND (?2 IS NULL OR revision = ?2) ORDER BY seq DESC LIMIT ?3) "
      "ORDER BY seq");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind_nullable(1, query.since).bind_nullable(2, query.revision);
  stmt->bind(3, query.limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(query.limit));
  std::vector<AuditEntry> out;
  for (;;) {
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto verdict = parse_verdict(stmt->text(6));
    if (!verdict) return std::unexpected(verdict.error());
    out.push_back({stmt->integer(0), stmt->text(1), stmt->text(2), stmt->text(3), stmt->text(4), stmt->text(5),
                   *verdict, stmt->text(7), stmt->optional_text(8)});
  }
  return out;
}

namespace detail {

// One prune of `log` (audit_log, sandbox_destructions): a permit for rows
// older than `before`, the DELETE the schema's trigger then admits, the permit
// removed, all in one transaction. Returns how many rows went.
Result<std::int64_t> prune_log(Store& store, std::string_view log, std::string_view before) {
  auto& db = store.database();
  auto tx = sql::Transaction::begin(db);
  if (!tx) return std::unexpected(tx.error());
  {
    auto permit = db.prepare("INSERT INTO prune_permits(log, before) VALUES (?1, ?2)");
    if (!permit) return std::unexpected(permit.error());
    permit->bind(1, log).bind(2, before);
    if (auto r = permit->run(); !r) return std::unexpected(r.error());
  }
  std::int64_t removed = 0;
  {
    auto del = db.prepare(fmt::format("DELETE FROM {} WHERE at < ?1", log));
    if (!del) return std::unexpected(del.error());
    del->bind(1, before);
    if (auto r = del->run(); !r) return std::unexpected(r.error());
    removed = db.changes();
  }
  if (auto r = db.exec(fmt::format("DELETE FROM prune_permits WHERE log = '{}'", log)); !r) return std::unexpected(r.error());
  if (auto r = tx->commit(); !r) return std::unexpected(r.error());
  return removed;
}

}  // namespace detail

Result<std::int64_t> prune_audit(Store& store, std::string_view before) {
  auto removed = detail::prune_log(store, "audit_log", before);
  if (!removed) return removed;
  AuditEntry entry;
  entry.revision = "host";
  entry.capability = "audit.prune";
  entry.target = fmt::format("before {}", before);
  entry.verdict = capability::Verdict::allow;
  entry.reason = fmt::format("{} audit row(s) older than {} removed by tycli audit prune", *removed, before);
  if (auto kept = append_audit(store, std::move(entry)); !kept) return std::unexpected(kept.error());
  return removed;
}

}  // namespace taskyon::store
