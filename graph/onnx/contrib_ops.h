// ONNX Runtime's fused ops, as its transformer optimizer writes them
// (`python -m onnxruntime.transformers.optimizer`, Optimum's O1–O3), expanded
// into default-domain ops of the model's own opset, in the forms the torch
// exporter writes, so a model optimized for ORT imports as the model it was
// made from and shapeshift's own passes fuse it again
// (passes/gelu_recognition.h, layer_norm_recognition.h); a bundle exports it
// as a valid model of that opset. The expansions, after ORT's com.microsoft
// contrib op definitions:
//
//   Gelu(X)                  -> x * (1 + erf(x / sqrt 2)) * 0.5
//   BiasGelu(A, B)           -> the same of A + B
//   FastGelu(X[, bias])      -> x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) * 0.5,
//                               x = X [+ bias]
//   SkipLayerNormalization(input, skip, gamma[, beta[, bias]]) {epsilon}
//       sum = input + skip [+ bias]
//       output = LayerNormalization(sum, gamma[, beta], axis=-1, epsilon)
//                (opset < 17: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add)
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
// expansion in default-domain ops of `opset`; the new values' names start
// with the node's first output name and `/shapeshift_`, the scalar constants
// are initializers `shapeshift_contrib_constant_N`. Returns how many nodes of
// each op type it expanded.
std::map<std::string, int> ExpandContribOps(onnx::GraphProto& graph, int opset);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_ONNX_CONTRIB_OPS_H_
