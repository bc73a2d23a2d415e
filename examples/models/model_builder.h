// ModelBuilder: the small layer the example models (BERT, GPT-2) are written
// in. It wraps a Graph and the ShapeEnv that owns its symbols, names nodes
// the way PyTorch's ONNX exporter does (`/layer0/attn/MatMul`, outputs
// `..._output_0`), draws deterministic weights, and runs shape inference on
// every node as it is added — so a builder bug is reported at the node that
// causes it, not later by a pass.
//
// Errors are sticky: the first failed step is remembered, later steps are
// skipped (they return a placeholder value so builder code stays linear), and
// Finish() returns that first error. Builders therefore read like the model
// they describe instead of a wall of status checks.
#ifndef SHAPESHIFT_EXAMPLES_MODELS_MODEL_BUILDER_H_
#define SHAPESHIFT_EXAMPLES_MODELS_MODEL_BUILDER_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/attributes.h"
#include "graph/graph.h"
#include "graph/onnx/importer.h"
#include "shapes/shape_env.h"
#include "shapes/sym_expr.h"

namespace shapeshift::examples {

// Deterministic N(0, stddev) floats from a fixed seed: std::mt19937_64 is
// specified bit for bit by the standard, and the normal transform is done
// here (Box–Muller) because std::normal_distribution is not.
class WeightGenerator {
 public:
  explicit WeightGenerator(uint64_t seed) : engine_(seed) {}
  float Normal(float stddev);
  // Uniform integer in [lo, hi].
  int64_t UniformInt(int64_t lo, int64_t hi);

 private:
  std::mt19937_64 engine_;
};

class ModelBuilder {
 public:
  ModelBuilder(std::string producer, int opset, uint64_t weight_seed);

  // Declares a dynamic dim `name` with an inclusive range.
  SymExpr Dim(const std::string& name, DimRange range);
  Value* Input(const std::string& name, DType dtype, std::vector<SymExpr> shape);
  void Output(Value* v);

  // Node and value names get `/<scope>/` prefixes (exporter style).
  void SetScope(std::string scope) { scope_ = std::move(scope); }

  // --- Constants (initializers).
  // N(0, stddev) weights.
  Value* RandomWeight(const std::string& name, std::vector<int64_t> shape, float stddev);
  // `center` + N(0, stddev): LayerNorm gamma ≈ 1, small biases.
  Value* NoisyFill(const std::string& name, std::vector<int64_t> shape, float center, float stddev);
  Value* ScalarF32(float v);
  Value* VectorI64(std::vector<int64_t> values);
  Value* ScalarI64(int64_t v);

  // --- Nodes (single output). Shape inference runs on each. The output is
  // named `output_name` when given (graph outputs: `logits`), else generated.
  Value* Op(const std::string& op_type, std::vector<Value*> inputs, Attributes attrs = {},
            const std::string& output_name = "");
  Value* Add(Value* a, Value* b) { return Op("Add", {a, b}); }
  Value* Sub(Value* a, Value* b) { return Op("Sub", {a, b}); }
  Value* Mul(Value* a, Value* b) { return Op("Mul", {a, b}); }
  Value* Div(Value* a, Value* b) { return Op("Div", {a, b}); }
  Value* MatMul(Value* a, Value* b) { return Op("MatMul", {a, b}); }
  Value* Transpose(Value* x, std::vector<int64_t> perm);
  Value* Unsqueeze(Value* x, std::vector<int64_t> axes);
  Value* Cast(Value* x, DType to);
  // `Gather(Shape(x), index)`: one symbolic dim of x as an i64 scalar.
  Value* DimOf(Value* x, int64_t index);
  // x @ weight + bias with weight [in, out] ~ N(0, 0.02), bias ≈ 0.
  Value* Linear(Value* x, const std::string& name, int64_t in, int64_t out);
  // LayerNorm over the last axis: the opset-17 op, or the decomposition
  // torch's opset-14 exporter writes (ReduceMean/Sub/Pow/ReduceMean/Add/
  // Sqrt/Div/Mul/Add), so passes get to recognize it.
  Value* LayerNorm(Value* x, const std::string& name, int64_t width, bool decomposed,
                   const std::string& output_name = "");

  bool ok() const { return status_.ok(); }
  // The built model, or the first error (naming the node at fault).
  absl::StatusOr<ImportedModel> Finish();

 private:
  std::string NodeName(const std::string& op_type);
  std::string ConstName(const std::string& base);
  Value* Constant(const std::string& name, Tensor t);

  std::unique_ptr<ShapeEnv> env_;
  std::unique_ptr<Graph> graph_;
  std::string producer_;
  WeightGenerator weights_;
  absl::Status status_;
  std::string scope_;
  int node_counter_ = 0;
  int const_counter_ = 0;
  Value* placeholder_ = nullptr;  // returned by steps skipped after an error
};

}  // namespace shapeshift::examples

#endif  // SHAPESHIFT_EXAMPLES_MODELS_MODEL_BUILDER_H_
