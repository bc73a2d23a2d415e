// A GPT-2-style decoder built the way PyTorch's ONNX exporter writes one,
// with deterministic random weights (N(0, 0.02), LayerNorm gamma ≈ 1).
//
// Pre-LayerNorm blocks; causal self-attention whose mask is computed from
// shapes at run time (Range/LessOrEqual → Where with -10000, the idiom of
// HF's exported GPT-2); GELU in the tanh form
// `0.5 * x * (1 + Tanh(0.79788456 * (x + 0.044715 * Pow(x, 3))))`; a final
// LayerNorm and an untied LM head. q/k/v are three projections (GPT-2's fused
// Conv1D c_attn split into its three parts).
//
// Inputs: input_ids i64[batch, seq]. With `kv_cache`, also past_key_<i> and
// past_value_<i> f32[batch, heads, past, head_dim] per layer: new keys and
// values are concatenated after them, positions and the causal mask are
// offset by `past`, and present_key_<i> / present_value_<i>
// f32[batch, heads, past + seq, head_dim] are extra outputs. past = 0 is
// allowed (empty cache tensors).
//
// Output: logits f32[batch, seq, vocab] (then the present_* outputs).
#ifndef SHAPESHIFT_EXAMPLES_MODELS_GPT2_H_
#define SHAPESHIFT_EXAMPLES_MODELS_GPT2_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/onnx/importer.h"
#include "graph/tensor.h"

namespace shapeshift::examples {

struct Gpt2Config {
  int64_t layers = 4;
  int64_t hidden = 256;
  int64_t heads = 4;
  int64_t vocab = 8192;
  int64_t max_position = 1024;
  bool kv_cache = false;
  // LayerNorm as the opset-17 op (false) or torch's opset-14 decomposition.
  bool decomposed_layer_norm = false;
  uint64_t weight_seed = 4321;
  // Declared ranges; past is used only with kv_cache. past.max + seq.max
  // must not exceed max_position.
  DimRange batch{1, 8};
  DimRange seq{1, 512};
  DimRange past{0, 511};
};

// The model and its ShapeEnv (symbols `batch`, `seq` and, with kv_cache,
// `past`). An error names the invalid config field or the failing node.
absl::StatusOr<ImportedModel> BuildGpt2(const Gpt2Config& config);

// Deterministic inputs for one request in graph-input order: input_ids
// uniform in [0, vocab), then (kv_cache) past_key_i / past_value_i ~ N(0, 1).
std::vector<Tensor> MakeGpt2Inputs(const Gpt2Config& config, int64_t batch, int64_t seq, int64_t past,
                                   uint64_t seed);

}  // namespace shapeshift::examples

#endif  // SHAPESHIFT_EXAMPLES_MODELS_GPT2_H_
