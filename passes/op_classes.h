// The op classes passes ask about, read from the op table
// (graph/op_table.h): which ops are elementwise (fusable into one loop nest),
// which are views (no data movement), which are matmuls, which inputs are
// shape operands (read at compile time from Value::elements(), never as
// buffers); and which nodes only compute shape values (compile-time nodes:
// they get no group).
#ifndef SHAPESHIFT_PASSES_OP_CLASSES_H_
#define SHAPESHIFT_PASSES_OP_CLASSES_H_

#include "absl/container/flat_hash_set.h"
#include "graph/graph.h"

namespace shapeshift::passes {

// OpClass::kElementwise: unary/binary/variadic math, comparisons, Where, Clip,
// Cast, and the generators Expand, ConstantOfShape and Range.
bool IsElementwiseOp(const Node& node);
// OpClass::kView: Reshape, Squeeze, Unsqueeze, Flatten, Identity.
bool IsViewOp(const Node& node);
// OpClass::kMatmul: MatMul, Gemm.
bool IsMatmulOp(const Node& node);
// True when input `index` of `node` is read as shape parameters (Reshape's
// shape, Slice's starts/ends/axes/steps, Range's start/limit/delta, ...).
bool IsShapeOperand(const Node& node, int index);

// Nodes no kernel needs to run: none of their outputs is a graph output, and
// every read of an output is either a shape operand or a compile-time node
// reading its known elements(), or a compile-time Shape/Size (which reads
// only the type). Shape arithmetic, and values computed only to be measured.
absl::flat_hash_set<const Node*> CompileTimeNodes(const Graph& graph);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_OP_CLASSES_H_
