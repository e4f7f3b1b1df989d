// DESIGN §3: manifests, their validation and their revision ids (R1).
#include <gtest/gtest.h>

#include "taskyon/registry/manifest.h"
#include "taskyon/registry/schema.h"
#include "test_util.h"

namespace taskyon::registry {
namespace {

using json::Value;

Value valid() { return testing::js_tool("echo", "({input}) => input"); }

Error manifest_error(const Value& v) {
  auto m = parse_manifest(v);
  EXPECT_FALSE(m.has_value());
  return m ? Error{} : m.error();
}

TEST(Manifest, AcceptsAValidSandboxedCodeTool) {
  auto m = parse_manifest(valid());
  ASSERT_TRUE(m) << m.error().describe();
  EXPECT_EQ(m->name, "echo");
  EXPECT_EQ(m->execution, Execution::sandboxed_code);
  EXPECT_EQ(m->code, "({input}) => input");
}

TEST(Manifest, MissingParametersNamesThePointer) {
  Value v = valid();
  v.erase("parameters");
  auto e = manifest_error(v);
  EXPECT_EQ(e.code, Errc::invalid_manifest);
  EXPECT_EQ(e.where, "/parameters");
}

TEST(Manifest, ParametersMustBeAnObjectSchemaOfTypeObject) {
  Value v = valid();
  v["parameters"] = "string";
  EXPECT_EQ(manifest_error(v).where, "/parameters");
  v["parameters"] = {{"type", "array"}};
  EXPECT_EQ(manifest_error(v).where, "/parameters/type");
  v["parameters"] = {{"type", "object"}, {"properties", 3}};
  EXPECT_EQ(manifest_error(v).where, "/parameters");
}

TEST(Manifest, NameFollowsTheProviderPattern) {
  for (const char* bad : {"", "has space", "dot.ted", "ünïcode"}) {
    Value v = valid();
    v["name"] = bad;
    EXPECT_EQ(manifest_error(v).where, "/name") << bad;
  }
  Value v = valid();
  v["name"] = std::string(65, 'a');
  EXPECT_EQ(manifest_error(v).where, "/name");
  v["name"] = std::string(64, 'a');
  EXPECT_TRUE(parse_manifest(v));
  v["name"] = "A-z_09";
  EXPECT_TRUE(parse_manifest(v));
}

TEST(Manifest, UnknownFieldsAreRefused) {
  Value v = valid();
  v["paramters"] = Value::object();
  auto e = manifest_error(v);
  EXPECT_EQ(e.where, "/paramters");
  EXPECT_NE(e.message.find("unknown field"), std::string::npos);
}

TEST(Manifest, EachExecutionClassNeedsItsOwnFields) {
  Value v = valid();
  v["execution"] = "shell";
  EXPECT_EQ(manifest_error(v).where, "/execution");

  v = valid();
  v.erase("code");
  EXPECT_EQ(manifest_error(v).where, "/code");
  v = valid();
  v["code"] = "   ";
  EXPECT_EQ(manifest_error(v).where, "/code");
  v = valid();
  v["runtime"] = "python";
  EXPECT_EQ(manifest_error(v).where, "/runtime");
  v = valid();
  v["native"] = "x";
  EXPECT_EQ(manifest_error(v).where, "/native");

  v = valid();
  v["execution"] = "trusted-native";
  EXPECT_EQ(manifest_error(v).where, "/native");  // missing native id comes first
  v.erase("code");
  v.erase("runtime");
  v["native"] = "executePython";
  EXPECT_TRUE(parse_manifest(v));

  v = valid();
  v["execution"] = "external-service";
  v.erase("code");
  v.erase("runtime");
  EXPECT_EQ(manifest_error(v).where, "/service");
  v["service"] = {{"mcp", {{"command", {"server"}}}}};
  EXPECT_EQ(manifest_error(v).where, "/service/mcp/tool");
  v["service"] = {{"mcp", {{"command", {"server"}}, {"tool", "echo"}}}};
  EXPECT_TRUE(parse_manifest(v));
}

TEST(Manifest, CodeSizeIsBounded) {
  Value v = valid();
  v["code"] = "() => '" + std::string(kMaxCodeBytes, 'x') + "'";
  EXPECT_EQ(manifest_error(v).where, "/code");
}

TEST(Manifest, RevisionIdIgnoresKeyOrderAndChangesWithContent) {  // R1
  auto a = parse_manifest(valid());
  auto text = R"({"code":"({input}) => input","runtime":"javascript","execution":"sandboxed-code",
      "parameters":{"properties":{"input":{"type":"string"}},"type":"object"},
      "description":"test tool echo","name":"echo"})";
  auto b = parse_manifest(*json::parse(text));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*revision_id(*a), *revision_id(*b));
  EXPECT_TRUE(json::is_content_id(*revision_id(*a)));

  Value changed = valid();
  changed["code"] = "({input}) => input ";
  EXPECT_NE(*revision_id(*parse_manifest(changed)), *revision_id(*a));
}

TEST(Arguments, ValidatedAgainstTheParametersSchema) {
  const Value params = {{"type", "object"},
                        {"properties", {{"num1", {{"type", "number"}}}, {"num2", {{"type", "number"}}}}},
                        {"required", {"num1", "num2"}}};
  EXPECT_TRUE(validate_arguments(params, {{"num1", 1}, {"num2", 2.5}}));
  auto wrong_type = validate_arguments(params, {{"num1", "one"}, {"num2", 2}});
  ASSERT_FALSE(wrong_type);
  EXPECT_EQ(wrong_type.error().code, Errc::invalid_arguments);
  EXPECT_EQ(wrong_type.error().where, "/num1");
  auto missing = validate_arguments(params, {{"num1", 1}});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("num2"), std::string::npos) << missing.error().message;
}

TEST(Arguments, RemoteReferencesAreNeverFetched) {
  const Value params = {{"type", "object"}, {"properties", {{"a", {{"$ref", "https://example.com/s.json"}}}}}};
  auto r = check_parameters_schema(params);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_manifest);
}

}  // namespace
}  // namespace taskyon::registry

namespace taskyon::registry {
namespace {

TEST(Arguments, AFalseSubschemaStillNamesTheArgument) {
  auto r = validate_arguments({{"type", "object"}, {"properties", {{"a", false}}}}, {{"a", 1}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().where, "/a");
}

TEST(Arguments, HugeIntegersAreComparedNotWrapped) {
  const json::Value params = {{"type", "object"}, {"properties", {{"n", {{"maximum", 100}, {"minimum", 0}}}}}};
  auto r = validate_arguments(params, *json::parse(R"({"n": 9223372036854775808})"));  // 2^63: no wrap to negative
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().where, "/n");
  EXPECT_NE(r.error().message.find("must be at most 100, got 9223372036854775808"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace taskyon::registry
