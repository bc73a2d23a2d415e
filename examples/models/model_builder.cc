#include "examples/models/model_builder.h"

#include <cmath>
#include <numbers>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/shape_inference.h"

namespace shapeshift::examples {

float WeightGenerator::Normal(float stddev) {
  // Box–Muller on two uniform doubles in (0, 1].
  constexpr double kScale = 1.0 / 18446744073709551616.0;  // 2^-64
  double u1 = (static_cast<double>(engine_()) + 1.0) * kScale;
  double u2 = static_cast<double>(engine_()) * kScale;
  double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  return static_cast<float>(z * stddev);
}

int64_t WeightGenerator::UniformInt(int64_t lo, int64_t hi) {
  uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(engine_() % span);
}

ModelBuilder::ModelBuilder(std::string producer, int opset, uint64_t weight_seed)
    : env_(std::make_unique<ShapeEnv>()),
      graph_(std::make_unique<Graph>(opset)),
      producer_(std::move(producer)),
      weights_(weight_seed) {}

SymExpr ModelBuilder::Dim(const std::string& name, DimRange range) {
  SymbolInfo info;
  info.name = name;
  info.min = range.min;
  info.max = range.max;
  absl::StatusOr<SymExpr> s = env_->DeclareSymbol(info);
  if (!s.ok()) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(absl::StrCat("dim '", name, "': ", s.status().message()));
    return SymExpr::Symbol(name);
  }
  return *s;
}

Value* ModelBuilder::Input(const std::string& name, DType dtype, std::vector<SymExpr> shape) {
  return graph_->AddInput(name, TensorType(dtype, std::move(shape)));
}

void ModelBuilder::Output(Value* v) {
  if (ok()) graph_->AddOutput(v);
}

std::string ModelBuilder::NodeName(const std::string& op_type) {
  return absl::StrCat("/", scope_, scope_.empty() ? "" : "/", op_type, "_", node_counter_++);
}

std::string ModelBuilder::ConstName(const std::string& base) {
  return absl::StrCat(base, "_", const_counter_++);
}

Value* ModelBuilder::Constant(const std::string& name, Tensor t) { return graph_->AddConstant(name, std::move(t)); }

Value* ModelBuilder::RandomWeight(const std::string& name, std::vector<int64_t> shape, float stddev) {
  return NoisyFill(name, std::move(shape), 0.0f, stddev);
}

Value* ModelBuilder::NoisyFill(const std::string& name, std::vector<int64_t> shape, float center, float stddev) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) v = center + (stddev > 0 ? weights_.Normal(stddev) : 0.0f);
  return Constant(name, Tensor::FromVector(DType::kF32, std::move(shape), values));
}

Value* ModelBuilder::ScalarF32(float v) { return Constant(ConstName("const_f32"), Tensor::Scalar(v)); }

Value* ModelBuilder::ScalarI64(int64_t v) { return Constant(ConstName("const_i64"), Tensor::ScalarI64(v)); }

Value* ModelBuilder::VectorI64(std::vector<int64_t> values) {
  int64_t n = static_cast<int64_t>(values.size());
  return Constant(ConstName("const_i64"), Tensor::FromVector(DType::kI64, {n}, values));
}

Value* ModelBuilder::Op(const std::string& op_type, std::vector<Value*> inputs, Attributes attrs,
                        const std::string& output_name) {
  if (!ok()) {
    if (placeholder_ == nullptr) placeholder_ = ScalarF32(0);
    return placeholder_;
  }
  std::string name = NodeName(op_type);
  Node* node = graph_->AddNode(op_type, std::move(inputs), 1, std::move(attrs), name, {output_name.empty() ? name + "_output_0" : output_name});
  if (absl::Status s = InferNode(*node, *env_, graph_->opset()); !s.ok()) status_ = s;
  return node->output(0);
}

Value* ModelBuilder::Transpose(Value* x, std::vector<int64_t> perm) {
  Attributes attrs;
  attrs.Set("perm", std::move(perm));
  return Op("Transpose", {x}, std::move(attrs));
}

Value* ModelBuilder::Unsqueeze(Value* x, std::vector<int64_t> axes) { return Op("Unsqueeze", {x, VectorI64(axes)}); }

Value* ModelBuilder::Cast(Value* x, DType to) {
  Attributes attrs;
  attrs.Set("to", static_cast<int64_t>(DTypeToOnnx(to)));
  return Op("Cast", {x}, std::move(attrs));
}

Value* ModelBuilder::DimOf(Value* x, int64_t index) { return Op("Gather", {Op("Shape", {x}), ScalarI64(index)}); }

Value* ModelBuilder::Linear(Value* x, const std::string& name, int64_t in, int64_t out) {
  Value* weight = RandomWeight(name + ".weight", {in, out}, 0.02f);
  Value* bias = NoisyFill(name + ".bias", {out}, 0.0f, 0.02f);
  return Add(MatMul(x, weight), bias);
}

Value* ModelBuilder::LayerNorm(Value* x, const std::string& name, int64_t width, bool decomposed,
                               const std::string& output_name) {
  Value* gamma = NoisyFill(name + ".weight", {width}, 1.0f, 0.02f);
  Value* beta = NoisyFill(name + ".bias", {width}, 0.0f, 0.02f);
  constexpr float kEpsilon = 1e-5f;
  if (!decomposed) {
    Attributes attrs;
    attrs.Set("axis", int64_t{-1});
    attrs.Set("epsilon", kEpsilon);
    return Op("LayerNormalization", {x, gamma, beta}, std::move(attrs), output_name);
  }
  Attributes mean_attrs;
  mean_attrs.Set("axes", std::vector<int64_t>{-1});
  mean_attrs.Set("keepdims", int64_t{1});
  Value* mean = Op("ReduceMean", {x}, mean_attrs);
  Value* centered = Sub(x, mean);
  Value* variance = Op("ReduceMean", {Op("Pow", {centered, ScalarF32(2.0f)})}, mean_attrs);
  Value* stddev = Op("Sqrt", {Add(variance, ScalarF32(kEpsilon))});
  return Op("Add", {Mul(Div(centered, stddev), gamma), beta}, {}, output_name);
}

absl::StatusOr<ImportedModel> ModelBuilder::Finish() {
  if (!status_.ok()) return status_;
  if (absl::Status s = graph_->Verify(); !s.ok()) return s;
  ImportedModel model;
  model.opset = graph_->opset();
  model.producer = producer_;
  model.env = std::move(env_);
  model.graph = std::move(graph_);
  return model;
}

}  // namespace shapeshift::examples
