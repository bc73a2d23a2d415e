// ElementEmitter: builds the kernel IR expression for one element of a graph
// Value at a given multi-index, by walking the fused group's nodes.
//
// This is the heart of fusion lowering: an elementwise DAG, a softmax
// prologue (scale, mask), a layer norm's inputs and a reduction's epilogue
// are all "the value of v at index idx", where v is either computed by a node
// inside the group (recursively: the node's op applied to its inputs at their
// broadcast indices) or read from a buffer (a Value defined outside the
// group). Index-remapping ops (Transpose, Reshape/Squeeze/Unsqueeze, Expand,
// RelativePositionExpand: x[.., j - i + S - 1, ..])
// and generators (Range, ConstantOfShape) are expressed the same way, so
// they fuse for free.
//
// Broadcasting follows numpy rules, right-aligned. Whether an input dim
// equals the output dim or is 1 is asked of the ShapeEnv (CanProve), never
// assumed; an undecidable broadcast is an error naming the node.
#ifndef SHAPESHIFT_CODEGEN_LOWER_ELEMENT_EMITTER_H_
#define SHAPESHIFT_CODEGEN_LOWER_ELEMENT_EMITTER_H_

#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "codegen/kernel_ir.h"
#include "codegen/lower/dim_binder.h"
#include "codegen/lower/lowered_step.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::codegen::lower {

// Graph element type → kernel IR type; an error for types kernels do not
// handle (f16, f64, ...), naming `what`.
absl::StatusOr<ScalarType> KernelType(DType dtype, const std::string& what);

class ElementEmitter {
 public:
  // `group_nodes` are the nodes whose outputs are computed inline; every
  // other Value is read from a buffer.
  ElementEmitter(Kernel* kernel, ShapeEnv* env, const std::vector<Node*>& group_nodes);

  DimBinder& dims() { return dims_; }

  // The iteration domain of the kernel being built: a Value whose shape is
  // exactly `model_shape`, read at exactly `idx`, uses `linear` (e.g.
  // p*n + j) instead of re-linearizing the decomposed index.
  void SetDomain(std::vector<SymExpr> model_shape, std::vector<SymExpr> idx, SymExpr linear) {
    domain_shape_ = std::move(model_shape);
    domain_idx_ = std::move(idx);
    domain_linear_ = linear;
  }

  // Row-major linear index of `idx` (kernel space) in `shape` (model space).
  SymExpr Linear(const std::vector<SymExpr>& model_shape, const std::vector<SymExpr>& idx);

  // The multi-index of v (rank = v's rank) that element `idx` of a tensor of
  // shape `target` reads when v broadcasts to `target`.
  absl::StatusOr<std::vector<SymExpr>> BroadcastIndex(const GraphValue* v, const std::vector<SymExpr>& target,
                                                       const std::vector<SymExpr>& idx, const Node* at);

  // v's element at `idx` (v's own rank, kernel-space SymExprs).
  absl::StatusOr<codegen::Value> Emit(const GraphValue* v, const std::vector<SymExpr>& idx);
  // v broadcast to `target` (model shape), element `idx` of the target.
  absl::StatusOr<codegen::Value> EmitBroadcast(const GraphValue* v, const std::vector<SymExpr>& target,
                                               const std::vector<SymExpr>& idx, const Node* at);

  // Makes `v` read as `expr` instead of being computed (e.g. a reduction
  // result held in a kernel variable).
  void Override(const GraphValue* v, codegen::Value expr) { overrides_[v] = std::move(expr); }

  // The buffer a Value defined outside the group is read from (created on
  // first use) and the output buffer a group output is stored to.
  absl::StatusOr<BufferRef> InputBuffer(const GraphValue* v);
  absl::StatusOr<BufferRef> OutputBuffer(const GraphValue* v);
  // Graph Values in Kernel::buffers order.
  const std::vector<const GraphValue*>& buffer_values() const { return buffer_values_; }

 private:
  absl::StatusOr<codegen::Value> EmitNode(const Node* node, const GraphValue* v, const std::vector<SymExpr>& idx);
  absl::StatusOr<codegen::Value> EmitInput(const Node* node, int i, const std::vector<SymExpr>& idx);
  absl::StatusOr<std::vector<SymExpr>> ReshapeIndex(const GraphValue* in, const GraphValue* out,
                                                    const std::vector<SymExpr>& idx);

  Kernel* kernel_;
  ShapeEnv* env_;
  DimBinder dims_;
  absl::flat_hash_set<const Node*> in_group_;
  absl::flat_hash_map<const GraphValue*, codegen::Value> overrides_;
  absl::flat_hash_map<const GraphValue*, int> buffer_of_;
  std::vector<const GraphValue*> buffer_values_;
  std::map<std::pair<int, std::vector<SymExpr>>, codegen::Value> memo_;
  std::vector<SymExpr> domain_shape_;
  std::vector<SymExpr> domain_idx_;
  SymExpr domain_linear_;
};

}  // namespace shapeshift::codegen::lower

#endif  // SHAPESHIFT_CODEGEN_LOWER_ELEMENT_EMITTER_H_
