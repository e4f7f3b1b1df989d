// The limits of a tool definition's fields and of call arguments
// (docs/limits.md): each is checked before the input is used further, and
// each refusal names its limit and where it applies.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "taskyon/registry/manifest.h"
#include "taskyon/registry/schema.h"
#include "test_util.h"

namespace taskyon::registry {
namespace {

using json::Value;

TEST(Limits, ManifestFieldsNameTheirLimits) {
  Value m = testing::js_tool("big", "x => x");
  m["description"] = std::string(50u << 20, 'd');  // 50 MB
  auto d = parse_manifest(m);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().where, "/description");
  EXPECT_NE(d.error().message.find("the limit is 65536 bytes"), std::string::npos) << d.error().message.substr(0, 200);
  m["description"] = std::string(kMaxDescriptionBytes, 'd');
  EXPECT_TRUE(parse_manifest(m));

  Value params = {{"type", "object"}, {"properties", Value::object()}};
  for (int i = 0; i < 20000; ++i) params["properties"][fmt::format("p{}", i)] = {{"type", "string"}};
  m = testing::js_tool("big", "x => x");
  m["parameters"] = params;
  auto p = parse_manifest(m);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().where, "/parameters");
  EXPECT_NE(p.error().message.find("the limit is 262144 bytes"), std::string::npos) << p.error().message;

  m = testing::js_tool("big", "x => x");
  m["code"] = std::string(kMaxCodeBytes, ' ') + "x => x";
  auto c = parse_manifest(m);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().where, "/code");
}

TEST(Limits, ArgumentsAreBoundedBeforeValidation) {
  const Value params = {{"type", "object"}};
  auto r = validate_arguments(params, {{"a", std::string(kMaxArgumentsBytes, 'x')}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_arguments);
  EXPECT_NE(r.error().message.find("the limit is 4194304 bytes"), std::string::npos) << r.error().message;
  EXPECT_TRUE(validate_arguments(params, {{"a", std::string(1000, 'x')}}));
}

}  // namespace
}  // namespace taskyon::registry
