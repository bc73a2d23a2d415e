// A BERT-style encoder built the way PyTorch's ONNX exporter writes one, with
// deterministic random weights (BERT init: N(0, 0.02), LayerNorm gamma ≈ 1).
//
// Why exporter style rather than the shortest graph: the compiler has to see
// through what real models contain — Reshape targets computed by
// Shape→Gather→Unsqueeze→Concat chains (one per reshape, every layer), the
// additive mask idiom `(1 - Cast(mask)) * -10000`, GELU written as
// `x * 0.5 * (1 + Erf(x / 1.41421356))`, and optionally LayerNorm decomposed
// into ReduceMean/Sub/Pow/Sqrt/Div (torch's opset-14 export).
//
// Inputs: input_ids i64[batch, seq] (token ids < vocab), attention_mask
// i64[batch, seq] (1 = token, 0 = padding). Output: last_hidden_state
// f32[batch, seq, hidden].
#ifndef SHAPESHIFT_EXAMPLES_MODELS_BERT_H_
#define SHAPESHIFT_EXAMPLES_MODELS_BERT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/onnx/importer.h"
#include "graph/tensor.h"

namespace shapeshift::examples {

struct BertConfig {
  int64_t layers = 4;
  int64_t hidden = 256;
  int64_t heads = 4;
  int64_t intermediate = 1024;
  int64_t vocab = 8192;
  int64_t max_position = 512;
  // LayerNorm as the opset-17 op (false) or torch's opset-14 decomposition.
  bool decomposed_layer_norm = false;
  uint64_t weight_seed = 1234;
  // Declared ranges of the dynamic dims; seq.max must not exceed max_position.
  DimRange batch{1, 8};
  DimRange seq{1, 512};
};

// The model and its ShapeEnv (symbols `batch`, `seq` with the declared
// ranges). An error names the invalid config field or the failing node.
absl::StatusOr<ImportedModel> BuildBert(const BertConfig& config);

// Deterministic inputs {input_ids, attention_mask} for one request:
// ids uniform in [0, vocab); with `padded` the tail of each row after a
// random length (≥ 1) is masked out, otherwise the mask is all ones.
std::vector<Tensor> MakeBertInputs(const BertConfig& config, int64_t batch, int64_t seq, uint64_t seed,
                                   bool padded = false);

}  // namespace shapeshift::examples

#endif  // SHAPESHIFT_EXAMPLES_MODELS_BERT_H_
