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

TEST(SchemaWords, BoundsNameTheSchemasNumberAndWhatCame) {
  constexpr const char* schema = R"({"type": "object", "properties": {
    "days": {"type": "integer", "minimum": 1, "maximum": 14}, "t": {"type": "number", "exclusiveMaximum": 0.5},
    "u": {"type": "number", "exclusiveMinimum": 2}, "step": {"type": "number", "multipleOf": 0.25},
    "city": {"type": "string", "minLength": 2, "maxLength": 5},
    "tags": {"type": "array", "minItems": 1, "maxItems": 2}, "o": {"type": "object", "maxProperties": 1}}})";
  const auto says = [&](const char* args, const std::string& words) {
    const std::string m = message_for(schema, args);
    EXPECT_NE(m.find(words), std::string::npos) << m;
    EXPECT_EQ(m.find(".000000"), std::string::npos) << m;
  };
  says(R"({"days": 20})", "/days: must be at most 14, got 20");
  says(R"({"days": 0})", "/days: must be at least 1, got 0");
  says(R"({"t": 0.5})", "/t: must be less than 0.5, got 0.5");
  says(R"({"u": 2})", "/u: must be greater than 2, got 2");
  says(R"({"step": 0.3})", "/step: must be a multiple of 0.25, got 0.3");
  // Lengths count code points (draft-07 §6.3.1): "ü" is one character, two bytes.
  says(R"({"city": "ü"})", "/city: must be at least 2 characters long, got 1");
  says(R"({"city": "Zürich"})", "/city: must be at most 5 characters long, got 6");
  says(R"({"tags": []})", "/tags: must have at least 1 item, got 0");
  says(R"({"tags": [1, 2, 3]})", "/tags: must have at most 2 items, got 3");
  says(R"({"o": {"a": 1, "b": 2}})", "/o: must have at most 1 property, got 2");
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
