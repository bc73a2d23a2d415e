// Data-movement ops as compiled kernels: Gather on any axis of any tensor
// (an activation indexed by a scalar, a table indexed by computed ids),
// GatherElements, GatherND, ScatterND, Tile and Trilu. Each is one kernel over its
// output, shape-polymorphic like every other: sizes are kernel dims bound
// per request.
//
// Data-dependent addressing reads through `LoadAt` (gathers) or writes
// through `StoreAt` (ScatterND) with an index value computed from the
// indices buffer. Two layers keep it inside
// the data: an IndexCheckCall before the kernel fails the request naming the
// node and the offending index (what the interpreter and ONNX Runtime do),
// and the kernel clamps every index into [0, dim) so that no input, however
// the steps are reordered later, can read outside the buffer.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/lower/element_emitter.h"
#include "codegen/lower/lower_group.h"
#include "codegen/lower/lower_util.h"
#include "codegen/lower/row_loop.h"
#include "graph/dtype.h"

namespace shapeshift::codegen::lower {
namespace {

constexpr char kPass[] = "codegen";

absl::Status NodeError(const Node* node, absl::string_view why) {
  return absl::UnimplementedError(
      absl::StrCat("cannot lower node '", node->name(), "' (", node->op_type(), "): ", why));
}

// Kernels here compute nothing inline (every graph value is a buffer): the
// op's semantics are spelled out in each lowering.
using Builder = KernelBuilder;

// An index read from data, as i64, wrapped from the end when negative and
// clamped into [0, dim) (`dim` in kernel space). The clamp never changes a
// checked index; it only guarantees the address.
Value ClampedIndex(Value id, SymExpr dim) {
  if (id->type != ScalarType::kI64) id = Cast(ScalarType::kI64, id);
  Value n = IndexValue(dim);
  Value wrapped = Select(Compare(CompareOp::kLt, id, I64(0)), id + n, id);
  return Max(Binary(BinaryOp::kMin, wrapped, n - I64(1)), I64(0));
}

absl::StatusOr<int64_t> Axis(const Node* node, int64_t rank) {
  absl::StatusOr<int64_t> axis = node->attrs().GetInt("axis", 0);
  if (!axis.ok()) return axis.status();
  int64_t a = *axis < 0 ? *axis + rank : *axis;
  if (a < 0 || a >= rank) return NodeError(node, absl::StrCat("axis ", *axis, " is out of range for rank ", rank));
  return a;
}

absl::Status CheckIndexType(const Node* node, const GraphValue* indices) {
  DType t = indices->type().dtype;
  if (t != DType::kI64 && t != DType::kI32) return NodeError(node, "indices must be i64 or i32");
  return absl::OkStatus();
}

// The buffer the index check reads: the gather's indices, or, when the
// group computes them inline from a relative-position vector (fusion's
// RelativePositionExpand and Expand chain: every element of the
// vector is read by some index, passes/fusion.h), that vector, which holds
// exactly the same index values in (S + T - 1) elements instead of S * T.
const GraphValue* IndexRoot(const Node* node, const std::vector<Node*>& group) {
  const GraphValue* v = node->input(1);
  for (const Node* p = v->producer(); p != nullptr && p != node &&
                                      std::find(group.begin(), group.end(), p) != group.end();
       p = v->producer()) {
    v = p->input(0);
  }
  return v;
}

IndexCheckCall Check(const Node* node, std::vector<SymExpr> dims, std::vector<int64_t> axes,
                     const std::vector<Node*>& group = {}) {
  IndexCheckCall check;
  check.indices = IndexRoot(node, group);
  check.dims = std::move(dims);
  check.axes = std::move(axes);
  check.node_name = node->name();
  check.op_type = node->op_type();
  return check;
}

// Whether every index of a constant `indices` is provably inside its axis
// for every input in the domain (BERT's CLS pick: index 0 of a sequence of
// at least 1), so the per-request check can be left out.
bool ProvablyInRange(const IndexCheckCall& check, ShapeEnv* env) {
  const Tensor* t = check.indices->constant();
  constexpr int64_t kMaxProved = 64;  // a few compile-time questions, not one per table row
  if (t == nullptr || t->num_elements() > kMaxProved) return false;
  for (int64_t i = 0; i < t->num_elements(); ++i) {
    SymExpr id = t->GetAsInt64(i);
    SymExpr dim = check.dims[i % check.dims.size()];
    if (!env->CanProve(Predicate::Lt(id, dim)) || !env->CanProve(Predicate::Le(SymExpr(0) - dim, id))) return false;
  }
  return true;
}

// The kernel's steps: the index check (unless provably unneeded), then the kernel.
std::vector<LoweredStep> CheckedKernel(IndexCheckCall check, KernelCall kernel, ShapeEnv* env) {
  std::vector<LoweredStep> steps;
  if (!ProvablyInRange(check, env)) steps.push_back(std::move(check));
  steps.push_back(std::move(kernel));
  return steps;
}

// The end both axis gathers share: out[o] = data[data_at, with the axis
// replaced by the clamped index `id`], stored by the row loop, after the
// index check on that axis.
absl::StatusOr<std::vector<LoweredStep>> FinishAxisGather(const Node* node, ShapeEnv* env, Builder& b,
                                                          const RowLoop& loop, int64_t axis, Value id,
                                                          const std::vector<SymExpr>& data_at,
                                                          const std::vector<Node*>& group) {
  const GraphValue* data = node->input(0);
  const std::vector<SymExpr>& d = data->type().shape;
  SS_ASSIGN_OR_RETURN(table, b.em.InputBuffer(data));
  SymExpr stride = b.em.dims().Bind(Product(d, axis + 1, d.size()));
  Value at = IndexValue(b.em.Linear(d, data_at)) + ClampedIndex(id, b.em.dims().Bind(d[axis])) * IndexValue(stride);
  SS_ASSIGN_OR_RETURN(y, b.em.OutputBuffer(node->output(0)));
  b.call->kernel.body = {Loop(kInnerVar, 0, loop.n, {Store(y, loop.linear, LoadAt(table, at))})};
  return CheckedKernel(Check(node, {d[axis]}, {axis}, group), b.Take(), env);
}

// out[o_pre, o_idx, o_post] = data[o_pre, indices[o_idx], o_post].
// `group`: the gather's group; nodes other than the gather compute its
// indices inline (a relative-position index, see IndexRoot).
absl::StatusOr<std::vector<LoweredStep>> LowerGatherAxis(const Node* node, const std::vector<Node*>& group,
                                                         ShapeEnv* env) {
  const GraphValue* data = node->input(0);
  const GraphValue* indices = node->input(1);
  const GraphValue* out = node->output(0);
  if (absl::Status s = CheckIndexType(node, indices); !s.ok()) return s;
  const std::vector<SymExpr>& d = data->type().shape;
  const int64_t q = indices->type().rank();
  SS_ASSIGN_OR_RETURN(axis, Axis(node, static_cast<int64_t>(d.size())));
  Builder b(env, group, "gather");
  RowLoop loop = MakeRowLoop(&b.call->kernel, &b.em, out->type().shape, 1);
  std::vector<SymExpr> idx_at(loop.idx.begin() + axis, loop.idx.begin() + axis + q);
  SS_ASSIGN_OR_RETURN(id, b.em.Emit(indices, idx_at));
  std::vector<SymExpr> data_at(loop.idx.begin(), loop.idx.begin() + axis);
  data_at.push_back(0);
  data_at.insert(data_at.end(), loop.idx.begin() + axis + q, loop.idx.end());
  return FinishAxisGather(node, env, b, loop, axis, id, data_at, group);
}

// out[o] = data[o with o[axis] replaced by indices[o]]; indices may be
// smaller than the data on the other axes (never larger: asked below).
absl::StatusOr<std::vector<LoweredStep>> LowerGatherElements(const Node* node, const std::vector<Node*>& group,
                                                             ShapeEnv* env) {
  const GraphValue* data = node->input(0);
  const GraphValue* indices = node->input(1);
  const GraphValue* out = node->output(0);
  if (absl::Status s = CheckIndexType(node, indices); !s.ok()) return s;
  const std::vector<SymExpr>& d = data->type().shape;
  const std::vector<SymExpr>& q = indices->type().shape;
  if (d.size() != q.size()) return NodeError(node, "data and indices must have the same rank");
  SS_ASSIGN_OR_RETURN(axis, Axis(node, static_cast<int64_t>(d.size())));
  for (size_t k = 0; k < d.size(); ++k) {
    if (static_cast<int64_t>(k) == axis || q[k] == d[k]) continue;
    Provenance why{kPass, node->name(), "GatherElements indices within the data on the other axes"};
    if (!IsTrue(env->Query(Predicate::Le(q[k], d[k]), why))) {
      return NodeError(node, absl::StrCat("cannot prove that dim ", k, " of the indices (", q[k].ToString(),
                                          ") is at most the data's (", d[k].ToString(), ")"));
    }
  }
  Builder b(env, group, "gather_elements");
  RowLoop loop = MakeRowLoop(&b.call->kernel, &b.em, out->type().shape, 1);
  SS_ASSIGN_OR_RETURN(id, b.em.Emit(indices, loop.idx));
  std::vector<SymExpr> data_at = loop.idx;
  data_at[axis] = 0;
  return FinishAxisGather(node, env, b, loop, axis, id, data_at, group);
}

// out[o_batch, o_mid, o_rest] = data[o_batch, indices[o_batch, o_mid, :], o_rest]
// with batch_dims leading dims shared and each index tuple of static length k.
absl::StatusOr<std::vector<LoweredStep>> LowerGatherND(const Node* node, ShapeEnv* env) {
  const GraphValue* data = node->input(0);
  const GraphValue* indices = node->input(1);
  const GraphValue* out = node->output(0);
  if (indices->type().dtype != DType::kI64) return NodeError(node, "indices must be i64");
  const std::vector<SymExpr>& d = data->type().shape;
  const std::vector<SymExpr>& q = indices->type().shape;
  SS_ASSIGN_OR_RETURN(batch_dims, node->attrs().GetInt("batch_dims", 0));
  if (q.empty()) return NodeError(node, "indices must have rank >= 1");
  std::optional<int64_t> k = q.back().AsConst();
  if (!k) return NodeError(node, "the index tuple length (the last dim of the indices) must be static");
  if (batch_dims < 0 || batch_dims + *k > static_cast<int64_t>(d.size()) ||
      batch_dims >= static_cast<int64_t>(q.size())) {
    return NodeError(node, "batch_dims and the index tuple length do not fit the data's rank");
  }
  Builder b(env, {}, "gather_nd");
  RowLoop loop = MakeRowLoop(&b.call->kernel, &b.em, out->type().shape, 1);
  const size_t lead = q.size() - 1;  // output dims that index the indices (batch + middle)
  std::vector<SymExpr> data_at(loop.idx.begin(), loop.idx.begin() + batch_dims);
  for (int64_t j = 0; j < *k; ++j) data_at.push_back(0);
  data_at.insert(data_at.end(), loop.idx.begin() + lead, loop.idx.end());
  SS_ASSIGN_OR_RETURN(table, b.em.InputBuffer(data));
  Value at = IndexValue(b.em.Linear(d, data_at));
  std::vector<SymExpr> dims;
  std::vector<int64_t> axes;
  for (int64_t j = 0; j < *k; ++j) {
    const int64_t axis = batch_dims + j;
    std::vector<SymExpr> idx_at(loop.idx.begin(), loop.idx.begin() + lead);
    idx_at.push_back(j);
    SS_ASSIGN_OR_RETURN(id, b.em.Emit(indices, idx_at));
    SymExpr stride = b.em.dims().Bind(Product(d, axis + 1, d.size()));
    at = at + ClampedIndex(id, b.em.dims().Bind(d[axis])) * IndexValue(stride);
    dims.push_back(d[axis]);
    axes.push_back(axis);
  }
  SS_ASSIGN_OR_RETURN(y, b.em.OutputBuffer(out));
  b.call->kernel.body = {Loop(kInnerVar, 0, loop.n, {Store(y, loop.linear, LoadAt(table, at))})};
  return CheckedKernel(Check(node, std::move(dims), std::move(axes)), b.Take(), env);
}

// out = data, then out[indices[u], :] = updates[u, :] for each index tuple
// u in order: a copy kernel and a scatter kernel. The scatter runs its
// tuples in one sequential loop (ONNX leaves duplicate tuples undefined; in
// order, the last one wins, as in the interpreter and ONNX Runtime), each
// tuple's slice in an inner loop whose stores are distinct.
absl::StatusOr<std::vector<LoweredStep>> LowerScatterND(const Node* node, ShapeEnv* env) {
  const GraphValue* data = node->input(0);
  const GraphValue* indices = node->input(1);
  const GraphValue* updates = node->input(2);
  const GraphValue* out = node->output(0);
  if (indices->type().dtype != DType::kI64) return NodeError(node, "indices must be i64");
  SS_ASSIGN_OR_RETURN(reduction, node->attrs().GetString("reduction", "none"));
  if (reduction != "none") return NodeError(node, absl::StrCat("reduction '", reduction, "' is not compiled"));
  const std::vector<SymExpr>& d = data->type().shape;
  const std::vector<SymExpr>& q = indices->type().shape;
  if (q.empty()) return NodeError(node, "indices must have rank >= 1");
  std::optional<int64_t> k = q.back().AsConst();
  if (!k || *k < 1 || *k > static_cast<int64_t>(d.size())) {
    return NodeError(node, "the index tuple length (the last dim of the indices) must be static and fit the data");
  }
  Builder copy(env, {}, "scatter_copy");
  RowLoop loop = MakeRowLoop(&copy.call->kernel, &copy.em, out->type().shape, 1);
  SS_ASSIGN_OR_RETURN(value, copy.em.Emit(data, loop.idx));
  SS_ASSIGN_OR_RETURN(copy_out, copy.em.OutputBuffer(out));
  copy.call->kernel.body = {Loop(kInnerVar, 0, loop.n, {Store(copy_out, loop.linear, value)})};

  Builder b(env, {}, "scatter_nd");
  b.call->kernel.parallel_extent = 1;
  const SymExpr u = SymExpr::Symbol("u"), j = SymExpr::Symbol(kInnerVar);
  const SymExpr tuples = b.em.dims().Bind(Product(q, 0, q.size() - 1));
  const SymExpr slice = b.em.dims().Bind(Product(d, *k, d.size()));
  SS_ASSIGN_OR_RETURN(idx_buf, b.em.InputBuffer(indices));
  SS_ASSIGN_OR_RETURN(upd_buf, b.em.InputBuffer(updates));
  Value at = IndexValue(j);
  std::vector<SymExpr> dims;
  std::vector<int64_t> axes;
  for (int64_t t = 0; t < *k; ++t) {
    SymExpr stride = b.em.dims().Bind(Product(d, t + 1, d.size()));
    at = at + ClampedIndex(Load(idx_buf, u * *k + t), b.em.dims().Bind(d[t])) * IndexValue(stride);
    dims.push_back(d[t]);
    axes.push_back(t);
  }
  SS_ASSIGN_OR_RETURN(y, b.em.OutputBuffer(out));
  b.call->kernel.body = {
      Loop("u", 0, tuples, {Loop(kInnerVar, 0, slice, {StoreAt(y, at, Load(upd_buf, u * slice + j))})})};
  std::vector<LoweredStep> steps;
  steps.push_back(Check(node, std::move(dims), std::move(axes)));
  steps.push_back(copy.Take());
  steps.push_back(b.Take());
  return steps;
}

// out[o] = x[o mod x's shape]: the repeats are already in the output's
// shape (dim * repeats), so any symbolic dim and repeat count is served.
absl::StatusOr<KernelCall> LowerTile(const Node* node, ShapeEnv* env) {
  const GraphValue* x = node->input(0);
  const GraphValue* out = node->output(0);
  Builder b(env, {}, "tile");
  RowLoop loop = MakeRowLoop(&b.call->kernel, &b.em, out->type().shape, 1);
  std::vector<SymExpr> x_at(loop.idx.size());
  for (size_t k = 0; k < x_at.size(); ++k) {
    SymExpr dim = x->type().shape[k];
    x_at[k] = dim == SymExpr(1) ? SymExpr(0) : Mod(loop.idx[k], b.em.dims().Bind(dim));
  }
  SS_ASSIGN_OR_RETURN(value, b.em.Emit(x, x_at));
  SS_ASSIGN_OR_RETURN(y, b.em.OutputBuffer(out));
  b.call->kernel.body = {Loop(kInnerVar, 0, loop.n, {Store(y, loop.linear, value)})};
  return b.Take();
}

// Keeps x where col - row >= k (upper) or <= k (lower), zero elsewhere. k
// is a shape value when it is known while compiling (it may be symbolic),
// otherwise read from its one-element buffer: either way one kernel serves
// every k.
absl::StatusOr<KernelCall> LowerTrilu(const Node* node, ShapeEnv* env) {
  const GraphValue* x = node->input(0);
  const GraphValue* out = node->output(0);
  const int64_t rank = x->type().rank();
  if (rank < 2) return NodeError(node, "Trilu needs rank >= 2");
  SS_ASSIGN_OR_RETURN(upper, node->attrs().GetInt("upper", 1));
  SS_ASSIGN_OR_RETURN(type, KernelType(x->type().dtype, "node '" + node->name() + "'"));
  Builder b(env, {}, upper ? "triu" : "tril");
  RowLoop loop = MakeRowLoop(&b.call->kernel, &b.em, out->type().shape, 1);
  Value k = I64(0);
  if (const GraphValue* kv = node->input(1); kv != nullptr) {
    const auto& elements = kv->elements();
    if (elements && elements->size() == 1) {
      k = IndexValue(b.em.dims().Bind((*elements)[0]));
    } else if (kv->type().rank() <= 1 && env->CanProveEqual(kv->type().NumElements(), 1)) {
      SS_ASSIGN_OR_RETURN(read, b.em.Emit(kv, std::vector<SymExpr>(kv->type().rank(), SymExpr(0))));
      k = read->type == ScalarType::kI64 ? read : Cast(ScalarType::kI64, read);
    } else {
      return NodeError(node, "k must hold exactly one element");
    }
  }
  SS_ASSIGN_OR_RETURN(value, b.em.Emit(x, loop.idx));
  Value diagonal = IndexValue(loop.idx[rank - 1] - loop.idx[rank - 2]);
  Value keep = Compare(upper ? CompareOp::kGe : CompareOp::kLe, diagonal, k);
  Value zero = type == ScalarType::kF32 ? F32(0) : Cast(type, I64(0));
  if (type == ScalarType::kBool) zero = Compare(CompareOp::kNe, I64(0), I64(0));
  if (type == ScalarType::kI64) zero = I64(0);
  SS_ASSIGN_OR_RETURN(y, b.em.OutputBuffer(out));
  b.call->kernel.body = {Loop(kInnerVar, 0, loop.n, {Store(y, loop.linear, Select(keep, value, zero))})};
  return b.Take();
}

template <typename T>
absl::StatusOr<std::vector<LoweredStep>> One(absl::StatusOr<T> step) {
  if (!step.ok()) return step.status();
  std::vector<LoweredStep> steps;
  steps.push_back(*std::move(step));
  return steps;
}

}  // namespace

bool IsDataMovementOp(const Node& node) {
  const std::string& op = node.op_type();
  return op == "Gather" || op == "GatherElements" || op == "GatherND" || op == "ScatterND" || op == "Tile" ||
         op == "Trilu";
}

absl::StatusOr<std::vector<LoweredStep>> LowerDataMovement(const passes::Group& group, ShapeEnv* env) {
  // A gather may carry the nodes that compute its indices (before it, in
  // topological order); every other op is one node.
  Node* node = group.nodes.empty() ? nullptr : group.nodes.back();
  const bool gather = node != nullptr && (node->op_type() == "Gather" || node->op_type() == "GatherElements");
  if (node == nullptr || group.outputs.size() != 1 || group.outputs[0] != node->output(0) ||
      (group.nodes.size() != 1 && !gather)) {
    return absl::UnimplementedError(absl::StrCat("cannot lower group #", group.id, ": expects one node"));
  }
  const std::string& op = node->op_type();
  if (op == "Gather") return LowerGatherAxis(node, group.nodes, env);
  if (op == "GatherElements") return LowerGatherElements(node, group.nodes, env);
  if (op == "GatherND") return LowerGatherND(node, env);
  if (op == "ScatterND") return LowerScatterND(node, env);
  if (op == "Tile") return One(LowerTile(node, env));
  if (op == "Trilu") return One(LowerTrilu(node, env));
  return NodeError(node, "no compiled lowering for this op");
}

}  // namespace shapeshift::codegen::lower
