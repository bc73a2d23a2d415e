// Small models built with the graph builder API for runtime tests, and
// helpers to compare compiled outputs with the interpreter.
#ifndef SHAPESHIFT_TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_
#define SHAPESHIFT_TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/shape_inference.h"
#include "graph/tensor.h"
#include "graph/tensor_compare.h"
#include "gtest/gtest.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime::testing {

struct BuiltModel {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<ShapeEnv> env;
};

class ModelBuilder {
 public:
  ModelBuilder() : graph_(std::make_unique<Graph>(17)), env_(std::make_unique<ShapeEnv>()) {}

  SymExpr Dim(const std::string& name, int64_t min, int64_t max) {
    return env_->DeclareSymbol({name, min, max}).value();
  }
  Value* In(const std::string& name, std::vector<SymExpr> shape, DType dtype = DType::kF32) {
    return graph_->AddInput(name, TensorType(dtype, std::move(shape)));
  }
  Value* Weights(std::vector<int64_t> shape, float scale = 0.2f) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng_);
    return graph_->AddConstant("", Tensor::FromVector<float>(DType::kF32, shape, v));
  }
  Value* Scalar(float v) { return graph_->AddConstant("", Tensor::Scalar(v)); }
  Value* Ints(std::vector<int64_t> values) {
    return graph_->AddConstant("", Tensor::FromVector<int64_t>(DType::kI64, {static_cast<int64_t>(values.size())},
                                                                values));
  }
  Value* Op(const std::string& op, std::vector<Value*> inputs, Attributes attrs = {}) {
    Node* n = graph_->AddNode(op, std::move(inputs), 1, std::move(attrs));
    absl::Status s = InferNode(*n, *env_, graph_->opset());
    EXPECT_TRUE(s.ok()) << s;
    return n->output(0);
  }
  // A node named `name` with `num_outputs` outputs (tests that look a node up by name).
  Node* NamedNode(const std::string& name, const std::string& op, std::vector<Value*> inputs, Attributes attrs = {},
                  int num_outputs = 1) {
    Node* n = graph_->AddNode(op, std::move(inputs), num_outputs, std::move(attrs), name);
    absl::Status s = InferNode(*n, *env_, graph_->opset());
    EXPECT_TRUE(s.ok()) << op << ": " << s;
    return n;
  }
  static Attributes Attr(const std::string& name, AttrValue v) {
    Attributes a;
    a.Set(name, std::move(v));
    return a;
  }
  Value* Dense(Value* x, int64_t in, int64_t out) {
    return Op("Add", {Op("MatMul", {x, Weights({in, out})}), Weights({out}, 0.05f)});
  }
  Value* LayerNorm(Value* x, int64_t n) {
    return Op("LayerNormalization", {x, Weights({n}, 1.0f), Weights({n}, 0.1f)}, Attr("epsilon", 1e-5f));
  }
  Value* GeluErf(Value* x) {
    Value* erf = Op("Erf", {Op("Div", {x, Scalar(static_cast<float>(M_SQRT2))})});
    return Op("Mul", {Op("Mul", {x, Op("Add", {erf, Scalar(1)})}), Scalar(0.5f)});
  }
  Graph& graph() { return *graph_; }
  BuiltModel Finish() { return {std::move(graph_), std::move(env_)}; }

 private:
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<ShapeEnv> env_;
  std::mt19937 rng_{1234};
};

// One encoder layer (2 heads of 16) over an embedding lookup:
// inputs ids [batch, seq] i64, mask [batch, seq] i64; output [batch, seq, 32].
inline BuiltModel MiniEncoder(int64_t max_seq = 520) {
  ModelBuilder m;
  SymExpr batch = m.Dim("batch", 1, 4);
  SymExpr seq = m.Dim("seq", 1, max_seq);
  Value* ids = m.In("ids", {batch, seq}, DType::kI64);
  Value* mask = m.In("mask", {batch, seq}, DType::kI64);
  Value* x = m.LayerNorm(m.Op("Gather", {m.Weights({50, 32}, 1.0f), ids}), 32);
  auto heads = [&](Value* v) {
    return m.Op("Transpose", {m.Op("Reshape", {v, m.Ints({0, 0, 2, 16})})},
                ModelBuilder::Attr("perm", std::vector<int64_t>{0, 2, 1, 3}));
  };
  Value* q = heads(m.Dense(x, 32, 32));
  Value* k = heads(m.Dense(x, 32, 32));
  Value* v = heads(m.Dense(x, 32, 32));
  Value* kt = m.Op("Transpose", {k}, ModelBuilder::Attr("perm", std::vector<int64_t>{0, 1, 3, 2}));
  Value* scores = m.Op("Div", {m.Op("MatMul", {q, kt}), m.Scalar(4.0f)});
  Value* m4 = m.Op("Unsqueeze", {m.Op("Unsqueeze", {mask, m.Ints({1})}), m.Ints({2})});
  Value* additive = m.Op("Mul", {m.Op("Sub", {m.Scalar(1), m.Op("Cast", {m4}, ModelBuilder::Attr("to", int64_t{1}))}),
                                 m.Scalar(-10000.0f)});
  Value* probs = m.Op("Softmax", {m.Op("Add", {scores, additive})}, ModelBuilder::Attr("axis", int64_t{-1}));
  Value* context = m.Op("Transpose", {m.Op("MatMul", {probs, v})},
                        ModelBuilder::Attr("perm", std::vector<int64_t>{0, 2, 1, 3}));
  Value* merged = m.Op("Reshape", {context, m.Ints({0, 0, 32})});
  Value* attn = m.LayerNorm(m.Op("Add", {m.Dense(merged, 32, 32), x}), 32);
  Value* ff = m.Dense(m.GeluErf(m.Dense(attn, 32, 64)), 64, 32);
  Value* out = m.LayerNorm(m.Op("Add", {ff, attn}), 32);
  m.graph().AddOutput(out);
  return m.Finish();
}

// Elementwise-only model for dim binding tests: x, y [batch, seq, 8] → relu(x + y).
inline BuiltModel AddRelu() {
  ModelBuilder m;
  SymExpr batch = m.Dim("batch", 1, 8);
  SymExpr seq = m.Dim("seq", 1, 64);
  Value* x = m.In("x", {batch, seq, 8});
  Value* y = m.In("y", {batch, seq, 8});
  m.graph().AddOutput(m.Op("Relu", {m.Op("Add", {x, y})}));
  return m.Finish();
}

inline Tensor RandomF32(std::vector<int64_t> shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return Tensor::FromVector<float>(DType::kF32, shape, v);
}

// Token ids in [0, vocab) and a mask whose tail (padding) is 0 per row.
inline std::vector<Tensor> TokenInputs(int64_t batch, int64_t seq, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> ids(batch * seq), mask(batch * seq);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t valid = 1 + static_cast<int64_t>(rng() % seq);
    for (int64_t s = 0; s < seq; ++s) {
      ids[b * seq + s] = static_cast<int64_t>(rng() % vocab);
      mask[b * seq + s] = s < valid ? 1 : 0;
    }
  }
  return {Tensor::FromVector<int64_t>(DType::kI64, {batch, seq}, ids),
          Tensor::FromVector<int64_t>(DType::kI64, {batch, seq}, mask)};
}

// Max |a - b| under the one comparison rule (graph/tensor_compare.h): NaN
// against NaN counts 0, any other disagreement with a non-finite value or a
// shape/dtype difference counts infinity.
inline double MaxAbsDiff(const Tensor& a, const Tensor& b) { return CompareTensors(a, b).max_abs_error; }

}  // namespace shapeshift::runtime::testing

#endif  // SHAPESHIFT_TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_
