#include "graph/builder.h"

#include "graph/shape_inference.h"

namespace shapeshift {

Value* GraphBuilder::VectorI64(const std::vector<int64_t>& values) {
  return Constant("", Tensor::FromVector<int64_t>(DType::kI64, {static_cast<int64_t>(values.size())}, values));
}

absl::StatusOr<Value*> GraphBuilder::Op(const std::string& op_type, std::vector<Value*> inputs,
                                        Attributes attrs, const std::string& name) {
  absl::StatusOr<std::vector<Value*>> outs = MultiOp(op_type, std::move(inputs), 1, std::move(attrs), name);
  if (!outs.ok()) return outs.status();
  return outs->front();
}

absl::StatusOr<std::vector<Value*>> GraphBuilder::MultiOp(const std::string& op_type, std::vector<Value*> inputs,
                                                          int num_outputs, Attributes attrs,
                                                          const std::string& name) {
  Node* node = graph_.AddNode(op_type, std::move(inputs), num_outputs, std::move(attrs), name);
  if (absl::Status s = InferNode(*node, env_, graph_.opset()); !s.ok()) {
    // The outputs are unused (just created), so removal cannot fail.
    graph_.RemoveNode(node).IgnoreError();
    return s;
  }
  return node->outputs();
}

}  // namespace shapeshift
