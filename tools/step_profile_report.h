// `run --profile`: a runtime::StepProfile as the report's `step_profile`
// object (per request: each row's calls, milliseconds and share of the
// request) and as text, slowest rows first.
#ifndef SHAPESHIFT_TOOLS_STEP_PROFILE_REPORT_H_
#define SHAPESHIFT_TOOLS_STEP_PROFILE_REPORT_H_

#include "nlohmann/json.hpp"
#include "runtime/step_profile.h"

namespace shapeshift::tools {

// {"requests": N, "request_ms": per request, "steps_ms": the steps' sum per
//  request, "rows": [{"kind", "label", "calls", "ms", "share"}]}: calls and
// ms per request, share of request_ms.
nlohmann::ordered_json StepProfileJson(const runtime::StepProfile& profile);
// The rows that make up 99% of the steps' time (at least 10), then one line
// for the rest.
void PrintStepProfile(const nlohmann::ordered_json& profile);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_STEP_PROFILE_REPORT_H_
