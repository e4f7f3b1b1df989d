// Issue 12.7: the one escaping function for tool text on a terminal, bounded
// audit text, and pruning the append-only logs only through their permits.
#include <gtest/gtest.h>

#include "taskyon/base/escape.h"
#include "taskyon/json/json.h"
#include "taskyon/store/audit.h"
#include "taskyon/store/sandbox_log.h"
#include "taskyon/store/store.h"
#include "test_util.h"

namespace taskyon {
namespace {

TEST(EscapeTerminal, ControlsFormatCharactersAndBackslashesAreEscaped) {
  EXPECT_EQ(escape_terminal("\x1b[2J"), "\\u001b[2J");
  EXPECT_EQ(escape_terminal("\x1b]52;c;SGk=\x07"), "\\u001b]52;c;SGk=\\u0007");
  EXPECT_EQ(escape_terminal("ok\nallow fetch"), "ok\\nallow fetch");
  EXPECT_EQ(escape_terminal("a\rb\tc\x7f"), "a\\u000db\\u0009c\\u007f");
  EXPECT_EQ(escape_terminal("\xc2\x9b" "2J"), "\\u009b2J");           // 8-bit CSI
  EXPECT_EQ(escape_terminal("\xe2\x80\xae" "txt"), "\\u202etxt");     // right-to-left override
  EXPECT_EQ(escape_terminal("\xff\xc0\xaf"), "\\xff\\xc0\\xaf");      // not UTF-8, overlong
  EXPECT_EQ(escape_terminal("a\\u001b"), "a\\\\u001b");               // an escape is always ours
  EXPECT_EQ(escape_terminal("grüße, 日本"), "grüße, 日本");
  EXPECT_EQ(escape_terminal("two\nlines\x1b", Newlines::keep), "two\nlines\\u001b");
}

TEST(EscapeTerminal, AJsonDumpStaysTheSameJson) {
  const json::Value v = {{"s", "\x1b[2J \xc2\x9b \xe2\x80\xae q\"\\ é"}};
  const std::string dump = v.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string shown = escape_json_dump(dump);
  EXPECT_EQ(shown.find('\x1b'), std::string::npos);
  EXPECT_EQ(shown.find("\xc2\x9b"), std::string::npos);
  EXPECT_EQ(shown.find("\xe2\x80\xae"), std::string::npos);
  auto back = json::parse(shown);
  ASSERT_TRUE(back) << shown;
  EXPECT_EQ(*back, v);
}

class Records : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Store::open((dir / "taskyon.db").string());
    ASSERT_TRUE(s) << s.error().describe();
    st.emplace(std::move(*s));
  }
  store::AuditEntry entry(std::string target) {
    store::AuditEntry e;
    e.revision = "sha256:x";
    e.capability = "fetch";
    e.target = std::move(target);
    e.reason = "test";
    return e;
  }
  testing::TempDir dir;
  std::optional<store::Store> st;
};

TEST_F(Records, LongAuditTextIsKeptAsAPrefixAndAHash) {
  const std::string big(1u << 20, 'a');
  auto row = store::append_audit(*st, entry(big));
  ASSERT_TRUE(row);
  EXPECT_LE(row->target.size(), store::kMaxAuditText);
  EXPECT_EQ(row->target.rfind(std::string(store::kAuditTextPrefix, 'a'), 0), 0u);
  EXPECT_NE(row->target.find(json::content_id(big)), std::string::npos);
  EXPECT_EQ(store::append_audit(*st, entry("short"))->target, "short");
  EXPECT_EQ(store::bounded_audit_text(std::string(store::kMaxAuditText, 'b')), std::string(store::kMaxAuditText, 'b'));
}

TEST_F(Records, TheLogsAreAppendOnlyButForAPrune) {
  ASSERT_TRUE(store::append_audit(*st, entry("one")));
  ASSERT_TRUE(store::record_destruction(*st, "sha256:x", "t", "timeout", 1));
  // A plain DELETE is refused by the database, whoever sends it.
  EXPECT_FALSE(st->database().exec("DELETE FROM audit_log"));
  EXPECT_FALSE(st->database().exec("DELETE FROM sandbox_destructions"));
  EXPECT_FALSE(st->database().exec("UPDATE audit_log SET reason = 'forged'"));
  // Nothing is older than 2000: nothing goes.
  EXPECT_EQ(*store::prune_audit(*st, "2000-01-01T00:00:00.000Z"), 0);
  EXPECT_EQ(*store::prune_destructions(*st, "2000-01-01T00:00:00.000Z"), 0);
  EXPECT_EQ(*store::prune_audit(*st, "2999-01-01T00:00:00.000Z"), 2);  // "one" and the first prune's row
  EXPECT_EQ(*store::prune_destructions(*st, "2999-01-01T00:00:00.000Z"), 1);
  auto left = store::query_audit(*st, {});
  ASSERT_TRUE(left);
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].capability, "audit.prune");
  EXPECT_TRUE(store::destructions(*st)->empty());
  // The permit is gone with its transaction: a DELETE is refused again.
  ASSERT_TRUE(store::record_destruction(*st, "sha256:x", "t", "timeout", 1));
  EXPECT_FALSE(st->database().exec("DELETE FROM sandbox_destructions"));
}

}  // namespace
}  // namespace taskyon
