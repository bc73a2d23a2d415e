// Fixture for pass tests: a ShapeEnv with `batch` in [1, 8] and `seq` in
// [1, 64], a graph, one-call node building (shape rule run at once), and a
// check that the interpreter gives the same outputs before and after a pass
// (the graph is copied by re-running the same builder lambda).
#ifndef SHAPESHIFT_TESTS_PASSES_PASS_TEST_UTIL_H_
#define SHAPESHIFT_TESTS_PASSES_PASS_TEST_UTIL_H_

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/interpreter.h"
#include "graph/shape_inference.h"
#include "graph/tensor_compare.h"
#include "gtest/gtest.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes::testing {

class PassTest : public ::testing::Test {
 protected:
  PassTest() {
    batch = env.DeclareSymbol({"batch", 1, 8}).value();
    seq = env.DeclareSymbol({"seq", 1, 64}).value();
  }

  Value* In(const std::string& name, std::vector<SymExpr> shape, DType dtype = DType::kF32) {
    return g.AddInput(name, TensorType(dtype, std::move(shape)));
  }
  Value* Scalar(float v) { return g.AddConstant("", Tensor::Scalar(v)); }
  Value* Floats(std::vector<int64_t> shape, std::vector<float> values) {
    return g.AddConstant("", Tensor::FromVector<float>(DType::kF32, std::move(shape), values));
  }
  Value* Ints(std::vector<int64_t> values) {
    return g.AddConstant("", Tensor::FromVector<int64_t>(DType::kI64, {static_cast<int64_t>(values.size())}, values));
  }
  // Adds `op`, runs its shape rule (asserting success) and returns output 0.
  Value* Op(const std::string& op, std::vector<Value*> inputs, Attributes attrs = {}, int num_outputs = 1) {
    Node* n = g.AddNode(op, std::move(inputs), num_outputs, std::move(attrs));
    absl::Status s = InferNode(*n, env, g.opset());
    EXPECT_TRUE(s.ok()) << s;
    return n->output(0);
  }
  static Attributes Attr(const std::string& name, AttrValue v) {
    Attributes a;
    a.Set(name, std::move(v));
    return a;
  }
  int Count(const std::string& op) const {
    int n = 0;
    for (const Node* node : g.nodes()) n += node->op_type() == op;
    return n;
  }

  // Random f32 data for a concrete shape.
  static Tensor Random(std::vector<int64_t> shape, uint32_t seed) {
    Tensor t = Tensor::Zeros(DType::kF32, std::move(shape)).value();
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (int64_t i = 0; i < t.num_elements(); ++i) t.mutable_data<float>()[i] = dist(rng);
    return t;
  }

  ShapeEnv env;
  Graph g{17};
  SymExpr batch, seq;
};

// Max |a - b| under the one comparison rule (graph/tensor_compare.h): NaN
// against NaN counts 0, any other disagreement with a non-finite value or a
// shape/dtype difference counts infinity.
inline double MaxAbsDiff(const Tensor& a, const Tensor& b) { return CompareTensors(a, b).max_abs_error; }

// Runs `graph` on `inputs` and compares with `expected` outputs.
inline void ExpectOutputs(const Graph& graph, const std::vector<Tensor>& inputs,
                          const std::vector<Tensor>& expected, double tolerance = 1e-5) {
  absl::StatusOr<std::vector<Tensor>> got = Interpret(graph, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ((*got)[i].shape(), expected[i].shape()) << "output " << i;
    EXPECT_LE(MaxAbsDiff((*got)[i], expected[i]), tolerance) << "output " << i;
  }
}

}  // namespace shapeshift::passes::testing

#endif  // SHAPESHIFT_TESTS_PASSES_PASS_TEST_UTIL_H_
