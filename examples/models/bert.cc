#include "examples/models/bert.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "examples/models/model_builder.h"

namespace shapeshift::examples {
namespace {

constexpr int kOpset = 17;

absl::Status ValidateConfig(const BertConfig& c) {
  if (c.layers < 1 || c.hidden < 1 || c.heads < 1 || c.intermediate < 1 || c.vocab < 1 || c.max_position < 1) {
    return absl::InvalidArgumentError("BertConfig: layers, hidden, heads, intermediate, vocab and max_position must be >= 1");
  }
  if (c.hidden % c.heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("BertConfig: hidden ", c.hidden, " is not divisible by heads ", c.heads));
  }
  if (c.seq.max > c.max_position) {
    return absl::InvalidArgumentError(
        absl::StrCat("BertConfig: seq range max ", c.seq.max, " exceeds max_position ", c.max_position));
  }
  return absl::OkStatus();
}

// The exporter's reshape target: Concat(Unsqueeze(Gather(Shape(x), 0)),
// Unsqueeze(Gather(Shape(x), 1)), tail) — symbolic batch and seq.
Value* BatchSeqTarget(ModelBuilder& b, Value* x, std::vector<int64_t> tail) {
  Value* batch = b.Unsqueeze(b.DimOf(x, 0), {0});
  Value* seq = b.Unsqueeze(b.DimOf(x, 1), {0});
  Attributes axis;
  axis.Set("axis", int64_t{0});
  return b.Op("Concat", {batch, seq, b.VectorI64(std::move(tail))}, std::move(axis));
}

// [batch, seq, hidden] -> [batch, heads, seq, head_dim] (or, for keys,
// [batch, heads, head_dim, seq] — the exporter folds K's transpose in).
Value* SplitHeads(ModelBuilder& b, Value* x, const BertConfig& c, bool keys) {
  Value* reshaped = b.Op("Reshape", {x, BatchSeqTarget(b, x, {c.heads, c.hidden / c.heads})});
  return b.Transpose(reshaped, keys ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3});
}

Value* GeluErf(ModelBuilder& b, Value* x) {
  Value* erf = b.Op("Erf", {b.Div(x, b.ScalarF32(1.41421356f))});
  return b.Mul(b.Mul(x, b.Add(erf, b.ScalarF32(1.0f))), b.ScalarF32(0.5f));
}

Value* EncoderLayer(ModelBuilder& b, Value* x, Value* mask_bias, const BertConfig& c, int64_t layer,
                    const std::string& output_name) {
  const std::string p = absl::StrCat("encoder.layer.", layer);
  b.SetScope(absl::StrCat("encoder/layer.", layer, "/attention"));
  Value* q = SplitHeads(b, b.Linear(x, p + ".attention.query", c.hidden, c.hidden), c, false);
  Value* k = SplitHeads(b, b.Linear(x, p + ".attention.key", c.hidden, c.hidden), c, true);
  Value* v = SplitHeads(b, b.Linear(x, p + ".attention.value", c.hidden, c.hidden), c, false);
  float scale = std::sqrt(static_cast<float>(c.hidden / c.heads));
  Value* scores = b.Add(b.Div(b.MatMul(q, k), b.ScalarF32(scale)), mask_bias);
  Attributes softmax_axis;
  softmax_axis.Set("axis", int64_t{-1});
  Value* probs = b.Op("Softmax", {scores}, std::move(softmax_axis));
  Value* context = b.Transpose(b.MatMul(probs, v), {0, 2, 1, 3});
  context = b.Op("Reshape", {context, BatchSeqTarget(b, context, {c.hidden})});
  Value* attention = b.Add(b.Linear(context, p + ".attention.output.dense", c.hidden, c.hidden), x);
  x = b.LayerNorm(attention, p + ".attention.output.LayerNorm", c.hidden, c.decomposed_layer_norm);

  b.SetScope(absl::StrCat("encoder/layer.", layer, "/ffn"));
  Value* inner = GeluErf(b, b.Linear(x, p + ".intermediate.dense", c.hidden, c.intermediate));
  Value* out = b.Add(b.Linear(inner, p + ".output.dense", c.intermediate, c.hidden), x);
  return b.LayerNorm(out, p + ".output.LayerNorm", c.hidden, c.decomposed_layer_norm, output_name);
}

}  // namespace

absl::StatusOr<ImportedModel> BuildBert(const BertConfig& c) {
  if (absl::Status s = ValidateConfig(c); !s.ok()) return s;
  ModelBuilder b("shapeshift examples/bert", kOpset, c.weight_seed);
  SymExpr batch = b.Dim("batch", c.batch);
  SymExpr seq = b.Dim("seq", c.seq);
  Value* ids = b.Input("input_ids", DType::kI64, {batch, seq});
  Value* mask = b.Input("attention_mask", DType::kI64, {batch, seq});

  b.SetScope("embeddings");
  Value* word_table = b.RandomWeight("embeddings.word_embeddings.weight", {c.vocab, c.hidden}, 0.02f);
  Value* position_table =
      b.RandomWeight("embeddings.position_embeddings.weight", {c.max_position, c.hidden}, 0.02f);
  Value* words = b.Op("Gather", {word_table, ids});
  Value* positions = b.Unsqueeze(b.Op("Range", {b.ScalarI64(0), b.DimOf(ids, 1), b.ScalarI64(1)}), {0});
  Value* x = b.Add(words, b.Op("Gather", {position_table, positions}));
  x = b.LayerNorm(x, "embeddings.LayerNorm", c.hidden, c.decomposed_layer_norm);

  // (1 - mask) * -10000 as f32, shaped [batch, 1, 1, seq].
  b.SetScope("mask");
  Value* mask_f32 = b.Cast(b.Unsqueeze(mask, {1, 2}), DType::kF32);
  Value* mask_bias = b.Mul(b.Sub(b.ScalarF32(1.0f), mask_f32), b.ScalarF32(-10000.0f));

  for (int64_t layer = 0; layer < c.layers; ++layer) {
    x = EncoderLayer(b, x, mask_bias, c, layer, layer + 1 == c.layers ? "last_hidden_state" : "");
  }
  b.Output(x);
  absl::StatusOr<ImportedModel> model = b.Finish();
  if (!model.ok()) return absl::Status(model.status().code(), absl::StrCat("BuildBert: ", model.status().message()));
  return model;
}

std::vector<Tensor> MakeBertInputs(const BertConfig& config, int64_t batch, int64_t seq, uint64_t seed, bool padded) {
  WeightGenerator rng(seed);
  std::vector<int64_t> ids(static_cast<size_t>(batch * seq));
  for (int64_t& id : ids) id = rng.UniformInt(0, config.vocab - 1);
  std::vector<int64_t> mask(ids.size(), 1);
  if (padded) {
    for (int64_t row = 0; row < batch; ++row) {
      int64_t length = rng.UniformInt(1, seq);
      for (int64_t col = length; col < seq; ++col) mask[static_cast<size_t>(row * seq + col)] = 0;
    }
  }
  return {Tensor::FromVector(DType::kI64, {batch, seq}, ids), Tensor::FromVector(DType::kI64, {batch, seq}, mask)};
}

}  // namespace shapeshift::examples
