#include "passes/gather_as_view.h"

#include <limits>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/builder.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "gather-as-view";
// Index arithmetic deeper than this is not a mask idiom; give up.
constexpr int kMaxDepth = 32;

bool IsIntegerType(DType t) { return t == DType::kI64 || t == DType::kI32; }

SymExpr RowMajorPosition(const std::vector<SymExpr>& shape, const std::vector<SymExpr>& idx) {
  SymExpr linear = 0, stride = 1;
  for (int k = static_cast<int>(shape.size()) - 1; k >= 0; --k) {
    linear = linear + idx[k] * stride;
    stride = stride * shape[k];
  }
  return linear;
}

// Evaluates integer tensors symbolically: the element at a multi-index whose
// entries are SymExprs (free position variables or constants).
class IndexEvaluator {
 public:
  std::optional<SymExpr> At(const Value* v, const std::vector<SymExpr>& idx, int depth = 0) {
    if (depth > kMaxDepth || !IsIntegerType(v->type().dtype)) return std::nullopt;
    if (const auto& elements = v->elements()) {
      if (elements->size() == 1) return (*elements)[0];
      std::optional<int64_t> at = RowMajorPosition(v->type().shape, idx).AsConst();
      if (at && *at >= 0 && *at < static_cast<int64_t>(elements->size())) return (*elements)[*at];
      return std::nullopt;
    }
    if (const Tensor* t = v->constant()) {
      if (t->num_elements() == 1) return SymExpr(t->GetAsInt64(0));
      return std::nullopt;
    }
    const Node* node = v->producer();
    if (node == nullptr) return std::nullopt;
    const std::string& op = node->op_type();
    auto input_at = [&](int i) -> std::optional<SymExpr> {
      const Value* in = node->input(i);
      if (in == nullptr) return std::nullopt;
      std::optional<std::vector<SymExpr>> in_idx = Broadcast(in, v->type().shape, idx);
      if (!in_idx) return std::nullopt;
      return At(in, *in_idx, depth + 1);
    };
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Min" || op == "Max") {
      std::optional<SymExpr> a = input_at(0), b = input_at(1);
      if (!a || !b || node->num_inputs() != 2) return std::nullopt;
      if (op == "Add") return *a + *b;
      if (op == "Sub") return *a - *b;
      if (op == "Mul") return *a * *b;
      return op == "Min" ? Min(*a, *b) : Max(*a, *b);
    }
    if (op == "Cast" || op == "Expand" || op == "Identity") return input_at(0);
    if (op == "Range") {
      const auto& start = node->input(0)->elements();
      const auto& delta = node->input(2)->elements();
      if (!start || !delta || start->size() != 1 || delta->size() != 1) return std::nullopt;
      return (*start)[0] + idx[0] * (*delta)[0];
    }
    if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" || op == "Flatten") {
      std::optional<std::vector<SymExpr>> in_idx = SameDimsIndex(node->input(0), v, idx);
      if (!in_idx) return std::nullopt;
      return At(node->input(0), *in_idx, depth + 1);
    }
    if (op == "Concat") return ConcatAt(node, v, idx, depth);
    return std::nullopt;
  }

 private:
  // Right-aligned numpy broadcasting of `in` into `shape`.
  std::optional<std::vector<SymExpr>> Broadcast(const Value* in, const std::vector<SymExpr>& shape,
                                                const std::vector<SymExpr>& idx) {
    const auto& in_shape = in->type().shape;
    if (in_shape.size() > shape.size()) return std::nullopt;
    size_t offset = shape.size() - in_shape.size();
    std::vector<SymExpr> out(in_shape.size());
    for (size_t k = 0; k < in_shape.size(); ++k) {
      if (in_shape[k] == shape[k + offset]) {
        out[k] = idx[k + offset];
      } else if (in_shape[k] == SymExpr(1)) {
        out[k] = 0;
      } else {
        return std::nullopt;
      }
    }
    return out;
  }

  // A view whose non-1 dims agree in order maps dim to dim.
  static std::optional<std::vector<SymExpr>> SameDimsIndex(const Value* in, const Value* out,
                                                           const std::vector<SymExpr>& idx) {
    std::vector<int> in_non1, out_non1;
    for (int k = 0; k < in->type().rank(); ++k) {
      if (in->type().shape[k] != SymExpr(1)) in_non1.push_back(k);
    }
    for (int k = 0; k < out->type().rank(); ++k) {
      if (out->type().shape[k] != SymExpr(1)) out_non1.push_back(k);
    }
    if (in_non1.size() != out_non1.size()) return std::nullopt;
    std::vector<SymExpr> in_idx(in->type().rank(), SymExpr(0));
    for (size_t i = 0; i < in_non1.size(); ++i) {
      if (in->type().shape[in_non1[i]] != out->type().shape[out_non1[i]]) return std::nullopt;
      in_idx[in_non1[i]] = idx[out_non1[i]];
    }
    return in_idx;
  }

  // Concat at a constant position along its axis: the input holding it.
  std::optional<SymExpr> ConcatAt(const Node* node, const Value* v, const std::vector<SymExpr>& idx, int depth) {
    int64_t rank = v->type().rank();
    int64_t axis = node->attrs().GetInt("axis", 0).value_or(rank);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
    std::optional<int64_t> at = idx[axis].AsConst();
    if (!at) return std::nullopt;
    int64_t begin = 0;
    for (const Value* in : node->inputs()) {
      std::optional<int64_t> size = in == nullptr ? std::nullopt : in->type().shape[axis].AsConst();
      if (!size) return std::nullopt;
      if (*at < begin + *size) {
        std::vector<SymExpr> in_idx = idx;
        in_idx[axis] = *at - begin;
        return At(in, in_idx, depth + 1);
      }
      begin += *size;
    }
    return std::nullopt;
  }
};

// Free position variables for `shape` (0 where the dim is 1).
std::vector<SymExpr> PositionVariables(const std::vector<SymExpr>& shape) {
  std::vector<SymExpr> idx;
  for (size_t k = 0; k < shape.size(); ++k) {
    idx.push_back(shape[k] == SymExpr(1) ? SymExpr(0) : SymExpr::Symbol(absl::StrCat("gather_as_view.i", k)));
  }
  return idx;
}

SymExpr Product(const std::vector<SymExpr>& dims, size_t begin, size_t end) {
  SymExpr p = 1;
  for (size_t k = begin; k < end; ++k) p = p * dims[k];
  return p;
}

// Gather(data, I, axis=0) reads data row `RowMajorPosition(I.shape, i)` at
// position i: the number of leading data dims that the index addresses (1),
// or nullopt.
std::optional<int64_t> GatherTupleLength(IndexEvaluator& eval, const Node& node) {
  const Value* indices = node.input(1);
  const std::vector<SymExpr>& ishape = indices->type().shape;
  if (node.op_type() == "Gather") {
    if (node.attrs().GetInt("axis", 0).value_or(1) != 0) return std::nullopt;
    std::vector<SymExpr> i = PositionVariables(ishape);
    std::optional<SymExpr> row = eval.At(indices, i);
    if (!row || *row != RowMajorPosition(ishape, i)) return std::nullopt;
    return 1;
  }
  // GatherND without batch dims: the tuple at position p addresses
  // data[t_0, ..., t_{K-1}]; its row-major position must be p's.
  if (node.attrs().GetInt("batch_dims", 0).value_or(1) != 0 || ishape.empty()) return std::nullopt;
  std::optional<int64_t> k = ishape.back().AsConst();
  const std::vector<SymExpr>& dshape = node.input(0)->type().shape;
  if (!k || *k < 1 || *k > static_cast<int64_t>(dshape.size())) return std::nullopt;
  std::vector<SymExpr> outer(ishape.begin(), ishape.end() - 1);
  std::vector<SymExpr> p = PositionVariables(outer);
  std::vector<SymExpr> tuple;
  for (int64_t j = 0; j < *k; ++j) {
    std::vector<SymExpr> at = p;
    at.push_back(j);
    std::optional<SymExpr> t = eval.At(indices, at);
    if (!t) return std::nullopt;
    tuple.push_back(*t);
  }
  std::vector<SymExpr> addressed(dshape.begin(), dshape.begin() + *k);
  if (RowMajorPosition(addressed, tuple) != RowMajorPosition(outer, p)) return std::nullopt;
  return *k;
}

// The shape vector `pieces` concatenated, as graph nodes (Shape, Slice,
// Concat): their values carry the symbolic elements, so later folding turns
// them into a constant Reshape target or a compile-time shape operand.
absl::StatusOr<Value*> ShapeTail(GraphBuilder& b, Value* of, int64_t begin, int64_t end) {
  absl::StatusOr<Value*> shape = b.Op("Shape", {of});
  if (!shape.ok()) return shape.status();
  Value* starts = b.Constant("", Tensor::FromVector<int64_t>(DType::kI64, {1}, {begin}));
  Value* ends = b.Constant("", Tensor::FromVector<int64_t>(DType::kI64, {1}, {end}));
  return b.Op("Slice", {*shape, starts, ends});
}

}  // namespace

absl::StatusOr<bool> RewriteGathersAsViews(Graph& graph, ShapeEnv& env) {
  if (graph.opset() < 10) return false;  // Slice with inputs builds the target
  bool changed = false;
  IndexEvaluator eval;
  for (Node* node : graph.nodes()) {
    if ((node->op_type() != "Gather" && node->op_type() != "GatherND") || node->input(0) == nullptr ||
        node->input(1) == nullptr || node->input(0)->is_constant()) {
      continue;
    }
    std::optional<int64_t> k = GatherTupleLength(eval, *node);
    if (!k) continue;
    Value* data = node->input(0);
    Value* indices = node->input(1);
    const auto& dshape = data->type().shape;
    const auto& ishape = indices->type().shape;
    size_t outer_rank = node->op_type() == "Gather" ? ishape.size() : ishape.size() - 1;
    if (!DimsEqual(env, Product(ishape, 0, outer_rank), Product(dshape, 0, *k),
                   Provenance{kPass, node->name(), "the index grid covers the gathered dims exactly"})) {
      continue;
    }
    GraphBuilder b(graph, env);
    constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();
    std::vector<Value*> pieces;
    if (outer_rank > 0) {
      absl::StatusOr<Value*> head = ShapeTail(b, indices, 0, static_cast<int64_t>(outer_rank));
      if (!head.ok()) return head.status();
      pieces.push_back(*head);
    }
    if (static_cast<size_t>(*k) < dshape.size()) {
      absl::StatusOr<Value*> tail = ShapeTail(b, data, *k, kToEnd);
      if (!tail.ok()) return tail.status();
      pieces.push_back(*tail);
    }
    Value* target = pieces.empty() ? nullptr : pieces[0];
    if (pieces.size() == 2) {
      Attributes concat;
      concat.Set("axis", int64_t{0});
      absl::StatusOr<Value*> joined = b.Op("Concat", pieces, concat);
      if (!joined.ok()) return joined.status();
      target = *joined;
    }
    if (target == nullptr) continue;  // a scalar result of a scalar: not an idiom worth a view
    absl::StatusOr<Node*> reshape =
        ReplaceWithNewNode(graph, env, node->output(0), {node}, "Reshape", {data, target}, {}, kPass);
    if (!reshape.ok()) return reshape.status();
    changed = true;
  }
  return changed;
}

}  // namespace shapeshift::passes
