// `--warm TRACE`: serve a trace's requests so the entries they need exist
// before a proof (`prove`) or a snapshot (`compile`).
#ifndef SHAPESHIFT_TOOLS_WARM_H_
#define SHAPESHIFT_TOOLS_WARM_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/session.h"
#include "tools/model_loader.h"

namespace shapeshift::tools {

// Serves every request of `trace_spec` (tools/trace.h) with deterministic
// inputs; an error names the request that failed.
absl::Status WarmSession(runtime::Session& session, const std::vector<InputRecipe>& recipes,
                         const std::string& trace_spec);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_WARM_H_
