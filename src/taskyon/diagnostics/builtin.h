// The checks compiled into tycli, the contract tables of DESIGN §7–§9, and the
// contract ids no check covers yet (shown by `tycli diagnostics --list`,
// never run and never counted as PASS). tests/diagnostics_test.cc reads
// DESIGN.md and asserts that every id is covered or listed here, not both,
// and that docs/contracts.md (the users' copy of the table) names each one.
//
// Adding a check: in the checks_*.cc file of its contract group, one
// `add(r, {"R2", "short_name", "what it proves", [](Env& env) { … }});`
// and, for a newly covered contract, its id out of not_yet_covered()
// (docs/diagnostics.md).
#pragma once

#include <string_view>
#include <vector>

#include "taskyon/diagnostics/check.h"

namespace taskyon::diagnostics {

struct Contract {
  std::string_view id;    // "R1"
  std::string_view text;  // the contract, as DESIGN states it
};

// The 60 contracts of DESIGN: §7 (R, T, S, N, P, M), §8 (H), §9 (B), in its order.
const std::vector<Contract>& contracts();

// The contract's text, or empty for an unknown id.
std::string_view contract_text(std::string_view id);

// Contract ids without a check in this build.
const std::vector<std::string_view>& not_yet_covered();

// Every check of this build, in contract order. Built once.
const Registry& builtin();

}  // namespace taskyon::diagnostics
