// GraphBuilder: adds nodes and infers their types in one step, so code that
// builds graphs by hand (tests, decompositions, model builders) never holds
// a node whose output types are unset.
//
//   GraphBuilder b(graph, env);
//   Value* x = b.Input("x", TensorType(DType::kF32, {batch, seq, 64}));
//   ASSIGN_OR_RETURN(Value* y, b.Op("MatMul", {x, w}));
//
// Errors (from the shape rule) name the node; the failed node is removed
// again, so the graph stays valid after an error.
#ifndef SHAPESHIFT_GRAPH_BUILDER_H_
#define SHAPESHIFT_GRAPH_BUILDER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift {

class GraphBuilder {
 public:
  GraphBuilder(Graph& graph, ShapeEnv& env) : graph_(graph), env_(env) {}

  Value* Input(const std::string& name, TensorType type) { return graph_.AddInput(name, std::move(type)); }
  Value* Constant(const std::string& name, Tensor value) { return graph_.AddConstant(name, std::move(value)); }
  Value* ScalarI64(int64_t v) { return Constant("", Tensor::ScalarI64(v)); }
  Value* VectorI64(const std::vector<int64_t>& values);
  void Output(Value* v) { graph_.AddOutput(v); }

  // A single-output op; `name` names the node ("" = generated).
  absl::StatusOr<Value*> Op(const std::string& op_type, std::vector<Value*> inputs, Attributes attrs = {},
                            const std::string& name = "");
  // An op with `num_outputs` outputs (Split, LayerNormalization, Dropout).
  absl::StatusOr<std::vector<Value*>> MultiOp(const std::string& op_type, std::vector<Value*> inputs,
                                              int num_outputs, Attributes attrs = {},
                                              const std::string& name = "");

  Graph& graph() { return graph_; }
  ShapeEnv& env() { return env_; }

 private:
  Graph& graph_;
  ShapeEnv& env_;
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_BUILDER_H_
