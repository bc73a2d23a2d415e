#include "tools/warm.h"

#include "absl/strings/str_cat.h"
#include "tools/trace.h"

namespace shapeshift::tools {

absl::Status WarmSession(runtime::Session& session, const std::vector<InputRecipe>& recipes,
                         const std::string& trace_spec) {
  absl::StatusOr<std::vector<Assignment>> trace = MakeTrace(trace_spec, session.dispatcher().env(), "--warm");
  if (!trace.ok()) return trace.status();
  for (size_t i = 0; i < trace->size(); ++i) {
    absl::StatusOr<std::vector<Tensor>> inputs = MakeInputs(recipes, (*trace)[i], /*seed=*/i + 1);
    if (!inputs.ok()) return inputs.status();
    absl::StatusOr<std::vector<Tensor>> outputs = session.Run(*inputs);
    if (!outputs.ok()) {
      return absl::Status(outputs.status().code(),
                          absl::StrCat("--warm request ", i, " (", FormatRequest((*trace)[i], session.dispatcher().env()),
                                       "): ", outputs.status().message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace shapeshift::tools
