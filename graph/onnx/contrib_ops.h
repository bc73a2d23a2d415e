// ONNX Runtime's fused ops, as its transformer optimizer writes them
// (`python -m onnxruntime.transformers.optimizer`, Optimum's O1–O3), expanded
// into the default-domain ops they fuse, so a model optimized for ORT imports
// as the model it was made from; shapeshift's own passes fuse it again
// (layer norm, GELU epilogues). The expansions, ORT's com.microsoft contrib
// op definitions:
//
//   Gelu(X)                           -> Gelu(X)                      (erf)
//   BiasGelu(A, B)                    -> Gelu(A + B)
//   FastGelu(X[, bias])               -> Gelu(X [+ bias], approximate="tanh")
//   SkipLayerNormalization(input, skip, gamma[, beta[, bias]]) {epsilon}
//       sum = input + skip [+ bias]
//       output = LayerNormalization(sum, gamma[, beta], axis=-1, epsilon)
//     outputs: output, mean, inv_std_var, input_skip_bias_sum (= sum)
//
// A form not listed (SkipLayerNormalization's mean or inv_std_var output
// used, another com.microsoft op) stays as it is: the importer reports it as
// unsupported, naming the node. One predicate (IsExpandableContribOp)
// decides both what the importer expands and what `inspect`'s summary counts
// as supported.
#ifndef SHAPESHIFT_GRAPH_ONNX_CONTRIB_OPS_H_
#define SHAPESHIFT_GRAPH_ONNX_CONTRIB_OPS_H_

#include <map>
#include <string>

namespace onnx {
class GraphProto;
class NodeProto;
}  // namespace onnx

namespace shapeshift {

// Whether ExpandContribOps replaces `node`.
bool IsExpandableContribOp(const onnx::NodeProto& node);

// Replaces every expandable node of `graph` (in place, in node order) by its
// expansion; the new values' names start with the node's first output name
// and `/shapeshift_`. Returns how many nodes of each op type it expanded.
std::map<std::string, int> ExpandContribOps(onnx::GraphProto& graph);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_ONNX_CONTRIB_OPS_H_
