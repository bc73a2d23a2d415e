// Text form of the IR, for `shapeshift inspect --print-ir`, pass debugging
// (print the IR between passes) and test failure messages. One line per node,
// output types with symbolic shapes, propagated shape values shown inline:
//
//   graph opset=14 {
//     input  %input_ids: i64[batch, sequence]
//     const  %w0: f32[64, 64]
//     %shape: i64[3] = Shape(%x)  # Shape_0  values={batch, sequence, 64}
//     %r: f32[batch, sequence, 4, 16] = Reshape(%x, %shape2)  # Reshape_3
//     %y: f32[batch, sequence, 64] = Gemm(%a, %b, %c) {alpha=1, transB=1}  # Gemm_4
//     output %y
//   }
#ifndef SHAPESHIFT_GRAPH_PRINTER_H_
#define SHAPESHIFT_GRAPH_PRINTER_H_

#include <string>

#include "graph/attributes.h"

namespace shapeshift {

class Graph;
class Node;
class Value;

std::string PrintGraph(const Graph& graph);
// One node line (without indentation or newline).
std::string PrintNode(const Node& node);
// `%name: f32[batch, 64]`.
std::string PrintValueDecl(const Value& value);
// `{alpha=1, perm=[0, 2, 1, 3]}`; empty string when there are none.
std::string PrintAttributes(const Attributes& attrs);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_PRINTER_H_
