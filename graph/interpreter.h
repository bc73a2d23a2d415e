// The graph interpreter: runs a Graph on concrete tensors with the reference
// kernels. It is the oracle compiled code and the conformance suite compare
// against, so it checks everything it can and is never clever.
//
// Inputs come in graph-input order. Before running, each input is checked
// against its declared TensorType: dtype, rank, constant dims, and symbolic
// dims — the first input that mentions a symbol binds it, every later
// occurrence must agree (two inputs `[batch, seq]` must have the same seq),
// and derived dims (`2*seq`) must evaluate to the actual size. Each node's
// outputs are then checked against their inferred symbolic shapes under the
// binding, so a wrong shape rule is caught where it happens; symbols that
// stand for data-dependent sizes are bound by the first output that shows
// them.
#ifndef SHAPESHIFT_GRAPH_INTERPRETER_H_
#define SHAPESHIFT_GRAPH_INTERPRETER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "shapes/sym_expr.h"

namespace shapeshift {

// Returns the graph outputs in order; errors name the input or node at fault.
absl::StatusOr<std::vector<Tensor>> Interpret(const Graph& graph,
                                              const std::vector<Tensor>& inputs);

// Binds symbols from `inputs` against the graph's input types (the
// validation step of Interpret, exposed for dispatchers and tests).
absl::StatusOr<Assignment> BindInputSymbols(const Graph& graph,
                                            const std::vector<Tensor>& inputs);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_INTERPRETER_H_
