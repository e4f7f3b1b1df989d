// Issue 16 item 4: argument errors in plain words with the JSON pointer
// (registry/schema_words.h), through the public validate_arguments.
#include <string>

#include <gtest/gtest.h>

#include "taskyon/registry/schema.h"

namespace taskyon::registry {
namespace {

using json::Value;

std::string message_for(const char* parameters, const char* arguments) {
  auto p = json::parse(parameters);
  auto a = json::parse(arguments);
  EXPECT_TRUE(p && a);
  auto r = validate_arguments(*p, *a);
  EXPECT_FALSE(r.has_value());
  return r ? std::string{} : r.error().message;
}

constexpr const char* kSchema = R"({"type": "object", "additionalProperties": false, "required": ["n", "tags"],
  "properties": {"n": {"type": "number"}, "tags": {"type": "array", "items": {"type": ["string", "null"]}},
                 "mode": {"enum": ["fast", "slow"]}, "code": {"type": "string", "pattern": "^[a-z]+$"}}})";

TEST(SchemaWords, ATypeErrorSaysWhatWasExpectedAndWhatCame) {
  const std::string m = message_for(kSchema, R"({"n": "x", "tags": []})");
  EXPECT_NE(m.find("/n: expected a number, got a string"), std::string::npos) << m;
  EXPECT_EQ(m.find("Value type not permitted"), std::string::npos) << m;
  // Through "items", and a list of types.
  const std::string items = message_for(kSchema, R"({"n": 1, "tags": ["a", 2]})");
  EXPECT_NE(items.find("/tags/1: expected a string or null, got an integer"), std::string::npos) << items;
}

TEST(SchemaWords, MissingUnknownEnumAndPatternAreNamed) {
  const std::string missing = message_for(kSchema, R"({"n": 1})");
  EXPECT_NE(missing.find("the required property \"tags\" is missing"), std::string::npos) << missing;
  const std::string extra = message_for(kSchema, R"({"n": 1, "tags": [], "colour's": 1})");
  EXPECT_NE(extra.find("\"colour's\" is not a parameter of this tool"), std::string::npos) << extra;
  const std::string mode = message_for(kSchema, R"({"n": 1, "tags": [], "mode": "medium"})");
  EXPECT_NE(mode.find("/mode: \"medium\" is not one of the allowed values [\"fast\",\"slow\"]"), std::string::npos)
      << mode;
  const std::string code = message_for(kSchema, R"({"n": 1, "tags": [], "code": "A1"})");
  EXPECT_NE(code.find("/code: does not match the pattern \"^[a-z]+$\""), std::string::npos) << code;
}

TEST(SchemaWords, WhereTheSchemaCannotBeFollowedTheValueIsStillNamed) {
  // Through $ref the subschema is not looked up; the message still says what came.
  const std::string m = message_for(R"({"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}},
                                        "$defs": {"n": {"type": "number"}}})",
                                    R"({"a": true})");
  EXPECT_NE(m.find("/a: a boolean is not a type allowed here"), std::string::npos) << m;
}

}  // namespace
}  // namespace taskyon::registry
