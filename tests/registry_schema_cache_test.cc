// Issue 19: compiled parameter schemas kept per process by revision id
// (registry/schema.h). A kept schema judges exactly as a fresh one; an entry
// never serves another schema; the cache stays bounded.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/registry/schema.h"

namespace taskyon::registry {
namespace {

using json::Value;

Value schema_of(const char* type) {
  return {{"type", "object"}, {"properties", {{"n", {{"type", type}}}}}, {"required", {"n"}}};
}

class SchemaCache : public ::testing::Test {
 protected:
  void SetUp() override { clear_schema_cache(); }
  void TearDown() override { clear_schema_cache(); }
};

TEST_F(SchemaCache, AKeptSchemaStillRefusesBadArguments) {
  const Value params = schema_of("integer");
  ASSERT_TRUE(validate_arguments(params, {{"n", 1}}, "sha256:aa"));
  EXPECT_EQ(schema_cache_size(), 1u);
  for (int i = 0; i < 3; ++i) {  // each time from the kept entry
    auto bad = validate_arguments(params, {{"n", "one"}}, "sha256:aa");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, Errc::invalid_arguments);
    EXPECT_EQ(bad.error().where, "/n");
    auto missing = validate_arguments(params, Value::object(), "sha256:aa");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, Errc::invalid_arguments);
    EXPECT_TRUE(validate_arguments(params, {{"n", 2}}, "sha256:aa"));
  }
  EXPECT_EQ(schema_cache_size(), 1u);
}

TEST_F(SchemaCache, TwoRevisionsWithDifferentSchemasNeverShareAnEntry) {
  const Value ints = schema_of("integer"), strings = schema_of("string");
  for (int round = 0; round < 2; ++round) {  // round 1 from the kept entries
    EXPECT_TRUE(validate_arguments(ints, {{"n", 1}}, "sha256:ints"));
    EXPECT_FALSE(validate_arguments(ints, {{"n", "x"}}, "sha256:ints"));
    EXPECT_TRUE(validate_arguments(strings, {{"n", "x"}}, "sha256:strings"));
    EXPECT_FALSE(validate_arguments(strings, {{"n", 1}}, "sha256:strings"));
  }
  EXPECT_EQ(schema_cache_size(), 2u);
}

TEST_F(SchemaCache, AWrongIdDoesNotBorrowAnotherSchema) {
  // A revision id names its content, so this cannot happen through the
  // registry; the entry is compared all the same.
  ASSERT_TRUE(validate_arguments(schema_of("integer"), {{"n", 1}}, "sha256:same"));
  auto r = validate_arguments(schema_of("string"), {{"n", 1}}, "sha256:same");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_arguments);
  EXPECT_TRUE(validate_arguments(schema_of("string"), {{"n", "x"}}, "sha256:same"));
}

TEST_F(SchemaCache, PatternsOfAKeptSchemaStillMatchAcrossThreads) {
  const Value params = {{"type", "object"}, {"properties", {{"s", {{"type", "string"}, {"pattern", "^(a+)+$"}}}}}};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (!validate_arguments(params, {{"s", std::string(100, 'a')}}, "sha256:pattern")) ++wrong;
        if (validate_arguments(params, {{"s", std::string(100, 'a') + "b"}}, "sha256:pattern")) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(schema_cache_size(), 1u);
}

TEST_F(SchemaCache, WideningStillAppliesToAKeptSchema) {
  // The kept schema is the widened one: 2^63 is not wrapped to a negative number.
  const Value params = {{"type", "object"}, {"properties", {{"n", {{"maximum", 100}, {"minimum", 0}}}}}};
  for (int i = 0; i < 2; ++i) {
    auto r = validate_arguments(params, *json::parse(R"({"n": 9223372036854775808})"), "sha256:wide");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("must be at most 100, got 9223372036854775808"), std::string::npos) << r.error().message;
    EXPECT_TRUE(validate_arguments(params, {{"n", 5}}, "sha256:wide"));
    EXPECT_FALSE(validate_arguments(params, {{"n", -1}}, "sha256:wide"));
  }
  const Value multiple = {{"type", "object"}, {"properties", {{"v", {{"multipleOf", 3}}}}}};
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(validate_arguments(multiple, {{"v", 9}}, "sha256:multiple"));
    EXPECT_FALSE(validate_arguments(multiple, {{"v", 10}}, "sha256:multiple"));
  }
}

TEST_F(SchemaCache, AnInvalidSchemaIsNotKept) {
  const Value params = {{"type", "object"}, {"properties", {{"n", {{"$ref", "https://example.com/s.json"}}}}}};
  auto r = validate_arguments(params, {{"n", 1}}, "sha256:remote");
  ASSERT_FALSE(r);
  EXPECT_EQ(schema_cache_size(), 0u);
}

TEST_F(SchemaCache, IsBounded) {
  for (std::size_t i = 0; i < kSchemaCacheEntries + 20; ++i)
    ASSERT_TRUE(validate_arguments(schema_of("integer"), {{"n", 1}}, "sha256:" + std::to_string(i)));
  EXPECT_EQ(schema_cache_size(), kSchemaCacheEntries);
  // The oldest were dropped, the newest kept; a dropped one is compiled again.
  EXPECT_FALSE(validate_arguments(schema_of("integer"), {{"n", "x"}}, "sha256:0"));
  EXPECT_EQ(schema_cache_size(), kSchemaCacheEntries);
}

TEST_F(SchemaCache, IsBoundedInBytes) {
  // A schema over the byte bound is never kept, and still judges.
  Value big = schema_of("integer");
  big["description"] = std::string(kSchemaCacheBytes, 'd');
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(validate_arguments(big, {{"n", 1}}, "sha256:big"));
    EXPECT_FALSE(validate_arguments(big, {{"n", "x"}}, "sha256:big"));
  }
  EXPECT_EQ(schema_cache_size(), 0u);
  // Schemas that fill the bound together push the oldest out.
  Value half = schema_of("integer");
  half["description"] = std::string(kSchemaCacheBytes / 2 - 1000, 'd');
  ASSERT_TRUE(validate_arguments(half, {{"n", 1}}, "sha256:h1"));
  ASSERT_TRUE(validate_arguments(half, {{"n", 1}}, "sha256:h2"));
  EXPECT_EQ(schema_cache_size(), 2u);
  ASSERT_TRUE(validate_arguments(half, {{"n", 1}}, "sha256:h3"));
  EXPECT_EQ(schema_cache_size(), 2u);
}

}  // namespace
}  // namespace taskyon::registry
