// Internal to registry/: valijson's descriptions of failed constraints in
// plain words (issue 16: "expected number, got string", not "Value type not
// permitted by 'type' constraint."), from the value that failed and, where it
// can be found simply, the subschema that applied there.
#pragma once

#include <string>
#include <vector>

#include "taskyon/json/json.h"

namespace taskyon::registry::words {

// valijson's path parts ({"<root>", "[num1]", "[0]"}) as plain keys/indices.
std::vector<std::string> path_parts(const std::vector<std::string>& context);

// The value at `parts` in `root`, or null when the path leaves it.
const json::Value* value_at(const json::Value& root, const std::vector<std::string>& parts);

// The subschema of `schema` that applies at `parts`, following only
// "properties", "items" (a schema) and "additionalProperties" (a schema);
// null where $ref, a combinator or a tuple would be needed.
const json::Value* schema_at(const json::Value& schema, const std::vector<std::string>& parts);

// `description` in plain words; `value` and `schema` (either may be null) are
// what failed and what it was checked against. A description this does not
// know is returned as valijson wrote it.
std::string plain(const std::string& description, const json::Value* value, const json::Value* schema);

}  // namespace taskyon::registry::words
