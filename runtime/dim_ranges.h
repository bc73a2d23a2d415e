// The user's declared dim ranges (`--dim seq=1..512`, CompileOptions::dims)
// applied to a model's symbols: shared by every way a model becomes a
// compiled artifact (runtime::Session, the Python package).
#ifndef SHAPESHIFT_RUNTIME_DIM_RANGES_H_
#define SHAPESHIFT_RUNTIME_DIM_RANGES_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/onnx/importer.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

// InvalidArgument naming `name` and listing the dims the model does have.
absl::Status UnknownDimError(const std::string& name, const ShapeEnv& env);

// A fresh ShapeEnv declaring `env`'s symbols with `dims` overriding their
// ranges (the graph refers to symbols by name, so the new env serves it) and
// `env`'s relations between dims; a hint outside its new range is dropped.
// An unknown name is an error.
absl::StatusOr<std::unique_ptr<ShapeEnv>> RedeclareWithRanges(
    const ShapeEnv& env, const std::map<std::string, DimRange>& dims);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_DIM_RANGES_H_
