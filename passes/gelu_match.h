// GELU matching: finds the two GELU decompositions exporters produce,
//
//   erf:  x * 0.5 * (1 + erf(x / √2))                 (x/√2 also as x * 0.7071…)
//   tanh: 0.5 * x * (1 + tanh(√(2/π) * (x + 0.044715 * x³)))   (x³ as Pow(x, 3) or x*x*x)
//
// in any association and operand order of the products, and reports each as
// a GeluMatch (fusion_plan.h). The graph is not rewritten: graph/ has no
// Gelu op (an opset-20 op), so the interpreter could not run it. Fusion uses
// the matches to absorb a GELU into a matmul epilogue (a oneDNN post-op) or
// to let an elementwise kernel call one gelu instead of seven ops.
// A match requires every intermediate value to be used only inside it.
#ifndef SHAPESHIFT_PASSES_GELU_MATCH_H_
#define SHAPESHIFT_PASSES_GELU_MATCH_H_

#include <vector>

#include "graph/graph.h"
#include "passes/fusion_plan.h"

namespace shapeshift::passes {

// Every GELU in `graph`, in topological order of their outputs.
std::vector<GeluMatch> FindGelus(const Graph& graph);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_GELU_MATCH_H_
