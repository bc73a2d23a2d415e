// Which input dims are a decoder's KV-cache length: the dims that may be 0.
//
// An undeclared dim defaults to 1..65536 (importer.h): a positive lower bound
// lets broadcasting and Reshape questions be proven, and a zero-size batch or
// sequence is no request anyone serves. A cache's length is different: a
// generation's first step feeds an empty past (`[batch, heads, 0, head_dim]`,
// as ONNX Runtime GenAI and hand-written loops over Optimum exports do), so
// its dim defaults to 0..65536.
//
// The pattern, as every committed past export has it (both torch exporters):
// a graph input is the first operand of a Concat along one of its named axes,
// and another operand is computed by the graph (the new tokens' keys or
// values). That is "a tensor the graph appends to along that axis", which is
// well defined when the input is empty. Nothing else about the dim is
// assumed: where another node needs the dim positive, the import fails and
// the importer imports again with the usual lower bound (importer.cc), so the
// default only ever widens what a model serves when the whole graph is proven
// on the wider domain.
#ifndef SHAPESHIFT_GRAPH_ONNX_CACHE_DIMS_H_
#define SHAPESHIFT_GRAPH_ONNX_CACHE_DIMS_H_

#include <map>
#include <string>

namespace onnx {
class GraphProto;
}  // namespace onnx

namespace shapeshift {

// The evidence for one cache-length dim: the first input and node showing it.
struct CacheDimSource {
  std::string input;  // the graph input (e.g. `past_key_values.0.key`)
  int axis = 0;       // its axis that the Concat extends
  std::string node;   // the Concat's name
};

// dim_param name → its first evidence, for every dim the pattern above shows
// to be a cache length.
std::map<std::string, CacheDimSource> CacheLengthDims(const onnx::GraphProto& graph);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_ONNX_CACHE_DIMS_H_
