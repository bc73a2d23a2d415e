// Test fixture for shape rules: a ShapeEnv with `batch` in [1, 64] and `seq`
// in [1, 512], a graph to add inputs/constants to, and a one-call way to add
// a node and run its shape rule at a chosen opset.
#ifndef SHAPESHIFT_TESTS_GRAPH_SHAPE_TEST_UTIL_H_
#define SHAPESHIFT_TESTS_GRAPH_SHAPE_TEST_UTIL_H_

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/shape_inference.h"
#include "gtest/gtest.h"
#include "shapes/shape_env.h"

namespace shapeshift::testing {

class ShapeRuleTest : public ::testing::Test {
 protected:
  ShapeRuleTest() {
    batch = env.DeclareSymbol({"batch", 1, 64}).value();
    seq = env.DeclareSymbol({"seq", 1, 512}).value();
  }

  Value* In(std::vector<SymExpr> shape, DType dtype = DType::kF32) {
    return g.AddInput("in" + std::to_string(g.inputs().size()), TensorType(dtype, std::move(shape)));
  }
  Value* Ints(std::vector<int64_t> values, bool scalar = false) {
    std::vector<int64_t> shape;
    if (!scalar) shape.push_back(static_cast<int64_t>(values.size()));
    return g.AddConstant("", Tensor::FromVector<int64_t>(DType::kI64, shape, values));
  }

  // Adds `op` and runs its shape rule; returns the node (check status()).
  Node* Add(const std::string& op, std::vector<Value*> inputs, Attributes attrs = {}, int num_outputs = 1,
            int opset = 17) {
    Node* n = g.AddNode(op, std::move(inputs), num_outputs, std::move(attrs), "n" + std::to_string(g.num_nodes()));
    last_status = InferNode(*n, env, opset);
    return n;
  }
  std::string TypeOf(Node* n, int i = 0) { return n->output(i)->type().ToString(); }
  // The dim evaluated at a point, so tests do not depend on printing order.
  int64_t Eval(SymExpr e, int64_t b, int64_t s) { return e.Evaluate({{"batch", b}, {"seq", s}}).value(); }

  static Attributes Attr(const std::string& name, AttrValue v) {
    Attributes a;
    a.Set(name, std::move(v));
    return a;
  }

  ShapeEnv env;
  Graph g{17};
  SymExpr batch, seq;
  absl::Status last_status;
};

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_GRAPH_SHAPE_TEST_UTIL_H_
