// How `check` and `inspect` print a CheckTiers answer: one block per tier,
// each naming the node and op of every problem, as text or JSON.
#ifndef SHAPESHIFT_TOOLS_CHECK_REPORT_H_
#define SHAPESHIFT_TOOLS_CHECK_REPORT_H_

#include <cstdio>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "runtime/specialization/compile_tiers.h"

namespace shapeshift::tools {

// The symbols a request binds, in binding order (the dispatcher's slots).
std::vector<std::string> RequestSlots(const Graph& graph);

void PrintTierCheck(FILE* out, const runtime::TierCheck& tier, const std::vector<std::string>& slots);
nlohmann::json TierCheckJson(const runtime::TierCheck& tier, const std::vector<std::string>& slots);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_CHECK_REPORT_H_
