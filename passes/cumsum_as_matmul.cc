#include "passes/cumsum_as_matmul.h"

#include <optional>
#include <vector>

#include "graph/builder.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "cumsum-as-matmul";
// Counts up to this are exact in f32 (24-bit significand).
constexpr int64_t kExactF32Integers = int64_t{1} << 24;

bool IsIntegerType(DType t) { return t == DType::kI64 || t == DType::kI32; }

// The CumSum's input holds only 0 and 1: integer Casts of a bool.
bool IsZeroOneMask(const Value* x) {
  while (IsIntegerType(x->type().dtype)) {  // through integer widenings (the dynamo export casts twice)
    const Node* cast = ProducerIs(x, "Cast");
    if (cast == nullptr) return false;
    x = cast->input(0);
  }
  return x->type().dtype == DType::kBool;
}

// True when `node` is a plain inclusive forward CumSum over the last axis.
bool IsLastAxisInclusiveCumSum(const Node& node) {
  if (node.attrs().GetInt("exclusive", 0).value_or(1) != 0 || node.attrs().GetInt("reverse", 0).value_or(1) != 0) {
    return false;
  }
  const int64_t rank = node.input(0)->type().rank();
  const auto& axis = node.input(1) ? node.input(1)->elements() : std::nullopt;
  if (rank < 1 || !axis || axis->size() != 1 || !(*axis)[0].AsConst()) return false;
  int64_t a = *(*axis)[0].AsConst();
  return a == rank - 1 || a == -1;
}

Value* I64Vector(GraphBuilder& b, const std::vector<int64_t>& v) {
  return b.Constant("", Tensor::FromVector<int64_t>(DType::kI64, {static_cast<int64_t>(v.size())}, v));
}

absl::StatusOr<Value*> Cast(GraphBuilder& b, Value* x, DType to) {
  Attributes attrs;
  attrs.Set("to", static_cast<int64_t>(DTypeToOnnx(to)));
  return b.Op("Cast", {x}, attrs);
}

}  // namespace

absl::StatusOr<bool> RewriteMaskCumSumAsMatmul(Graph& graph, ShapeEnv& env) {
  if (graph.opset() < 11) return false;  // CumSum exists from opset 11
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (node->op_type() != "CumSum" || node->input(0) == nullptr || !IsZeroOneMask(node->input(0)) ||
        !IsLastAxisInclusiveCumSum(*node)) {
      continue;
    }
    Value* x = node->input(0);
    const SymExpr n = x->type().shape.back();
    if (!env.CanProve(Predicate::Le(n, kExactF32Integers))) continue;
    GraphBuilder b(graph, env);
    // U[j, s] = (j <= s) over [n, n], from Range(0, n).
    absl::StatusOr<Value*> shape = b.Op("Shape", {x});
    if (!shape.ok()) return shape.status();
    absl::StatusOr<Value*> count =
        b.Op("Gather", {*shape, b.ScalarI64(x->type().rank() - 1)}, Attributes());
    if (!count.ok()) return count.status();
    absl::StatusOr<Value*> positions = b.Op("Range", {b.ScalarI64(0), *count, b.ScalarI64(1)});
    if (!positions.ok()) return positions.status();
    absl::StatusOr<Value*> rows = b.Op("Reshape", {*positions, I64Vector(b, {-1, 1})});
    if (!rows.ok()) return rows.status();
    absl::StatusOr<Value*> cols = b.Op("Reshape", {*positions, I64Vector(b, {1, -1})});
    if (!cols.ok()) return cols.status();
    absl::StatusOr<Value*> upper = b.Op("LessOrEqual", {*rows, *cols});
    if (!upper.ok()) return upper.status();
    absl::StatusOr<Value*> upper_f32 = Cast(b, *upper, DType::kF32);
    if (!upper_f32.ok()) return upper_f32.status();
    absl::StatusOr<Value*> x_f32 = Cast(b, x, DType::kF32);
    if (!x_f32.ok()) return x_f32.status();
    absl::StatusOr<Value*> sums = b.Op("MatMul", {*x_f32, *upper_f32});
    if (!sums.ok()) return sums.status();
    Attributes to;
    to.Set("to", static_cast<int64_t>(DTypeToOnnx(x->type().dtype)));
    absl::StatusOr<Node*> cast = ReplaceWithNewNode(graph, env, node->output(0), {node}, "Cast", {*sums}, to, kPass);
    if (!cast.ok()) return cast.status();
    changed = true;
  }
  return changed;
}

}  // namespace shapeshift::passes
