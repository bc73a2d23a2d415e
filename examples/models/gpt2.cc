#include "examples/models/gpt2.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "examples/models/model_builder.h"

namespace shapeshift::examples {
namespace {

constexpr int kOpset = 17;

absl::Status ValidateConfig(const Gpt2Config& c) {
  if (c.layers < 1 || c.hidden < 1 || c.heads < 1 || c.vocab < 1 || c.max_position < 1) {
    return absl::InvalidArgumentError("Gpt2Config: layers, hidden, heads, vocab and max_position must be >= 1");
  }
  if (c.hidden % c.heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gpt2Config: hidden ", c.hidden, " is not divisible by heads ", c.heads));
  }
  int64_t longest = c.seq.max + (c.kv_cache ? c.past.max : 0);
  if (longest > c.max_position) {
    return absl::InvalidArgumentError(absl::StrCat("Gpt2Config: the longest sequence (", longest,
                                                   ") exceeds max_position ", c.max_position));
  }
  return absl::OkStatus();
}

// Everything the blocks share: the dims as i64 scalars from Shape→Gather,
// and the causal mask.
struct Context {
  Value* batch = nullptr;
  Value* seq = nullptr;
  Value* allowed = nullptr;  // bool[seq, past + seq]: key j visible to query i
};

Attributes Axis(int64_t axis) {
  Attributes attrs;
  attrs.Set("axis", axis);
  return attrs;
}

// x [batch, seq, hidden] -> [batch, heads, seq, head_dim].
Value* SplitHeads(ModelBuilder& b, const Context& ctx, Value* x, const Gpt2Config& c) {
  Value* target = b.Op("Concat",
                       {b.Unsqueeze(ctx.batch, {0}), b.Unsqueeze(ctx.seq, {0}), b.VectorI64({c.heads, c.hidden / c.heads})},
                       Axis(0));
  return b.Transpose(b.Op("Reshape", {x, target}), {0, 2, 1, 3});
}

Value* GeluTanh(ModelBuilder& b, Value* x) {
  Value* cube = b.Op("Pow", {x, b.ScalarF32(3.0f)});
  Value* inner = b.Mul(b.Add(x, b.Mul(cube, b.ScalarF32(0.044715f))), b.ScalarF32(0.7978845608f));
  Value* tanh = b.Op("Tanh", {inner});
  return b.Mul(b.Mul(x, b.ScalarF32(0.5f)), b.Add(tanh, b.ScalarF32(1.0f)));
}

// One layer's KV cache: inputs, and the outputs Block sets (nullptr without a cache).
struct KvCache {
  Value* past_key = nullptr;
  Value* past_value = nullptr;
  Value* present_key = nullptr;
  Value* present_value = nullptr;
};

Value* Block(ModelBuilder& b, const Context& ctx, Value* x, const Gpt2Config& c, int64_t layer, KvCache& io) {
  const std::string p = absl::StrCat("h.", layer);
  b.SetScope(absl::StrCat("h.", layer, "/attn"));
  Value* a = b.LayerNorm(x, p + ".ln_1", c.hidden, c.decomposed_layer_norm);
  Value* q = SplitHeads(b, ctx, b.Linear(a, p + ".attn.c_attn.q", c.hidden, c.hidden), c);
  Value* k = SplitHeads(b, ctx, b.Linear(a, p + ".attn.c_attn.k", c.hidden, c.hidden), c);
  Value* v = SplitHeads(b, ctx, b.Linear(a, p + ".attn.c_attn.v", c.hidden, c.hidden), c);
  if (io.past_key != nullptr) {
    k = io.present_key = b.Op("Concat", {io.past_key, k}, Axis(2), absl::StrCat("present_key_", layer));
    v = io.present_value = b.Op("Concat", {io.past_value, v}, Axis(2), absl::StrCat("present_value_", layer));
  }
  float scale = std::sqrt(static_cast<float>(c.hidden / c.heads));
  Value* scores = b.Div(b.MatMul(q, b.Transpose(k, {0, 1, 3, 2})), b.ScalarF32(scale));
  scores = b.Op("Where", {ctx.allowed, scores, b.ScalarF32(-10000.0f)});
  Value* probs = b.Op("Softmax", {scores}, Axis(-1));
  Value* merged = b.Transpose(b.MatMul(probs, v), {0, 2, 1, 3});
  Value* target = b.Op("Concat", {b.Unsqueeze(ctx.batch, {0}), b.Unsqueeze(ctx.seq, {0}), b.VectorI64({c.hidden})},
                       Axis(0));
  merged = b.Op("Reshape", {merged, target});
  x = b.Add(x, b.Linear(merged, p + ".attn.c_proj", c.hidden, c.hidden));

  b.SetScope(absl::StrCat("h.", layer, "/mlp"));
  Value* m = b.LayerNorm(x, p + ".ln_2", c.hidden, c.decomposed_layer_norm);
  m = GeluTanh(b, b.Linear(m, p + ".mlp.c_fc", c.hidden, 4 * c.hidden));
  return b.Add(x, b.Linear(m, p + ".mlp.c_proj", 4 * c.hidden, c.hidden));
}

}  // namespace

absl::StatusOr<ImportedModel> BuildGpt2(const Gpt2Config& c) {
  if (absl::Status s = ValidateConfig(c); !s.ok()) return s;
  ModelBuilder b(c.kv_cache ? "shapeshift examples/gpt2-kv" : "shapeshift examples/gpt2", kOpset, c.weight_seed);
  SymExpr batch = b.Dim("batch", c.batch);
  SymExpr seq = b.Dim("seq", c.seq);
  Value* ids = b.Input("input_ids", DType::kI64, {batch, seq});
  std::vector<KvCache> caches(static_cast<size_t>(c.layers));
  if (c.kv_cache) {
    SymExpr past = b.Dim("past", c.past);
    for (int64_t i = 0; i < c.layers; ++i) {
      std::vector<SymExpr> shape = {batch, c.heads, past, c.hidden / c.heads};
      caches[i].past_key = b.Input(absl::StrCat("past_key_", i), DType::kF32, shape);
      caches[i].past_value = b.Input(absl::StrCat("past_value_", i), DType::kF32, shape);
    }
  }

  b.SetScope("prologue");
  Context ctx;
  ctx.batch = b.DimOf(ids, 0);
  ctx.seq = b.DimOf(ids, 1);
  Value* start = c.kv_cache ? b.DimOf(caches[0].past_key, 2) : b.ScalarI64(0);
  Value* end = b.Add(start, ctx.seq);
  Value* positions = b.Op("Range", {start, end, b.ScalarI64(1)});  // [seq]: past .. past+seq-1
  Value* keys = b.Op("Range", {b.ScalarI64(0), end, b.ScalarI64(1)});  // [past + seq]
  ctx.allowed = b.Op("LessOrEqual", {b.Unsqueeze(keys, {0}), b.Unsqueeze(positions, {1})});

  Value* wte = b.RandomWeight("wte.weight", {c.vocab, c.hidden}, 0.02f);
  Value* wpe = b.RandomWeight("wpe.weight", {c.max_position, c.hidden}, 0.01f);
  Value* x = b.Add(b.Op("Gather", {wte, ids}), b.Op("Gather", {wpe, b.Unsqueeze(positions, {0})}));
  for (int64_t layer = 0; layer < c.layers; ++layer) x = Block(b, ctx, x, c, layer, caches[layer]);

  b.SetScope("lm_head");
  x = b.LayerNorm(x, "ln_f", c.hidden, c.decomposed_layer_norm);
  Value* lm_head = b.RandomWeight("lm_head.weight", {c.hidden, c.vocab}, 0.02f);
  b.Output(b.Op("MatMul", {x, lm_head}, {}, "logits"));
  if (c.kv_cache) {
    for (const KvCache& cache : caches) {
      b.Output(cache.present_key);
      b.Output(cache.present_value);
    }
  }
  absl::StatusOr<ImportedModel> model = b.Finish();
  if (!model.ok()) return absl::Status(model.status().code(), absl::StrCat("BuildGpt2: ", model.status().message()));
  return model;
}

std::vector<Tensor> MakeGpt2Inputs(const Gpt2Config& config, int64_t batch, int64_t seq, int64_t past,
                                   uint64_t seed) {
  WeightGenerator rng(seed);
  std::vector<int64_t> ids(static_cast<size_t>(batch * seq));
  for (int64_t& id : ids) id = rng.UniformInt(0, config.vocab - 1);
  std::vector<Tensor> inputs = {Tensor::FromVector(DType::kI64, {batch, seq}, ids)};
  if (!config.kv_cache) return inputs;
  int64_t head_dim = config.hidden / config.heads;
  std::vector<int64_t> shape = {batch, config.heads, past, head_dim};
  std::vector<float> values(static_cast<size_t>(batch * config.heads * past * head_dim));
  for (int64_t i = 0; i < 2 * config.layers; ++i) {
    for (float& v : values) v = rng.Normal(1.0f);
    inputs.push_back(Tensor::FromVector(DType::kF32, shape, values));
  }
  return inputs;
}

}  // namespace shapeshift::examples
