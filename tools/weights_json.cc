#include "tools/weights_json.h"

namespace shapeshift::tools {

nlohmann::ordered_json WeightsJson(const runtime::Session& session, const runtime::ProgramStats* program) {
  const runtime::WeightsPlacement& w = session.weights();
  return {{"dir", w.dir},
          {"spilled_constants", w.constants},
          {"spilled_bytes", w.bytes},
          {"released_bytes", program != nullptr ? program->released_weight_bytes : 0}};
}

}  // namespace shapeshift::tools
