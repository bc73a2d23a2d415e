// Where a session's weights live (SessionOptions::weights_dir,
// graph/constant_spill.h), as `run --json`'s `weights` object and the Python
// package's InferenceSession.weights(): the spill directory (empty: in
// memory), how many constants and bytes it holds, and how many bytes the
// polymorphic program gave back once packed.
#ifndef SHAPESHIFT_TOOLS_WEIGHTS_JSON_H_
#define SHAPESHIFT_TOOLS_WEIGHTS_JSON_H_

#include "nlohmann/json.hpp"
#include "runtime/program.h"
#include "runtime/session.h"

namespace shapeshift::tools {

// `program`: the stats of the program whose given-back bytes are reported
// (null: none).
nlohmann::ordered_json WeightsJson(const runtime::Session& session, const runtime::ProgramStats* program);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_WEIGHTS_JSON_H_
