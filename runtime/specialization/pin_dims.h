// PinDims: rewrites a graph so that chosen symbols are constants everywhere.
//
// Why: a static artifact serves exactly one shape, so its code should be the
// code a static-shape compiler would emit — oneDNN primitives with static
// dims (which pick different, sometimes much faster, implementations),
// loops with constant trip counts, no size tape work for those dims. Telling
// the ShapeEnv `seq` is 37 is not enough: the graph's value types and shape
// values still say `seq`, and lowering reads those. So before the static
// compile, every occurrence of a pinned symbol in every value's type and
// tracked shape value is replaced by its constant. Sound only together with
// the entry's guard `seq == 37` (the dispatcher records it first).
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_PIN_DIMS_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_PIN_DIMS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "graph/graph.h"

namespace shapeshift::runtime {

// Substitutes `pins` (symbol → value) in the types and shape values of every
// graph input, constant and node output of `graph`. An error names a value
// whose pinned dim would be negative.
absl::Status PinDims(Graph& graph, const std::map<std::string, int64_t>& pins);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_PIN_DIMS_H_
