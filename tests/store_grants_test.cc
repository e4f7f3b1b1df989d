// Grants, storage, secrets, audit, settings revisions, popup permissions and
// sandbox destruction records on a real SQLite file (DESIGN §6; M8, M15,
// M16, M17, S7, T1).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "taskyon/registry/manifest.h"
#include "taskyon/store/audit.h"
#include "taskyon/store/grants.h"
#include "taskyon/store/kv.h"
#include "taskyon/store/origin.h"
#include "taskyon/store/popups.h"
#include "taskyon/store/sandbox_log.h"
#include "taskyon/store/secrets.h"
#include "taskyon/store/settings.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/compiler.h"
#include "test_util.h"

namespace taskyon::store {
namespace {

using json::Value;

class StoreGrants : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::open(db_path());
    ASSERT_TRUE(s) << s.error().describe();
    st.emplace(std::move(*s));
  }
  std::string db_path() const { return (dir / "taskyon.db").string(); }
  std::string install(const std::string& name, const std::string& code, Activate a = Activate::always) {
    auto r = st->install(*registry::parse_manifest(testing::js_tool(name, code)), a);
    EXPECT_TRUE(r) << r.error().describe();
    return r->id;
  }
  // A revision with host authority (R6): a reviewed trusted-native tool.
  std::string install_trusted(const std::string& description) {
    auto m = registry::parse_manifest({{"name", "host"},
                                       {"description", description},
                                       {"parameters", {{"type", "object"}}},
                                       {"execution", "trusted-native"},
                                       {"native", "taskyon.sha256"}});
    EXPECT_TRUE(m);
    auto r = st->install(*m, Activate::always, Trust{"alice", "reviewed"});
    EXPECT_TRUE(r) << r.error().describe();
    return r->id;
  }
  std::int64_t count(const std::string& sql) {
    auto stmt = st->database().prepare(sql);
    EXPECT_TRUE(stmt);
    EXPECT_TRUE(*stmt->step());
    return stmt->integer(0);
  }
  Result<void> exec(const std::string& sql) { return st->database().exec(sql); }

  testing::TempDir dir;
  std::optional<Store> st;
};

// ---- origins ---------------------------------------------------------------

TEST_F(StoreGrants, OriginsAreNormalizedLikeTheUrlStandardSerializesThem) {
  EXPECT_EQ(*canonical_origin("HTTPS://Example.COM:443/"), "https://example.com");
  EXPECT_EQ(*canonical_origin("https://example.com:8443"), "https://example.com:8443");
  EXPECT_EQ(*canonical_origin("https://[0:0::1]:8443/"), "https://[::1]:8443");
  EXPECT_EQ(*canonical_origin("https://münchen.de"), "https://xn--mnchen-3ya.de");
  for (const char* bad : {"http://example.com", "https://example.com/path", "https://user:pw@example.com",
                          "https://user@example.com/", "https://example.com/?q", "https://example.com/#f",
                          "wss://example.com", "example.com", "https:///", "custom-html", "https://*.example.com",
                          "https://api.*"}) {
    auto r = canonical_origin(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, Errc::bad_usage) << bad;
  }
  EXPECT_EQ(canonical_origin("https://user:hunter2@example.com").error().message.find("hunter2"), std::string::npos);
  EXPECT_TRUE(require_canonical_origin("https://example.com"));
  auto not_canonical = require_canonical_origin("https://Example.com/");
  ASSERT_FALSE(not_canonical);
  EXPECT_NE(not_canonical.error().message.find("\"https://example.com\""), std::string::npos);
}

// ---- fetch grants (M8, M17) --------------------------------------------------

TEST_F(StoreGrants, ReadGrantDoesNotAnswerForWriteAndViceVersa) {  // M8
  const auto a = install("api", "x => x");
  ASSERT_TRUE(grant_fetch(*st, a, "https://read.example", Access::read, {}, "alice"));
  ASSERT_TRUE(grant_fetch(*st, a, "https://write.example", Access::write, {}, "alice"));
  EXPECT_TRUE(fetch_grant_for(*st, a, "https://read.example", Access::read)->has_value());
  EXPECT_FALSE(fetch_grant_for(*st, a, "https://read.example", Access::write)->has_value());
  EXPECT_TRUE(fetch_grant_for(*st, a, "https://write.example", Access::write)->has_value());
  EXPECT_FALSE(fetch_grant_for(*st, a, "https://write.example", Access::read)->has_value());
  EXPECT_FALSE(fetch_grant_for(*st, a, "https://read.example", Access::reject)->has_value());
}

TEST_F(StoreGrants, OtherOriginsPortsAndSchemesDoNotMatch) {  // M8
  const auto a = install("api", "x => x");
  ASSERT_TRUE(grant_fetch(*st, a, "https://api.example.com", Access::read, {}, "alice"));
  EXPECT_TRUE(fetch_grant_for(*st, a, "https://api.example.com", Access::read)->has_value());
  for (const char* other : {"https://api.example.com:8443", "https://example.com", "https://sub.api.example.com",
                            "http://api.example.com", "https://api.example.com.", "https://api.example.co",
                            "https://API.example.com", "https://api.example.com/"})
    EXPECT_FALSE(fetch_grant_for(*st, a, other, Access::read)->has_value()) << other;
}

TEST_F(StoreGrants, ANewRevisionOfTheSameNameInheritsNothing) {  // M17
  const auto a = install("api", "x => x");
  ASSERT_TRUE(grant_fetch(*st, a, "https://api.example.com", Access::read, {}, "alice"));
  ASSERT_TRUE(grant_storage(*st, a, "alice"));
  ASSERT_TRUE(set_secret(*st, a, "https://api.example.com", "TOKEN", "s3cret", "alice"));
  const auto b = install("api", "x => [x]");  // activated: "api" now means b
  ASSERT_NE(a, b);
  EXPECT_EQ(st->resolve("api")->id, b);
  EXPECT_FALSE(fetch_grant_for(*st, b, "https://api.example.com", Access::read)->has_value());
  EXPECT_FALSE(*has_storage_grant(*st, b));
  EXPECT_FALSE(secret_for(*st, b, "https://api.example.com", "TOKEN")->has_value());
  EXPECT_TRUE(fetch_grants(*st, b)->empty());
  EXPECT_TRUE(secret_names(*st, b)->empty());
  // A keeps what it was given.
  EXPECT_TRUE(fetch_grant_for(*st, a, "https://api.example.com", Access::read)->has_value());
  EXPECT_EQ(**secret_for(*st, a, "https://api.example.com", "TOKEN"), "s3cret");
  EXPECT_TRUE(*has_storage_grant(*st, a));
}

TEST_F(StoreGrants, GrantNeedsAStoredRevisionAndACanonicalOrigin) {
  const auto a = install("api", "x => x");
  auto unknown = grant_fetch(*st, "sha256:" + std::string(64, '0'), "https://x.example", Access::read, {}, "alice");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Errc::not_found);
  EXPECT_EQ(grant_fetch(*st, "api", "https://x.example", Access::read, {}, "alice").error().code, Errc::bad_usage);
  for (const char* bad : {"https://X.example", "https://x.example/", "http://x.example", "https://x.example:443"})
    EXPECT_EQ(grant_fetch(*st, a, bad, Access::read, {}, "alice").error().code, Errc::bad_usage) << bad;
  EXPECT_EQ(grant_fetch(*st, a, "https://x.example", Access::reject, {}, "alice").error().code, Errc::bad_usage);
  EXPECT_EQ(grant_storage(*st, "sha256:" + std::string(64, '1'), "alice").error().code, Errc::not_found);
  EXPECT_EQ(count("SELECT count(*) FROM fetch_grants"), 0);
  // The database refuses an origin with a path by itself.
  EXPECT_FALSE(exec("INSERT INTO fetch_grants VALUES ('" + a + "', 'https://x.example/p', 'read', '{}', 'a', 'now')"));
  EXPECT_FALSE(exec("INSERT INTO fetch_grants VALUES ('" + a + "', 'http://x.example', 'read', '{}', 'a', 'now')"));
}

TEST_F(StoreGrants, GrantingAgainReplacesLimitsAndRevokeIsIdempotent) {
  const auto a = install("api", "x => x");
  FetchLimits limits;
  limits.total_timeout_ms = 5000;
  auto g = grant_fetch(*st, a, "https://x.example", Access::write, limits, "alice");
  ASSERT_TRUE(g) << g.error().describe();
  EXPECT_EQ(g->tool, "api");
  EXPECT_EQ(**fetch_grant_for(*st, a, "https://x.example", Access::write), limits);
  FetchLimits other;
  other.max_response_bytes = 1024;
  ASSERT_TRUE(grant_fetch(*st, a, "https://x.example", Access::write, other, "bob"));
  EXPECT_EQ(**fetch_grant_for(*st, a, "https://x.example", Access::write), other);
  auto all = fetch_grants(*st);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].granted_by, "bob");
  EXPECT_TRUE(*revoke_fetch(*st, a, "https://x.example", Access::write));
  EXPECT_FALSE(*revoke_fetch(*st, a, "https://x.example", Access::write));
  EXPECT_FALSE(fetch_grant_for(*st, a, "https://x.example", Access::write)->has_value());
  ASSERT_TRUE(grant_storage(*st, a, "alice"));
  EXPECT_TRUE(*revoke_storage(*st, a));
  EXPECT_FALSE(*revoke_storage(*st, a));
}

TEST_F(StoreGrants, FetchLimitsAreValidatedAndUnknownFieldsRefused) {
  auto ok = parse_fetch_limits(
      {{"connect_timeout_ms", 1000}, {"total_timeout_ms", 2000}, {"max_response_bytes", 3}, {"max_request_bytes", 4}});
  ASSERT_TRUE(ok) << ok.error().describe();
  EXPECT_EQ(ok->connect_timeout_ms, 1000);
  EXPECT_EQ(fetch_limits_json(*ok)["max_request_bytes"], 4);
  EXPECT_EQ(fetch_limits_json({}), Value::object());
  for (const Value& bad : {Value{{"timeout_ms", 1}}, Value{{"total_timeout_ms", 0}}, Value{{"total_timeout_ms", -5}},
                           Value{{"total_timeout_ms", 1.5}}, Value{{"total_timeout_ms", "10"}},
                           Value{{"connect_timeout_ms", 600001}}, Value{{"max_response_bytes", 1LL << 31}},
                           Value::array()}) {
    auto r = parse_fetch_limits(bad);
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_EQ(r.error().code, Errc::bad_usage);
  }
  EXPECT_EQ(parse_fetch_limits({{"timeout_ms", 1}}).error().where, "/timeout_ms");
}

// ---- storage (S7) ----------------------------------------------------------------

TEST_F(StoreGrants, StorageWithoutAGrantIsDeniedAndAudited) {
  const auto a = install("kv", "x => x");
  const Caller caller{a, std::nullopt};
  auto r = storage_set(*st, caller, "k", 1);
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_FALSE(*r);
  EXPECT_EQ(r->error().code, "denied");
  EXPECT_EQ(storage_get(*st, caller, "k")->error().code, "denied");
  EXPECT_EQ(storage_delete(*st, caller, "k")->error().code, "denied");
  EXPECT_EQ(storage_list(*st, caller, "")->error().code, "denied");
  EXPECT_EQ(count("SELECT count(*) FROM storage_items"), 0);
  auto log = query_audit(*st, {});
  ASSERT_EQ(log->size(), 4u);
  EXPECT_EQ((*log)[0].capability, "storage.set");
  EXPECT_EQ((*log)[0].access, "write");
  EXPECT_EQ((*log)[0].verdict, capability::Verdict::deny);
  EXPECT_EQ((*log)[1].capability, "storage.get");
  EXPECT_EQ((*log)[1].access, "read");
  EXPECT_EQ((*log)[3].capability, "storage.list");
  // A revision that is not in the registry (a tree-defined tool) can hold no grant.
  EXPECT_EQ(storage_get(*st, {"sha256:" + std::string(64, 'a'), std::nullopt}, "k")->error().code, "denied");
}

TEST_F(StoreGrants, StorageRoundTripWithAGrant) {
  const auto a = install("kv", "x => x");
  ASSERT_TRUE(grant_storage(*st, a, "alice"));
  const Caller caller{a, "sha256:" + std::string(64, 'c')};
  ASSERT_TRUE(*storage_set(*st, caller, "user/1", {{"b", 1}, {"a", "x"}}));
  ASSERT_TRUE(*storage_set(*st, caller, "user/2", nullptr));
  ASSERT_TRUE(*storage_set(*st, caller, "other", 3.5));
  EXPECT_EQ(***storage_get(*st, caller, "user/1"), (Value{{"a", "x"}, {"b", 1}}));
  EXPECT_EQ(***storage_get(*st, caller, "user/2"), Value());
  EXPECT_FALSE((**storage_get(*st, caller, "missing")).has_value());
  EXPECT_EQ(**storage_list(*st, caller, "user/"), (std::vector<std::string>{"user/1", "user/2"}));
  EXPECT_EQ((**storage_list(*st, caller, "")).size(), 3u);
  EXPECT_TRUE(**storage_delete(*st, caller, "user/1"));
  EXPECT_FALSE(**storage_delete(*st, caller, "user/1"));
  EXPECT_EQ(**storage_list(*st, caller, "user/"), (std::vector<std::string>{"user/2"}));
  auto log = query_audit(*st, {.since = std::nullopt, .revision = a, .limit = 0});
  ASSERT_FALSE(log->empty());
  for (const auto& e : *log) {
    EXPECT_EQ(e.verdict, capability::Verdict::allow) << e.capability;
    EXPECT_EQ(e.task, caller.task);
  }
}

// An operation and its audit row are one transaction: when the row cannot be
// written, the operation is not done either (no unaudited write).
TEST_F(StoreGrants, AStorageWriteWhoseAuditRowFailsIsNotDone) {
  const auto a = install("kv", "x => x");
  ASSERT_TRUE(grant_storage(*st, a, "alice"));
  const Caller caller{a, "sha256:" + std::string(64, 'c')};
  ASSERT_TRUE(*storage_set(*st, caller, "kept", 1));
  const auto rows_before = query_audit(*st, {.since = std::nullopt, .revision = a, .limit = 0})->size();
  ASSERT_TRUE(exec("CREATE TRIGGER audit_down BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit down'); END"));
  EXPECT_FALSE(storage_delete(*st, caller, "kept"));
  EXPECT_FALSE(storage_set(*st, caller, "new", 2));
  EXPECT_FALSE(storage_get(*st, caller, "kept"));
  EXPECT_FALSE(storage_list(*st, caller, ""));
  ASSERT_TRUE(exec("DROP TRIGGER audit_down"));
  EXPECT_EQ(***storage_get(*st, caller, "kept"), Value(1)) << "deleted without its audit row";
  EXPECT_EQ(**storage_list(*st, caller, ""), (std::vector<std::string>{"kept"}));
  EXPECT_EQ(query_audit(*st, {.since = std::nullopt, .revision = a, .limit = 0})->size(), rows_before + 2);
}

TEST_F(StoreGrants, StorageSurvivesANewRevisionOnlyWhenThatRevisionHasItsOwnGrant) {  // S7, M17
  const auto a = install("kv", "x => x");
  ASSERT_TRUE(grant_storage(*st, a, "alice"));
  ASSERT_TRUE(*storage_set(*st, {a, std::nullopt}, "counter", 41));
  const auto b = install("kv", "x => [x]");
  const Caller cb{b, std::nullopt};
  EXPECT_EQ(storage_get(*st, cb, "counter")->error().code, "denied");
  ASSERT_TRUE(grant_storage(*st, b, "alice"));
  EXPECT_EQ(***storage_get(*st, cb, "counter"), 41);  // durable: keyed by tool name
  // Another tool's revision with a grant sees its own (empty) storage.
  const auto other = install("other", "x => x");
  ASSERT_TRUE(grant_storage(*st, other, "alice"));
  EXPECT_FALSE((**storage_get(*st, {other, std::nullopt}, "counter")).has_value());
  // Revoking A leaves the data, and B, alone.
  ASSERT_TRUE(*revoke_storage(*st, a));
  EXPECT_EQ(storage_get(*st, {a, std::nullopt}, "counter")->error().code, "denied");
  EXPECT_EQ(***storage_get(*st, cb, "counter"), 41);
}

TEST_F(StoreGrants, StorageKeysAndValuesAreChecked) {
  const auto a = install("kv", "x => x");
  ASSERT_TRUE(grant_storage(*st, a, "alice"));
  const Caller c{a, std::nullopt};
  EXPECT_EQ(storage_set(*st, c, "", 1)->error().code, "invalid_request");
  EXPECT_EQ(storage_set(*st, c, std::string("bad\xff", 4), 1)->error().code, "invalid_request");
  EXPECT_EQ(storage_set(*st, c, std::string(257, 'k'), 1)->error().code, "too_large");
  EXPECT_TRUE(*storage_set(*st, c, std::string(256, 'k'), 1));
  EXPECT_TRUE(*storage_set(*st, c, "ключ", 1));  // 8 bytes of UTF-8
  EXPECT_EQ(storage_set(*st, c, "nan", std::nan(""))->error().code, "invalid_request");
  const std::string big(64 * 1024 - 2, 'v');  // canonical "…" is 2 bytes longer
  EXPECT_TRUE(*storage_set(*st, c, "big", big));
  EXPECT_EQ(storage_set(*st, c, "big2", big + "v")->error().code, "too_large");
  EXPECT_EQ(storage_get(*st, c, std::string(300, 'x'))->error().code, "too_large");
  // The audit log keeps a bounded prefix of a huge refused key.
  ASSERT_FALSE(storage_set(*st, c, std::string(5000, 'x'), 1).value());
  EXPECT_LT(count("SELECT max(length(target)) FROM audit_log"), 400);
}

TEST_F(StoreGrants, StorageQuotasCountKeysAndBytesPerToolName) {
  const auto a = install("kv", "x => x");
  ASSERT_TRUE(grant_storage(*st, a, "alice"));
  const Caller c{a, std::nullopt};
  StorageQuota q;
  q.max_keys = 3;
  q.max_total_bytes = 40;
  ASSERT_TRUE(*storage_set(*st, c, "a", "0123456789", q));  // 1 + 12 bytes
  ASSERT_TRUE(*storage_set(*st, c, "b", "0123456789", q));  // 26
  ASSERT_TRUE(*storage_set(*st, c, "a", "01234567890", q));  // replacing counts the new value only: 27
  auto too_many_bytes = storage_set(*st, c, "c", "0123456789012", q);  // 27 + 16 = 43 > 40
  ASSERT_FALSE(*too_many_bytes);
  EXPECT_EQ(too_many_bytes->error().code, "too_large");
  ASSERT_TRUE(*storage_set(*st, c, "c", 1, q));
  auto too_many_keys = storage_set(*st, c, "d", 1, q);
  ASSERT_FALSE(*too_many_keys);
  EXPECT_EQ(too_many_keys->error().code, "too_large");
  EXPECT_TRUE(*storage_set(*st, c, "c", 2, q));  // replacing is not a new key
  EXPECT_FALSE((**storage_get(*st, c, "d")).has_value());
  // Defaults: 1000 keys per tool name.
  for (int i = 0; i < 997; ++i) ASSERT_TRUE(*storage_set(*st, c, "k" + std::to_string(i), i)) << i;
  EXPECT_EQ(storage_set(*st, c, "one-more", 1)->error().code, "too_large");
  EXPECT_EQ(count("SELECT count(*) FROM storage_items"), 1000);
}

// ---- secrets (M17) ---------------------------------------------------------------

TEST_F(StoreGrants, SecretsAreExactPerRevisionOriginAndName) {
  const auto a = install("api", "x => x");
  auto s = set_secret(*st, a, "https://api.example.com", "TOKEN", "v1", "alice");
  ASSERT_TRUE(s) << s.error().describe();
  ASSERT_TRUE(set_secret(*st, a, "https://api.example.com", "TOKEN", "v2", "alice"));  // replaces
  EXPECT_EQ(**secret_for(*st, a, "https://api.example.com", "TOKEN"), "v2");
  EXPECT_FALSE(secret_for(*st, a, "https://api.example.com:8443", "TOKEN")->has_value());
  EXPECT_FALSE(secret_for(*st, a, "https://other.example.com", "TOKEN")->has_value());
  EXPECT_FALSE(secret_for(*st, a, "https://api.example.com", "token")->has_value());
  auto names = secret_names(*st);
  ASSERT_EQ(names->size(), 1u);
  EXPECT_EQ((*names)[0].name, "TOKEN");
  EXPECT_EQ((*names)[0].tool, "api");
  EXPECT_TRUE(*delete_secret(*st, a, "https://api.example.com", "TOKEN"));
  EXPECT_FALSE(*delete_secret(*st, a, "https://api.example.com", "TOKEN"));
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"bad name", "v"}, {"", "v"}, {"N", ""}, {"N", "a\r\nX-Evil: 1"}, {"N", std::string("a\0b", 3)},
           {"N", std::string(kMaxSecretBytes + 1, 'v')}})
    EXPECT_EQ(set_secret(*st, a, "https://api.example.com", name, value, "alice").error().code, Errc::bad_usage)
        << name;
  EXPECT_EQ(set_secret(*st, a, "http://api.example.com", "N", "v", "alice").error().code, Errc::bad_usage);
  EXPECT_EQ(set_secret(*st, "sha256:" + std::string(64, '2'), "https://a.example", "N", "v", "alice").error().code,
            Errc::not_found);
}

TEST_F(StoreGrants, ANewDatabaseFileIsReadableByItsOwnerOnly) {
  struct stat sb {};
  ASSERT_EQ(::stat(db_path().c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
}

// ---- audit -------------------------------------------------------------------

TEST_F(StoreGrants, AuditLogIsAppendOnly) {
  AuditEntry e;
  e.revision = "sha256:" + std::string(64, 'a');
  e.capability = "fetch";
  e.target = "https://api.example.com";
  e.access = "write";
  e.verdict = capability::Verdict::deny;
  e.reason = "M8: no grant for write on https://api.example.com";
  auto stored = append_audit(*st, e);
  ASSERT_TRUE(stored) << stored.error().describe();
  EXPECT_GT(stored->seq, 0);
  EXPECT_EQ(stored->at.size(), 24u);
  auto upd = exec("UPDATE audit_log SET verdict = 'allow'");
  ASSERT_FALSE(upd);
  EXPECT_NE(upd.error().message.find("append-only"), std::string::npos);
  EXPECT_FALSE(exec("DELETE FROM audit_log"));
  auto log = query_audit(*st, {});
  ASSERT_EQ(log->size(), 1u);
  EXPECT_EQ((*log)[0].verdict, capability::Verdict::deny);
  EXPECT_EQ((*log)[0].reason, e.reason);
  e.access = "execute";
  EXPECT_EQ(append_audit(*st, e).error().code, Errc::bad_usage);
  e.access = "";
  e.capability = "";
  EXPECT_EQ(append_audit(*st, e).error().code, Errc::bad_usage);
}

TEST_F(StoreGrants, AuditQueryFiltersBySinceRevisionAndLimit) {
  const std::string r1 = "sha256:" + std::string(64, '1'), r2 = "sha256:" + std::string(64, '2');
  for (int i = 0; i < 5; ++i) {
    AuditEntry e;
    e.revision = i % 2 ? r2 : r1;
    e.capability = "storage.get";
    e.target = "k" + std::to_string(i);
    e.access = "read";
    e.verdict = capability::Verdict::allow;
    e.reason = "granted";
    ASSERT_TRUE(append_audit(*st, e));
  }
  EXPECT_EQ(query_audit(*st, {.since = std::nullopt, .revision = std::nullopt, .limit = 0})->size(), 5u);
  auto last2 = query_audit(*st, {.since = std::nullopt, .revision = std::nullopt, .limit = 2});
  ASSERT_EQ(last2->size(), 2u);
  EXPECT_EQ((*last2)[0].target, "k3");  // the most recent two, oldest first
  EXPECT_EQ((*last2)[1].target, "k4");
  auto of_r2 = query_audit(*st, {.since = std::nullopt, .revision = r2, .limit = 0});
  ASSERT_EQ(of_r2->size(), 2u);
  EXPECT_EQ((*of_r2)[0].target, "k1");
  EXPECT_EQ(query_audit(*st, {.since = "2999-01-01T00:00:00.000Z", .revision = std::nullopt, .limit = 0})->size(), 0u);
  EXPECT_EQ(query_audit(*st, {.since = "2000-01-01T00:00:00.000Z", .revision = std::nullopt, .limit = 0})->size(), 5u);
}

TEST(AuditSince, IsoTimesAndDurations) {
  using namespace std::chrono;
  const auto now = sys_days(year(2026) / 3 / 1) + hours(1);
  EXPECT_EQ(*parse_since("2026-11-29", now), "2026-11-29T00:00:00.000Z");
  EXPECT_EQ(*parse_since("2026-11-29T18:18Z", now), "2026-11-29T18:18:00.000Z");
  EXPECT_EQ(*parse_since("2026-11-29T18:18:36Z", now), "2026-11-29T18:18:36.000Z");
  EXPECT_EQ(*parse_since("2026-11-29T18:18:36.123Z", now), "2026-11-29T18:18:36.123Z");
  EXPECT_EQ(*parse_since("10m", now), "2026-03-01T00:50:00.000Z");
  EXPECT_EQ(*parse_since("2h", now), "2026-02-28T23:00:00.000Z");
  EXPECT_EQ(*parse_since("1d", now), "2026-02-28T01:00:00.000Z");
  EXPECT_EQ(*parse_since("30s", now), "2026-03-01T00:59:30.000Z");
  for (const char* bad : {"", "m", "10", "0m", "-1h", "10w", "1.5h", "2026-02-30", "2026-11-29T18:18:36",
                          "2026-11-29T25:00Z", "2026-11-29 18:18Z", "2026-11-29T18:18:36.1Z", "yesterday"})
    EXPECT_EQ(parse_since(bad, now).error().code, Errc::bad_usage) << bad;
}

// ---- settings revisions (T1, M15) ----------------------------------------------

TEST_F(StoreGrants, EmptySettingsKeepTheirContentId) {
  EXPECT_EQ(registry::empty_settings_revision(), json::content_id("{}"));
  EXPECT_EQ(registry::empty_settings_revision(),
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
  install("shout", "x => x");
  EXPECT_EQ(*settings_revision_for(*st, "shout"), registry::empty_settings_revision());
  EXPECT_EQ(*settings_value(*st, registry::empty_settings_revision()), Value::object());
  auto r = set_settings(*st, "shout", Value::object());
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->revision, registry::empty_settings_revision());
  EXPECT_TRUE(r->bound);
}

TEST_F(StoreGrants, CompilationPinsTheBoundSettingsRevisionAndOldCallsKeepTheirs) {  // T1
  install("shout", "({input}) => input");
  auto compile = [&] {
    return tasks::compile(tasks::function_call("shout", {{"input", "hi"}}), {{}, st->resolver()});
  };
  auto before = compile();
  ASSERT_TRUE(before) << before.error().describe();
  EXPECT_EQ(before->task.settings_revision, registry::empty_settings_revision());
  ASSERT_TRUE(st->put_tasks({before->task}));

  const Value settings = {{"greeting", "hello"}, {"loud", true}};
  auto set = set_settings(*st, "shout", settings);
  ASSERT_TRUE(set) << set.error().describe();
  EXPECT_EQ(set->revision, *json::content_id_of(settings));
  auto after = compile();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->task.settings_revision, set->revision);
  EXPECT_NE(after->task.id, before->task.id);  // the pin is hashed into the id
  EXPECT_EQ(after->task.id, *tasks::compute_id(after->task));
  // The call compiled earlier keeps its pin.
  auto stored = st->task(before->task.id);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->settings_revision, registry::empty_settings_revision());
  // The host reads the value by id; the same object set again changes nothing.
  EXPECT_EQ(*settings_value(*st, set->revision), settings);
  auto again = set_settings(*st, "shout", {{"loud", true}, {"greeting", "hello"}});
  EXPECT_FALSE(again->created);
  EXPECT_FALSE(again->bound);
  ASSERT_EQ(settings_history(*st, "shout")->size(), 1u);
  ASSERT_TRUE(set_settings(*st, "shout", Value::object()));
  auto h = settings_history(*st, "shout");
  ASSERT_EQ(h->size(), 2u);
  EXPECT_EQ((*h)[1].revision, registry::empty_settings_revision());
  EXPECT_EQ(compile()->task.id, before->task.id);  // back to {}: the same call, the same id
}

TEST_F(StoreGrants, SettingsAreObjectsForInstalledToolsAndTamperingIsDetected) {
  install("shout", "x => x");
  EXPECT_EQ(set_settings(*st, "nosuch", Value::object()).error().code, Errc::not_found);
  EXPECT_EQ(set_settings(*st, "bad name", Value::object()).error().code, Errc::bad_usage);
  EXPECT_EQ(set_settings(*st, "shout", Value::array()).error().code, Errc::bad_usage);
  EXPECT_EQ(set_settings(*st, "shout", {{"big", std::string(kMaxSettingsBytes, 'x')}}).error().code, Errc::bad_usage);
  EXPECT_EQ(settings_value(*st, "sha256:" + std::string(64, '3')).error().code, Errc::not_found);
  auto r = set_settings(*st, "shout", {{"k", 1}});
  ASSERT_TRUE(r);
  auto upd = exec("UPDATE settings_revisions SET value = '{\"k\":2}'");
  ASSERT_FALSE(upd);
  EXPECT_NE(upd.error().message.find("immutable"), std::string::npos);
  EXPECT_FALSE(exec("DELETE FROM settings_bindings"));
  ASSERT_TRUE(exec("DROP TRIGGER settings_revisions_no_update"));
  ASSERT_TRUE(exec("UPDATE settings_revisions SET value = '{\"k\":2}'"));
  EXPECT_EQ(settings_value(*st, r->revision).error().code, Errc::integrity);
  // A tampered settings revision is never pinned.
  auto c = tasks::compile(tasks::function_call("shout", {{"input", "x"}}), {{}, st->resolver()});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, Errc::integrity);
}

// ---- popup permissions (M16) ------------------------------------------------------

TEST_F(StoreGrants, OnlyATrustedRevisionMayHoldAPopupPermission) {  // M16, R6
  const auto plain = install("plain", "x => x");
  auto refused = grant_popup(*st, plain, "custom-html", "alice");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::bad_usage);
  EXPECT_NE(refused.error().message.find("M16"), std::string::npos);
  auto raw = exec("INSERT INTO popup_permissions VALUES ('" + plain + "', 'custom-html', 'a', 'now')");
  ASSERT_FALSE(raw);
  EXPECT_NE(raw.error().message.find("M16"), std::string::npos);
  const auto host = install_trusted("v1");
  EXPECT_TRUE(grant_popup(*st, host, "custom-html", "alice"));
  for (const char* bad : {"custom-html ", "CUSTOM-HTML", "https://Example.com", "https://example.com/", "http://a.b"})
    EXPECT_EQ(grant_popup(*st, host, bad, "alice").error().code, Errc::bad_usage) << bad;
}

TEST_F(StoreGrants, PopupChecksMatchExactlyAndAreAudited) {  // M16
  const auto host = install_trusted("v1");
  ASSERT_TRUE(grant_popup(*st, host, "https://example.com", "alice"));
  EXPECT_TRUE(*popup_allowed(*st, host, "https://example.com"));
  EXPECT_FALSE(*popup_allowed(*st, host, "custom-html"));  // not granted
  for (const char* other : {"https://sub.example.com", "https://example.com:8443", "http://example.com",
                            "https://example.com/path", "https://example.com/", "https://EXAMPLE.com",
                            "https://example.co", "https://evil.com/https://example.com"})
    EXPECT_FALSE(*popup_allowed(*st, host, other)) << other;
  ASSERT_TRUE(grant_popup(*st, host, "custom-html", "alice"));
  auto d = check_popup(*st, host, "custom-html", "sha256:" + std::string(64, 'd'));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->allowed);
  const auto checks = count("SELECT count(*) FROM audit_log WHERE capability = 'popup'");
  EXPECT_EQ(checks, 11);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE capability = 'popup' AND verdict = 'allow'"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM audit_log WHERE task IS NOT NULL"), 1);
  EXPECT_EQ(popup_permissions(*st)->size(), 2u);
  EXPECT_TRUE(*revoke_popup(*st, host, "custom-html"));
  EXPECT_FALSE(*revoke_popup(*st, host, "custom-html"));
  EXPECT_FALSE(*popup_allowed(*st, host, "custom-html"));
}

TEST_F(StoreGrants, PopupPermissionsAreNotInherited) {  // M16, M17
  const auto v1 = install_trusted("v1");
  ASSERT_TRUE(grant_popup(*st, v1, "custom-html", "alice"));
  const auto v2 = install_trusted("v2");
  ASSERT_NE(v1, v2);
  EXPECT_EQ(st->resolve("host")->id, v2);
  EXPECT_FALSE(*popup_allowed(*st, v2, "custom-html"));
  EXPECT_TRUE(*popup_allowed(*st, v1, "custom-html"));
}

// ---- sandbox destruction records ---------------------------------------------------

TEST_F(StoreGrants, SandboxDestructionsAreRecordedAppendOnly) {
  const std::string r1 = "sha256:" + std::string(64, '1'), r2 = "sha256:" + std::string(64, '2');
  ASSERT_TRUE(record_destruction(*st, r1, "echo", "timeout", 101));
  ASSERT_TRUE(record_destruction(*st, r2, "other", "revision changed", 102));
  auto d = record_destruction(*st, r1, "echo", "terminated", 103);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->pid, 103);
  auto all = destructions(*st, 0);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].reason, "timeout");
  auto of_r1 = destructions(*st, 1, r1);
  ASSERT_EQ(of_r1->size(), 1u);
  EXPECT_EQ((*of_r1)[0].reason, "terminated");
  EXPECT_FALSE(exec("DELETE FROM sandbox_destructions"));
  EXPECT_FALSE(exec("UPDATE sandbox_destructions SET reason = 'x'"));
  // Another connection (another tycli process) sees them.
  auto other = Store::open(db_path());
  ASSERT_TRUE(other);
  EXPECT_EQ(destructions(*other, 0)->size(), 3u);
}

}  // namespace
}  // namespace taskyon::store
