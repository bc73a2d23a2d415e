// CumSum as a kernel: each parallel iteration walks one line of the scanned
// axis (the line's position in the outer and inner dims) with a running sum.
//
// Why not vectorized: a prefix sum carries a dependence from one element to
// the next. The store reads the accumulator inside the loop that updates it,
// which the CPU backend recognises as a scalar loop (loop_analysis.h
// CanVectorize); the parallelism is over lines instead. The accumulator has
// the element type (ONNX Runtime's CumSum adds in T): integers wrap, f32
// rounds each partial sum as f32.
//
// Any axis (a known shape operand, negative counts from the end), exclusive
// (each element sees the sum of the elements before it) and reverse (the
// sums run from the end) work over symbolic dims.
#include "absl/strings/str_cat.h"
#include "codegen/lower/element_emitter.h"
#include "codegen/lower/lower_group.h"
#include "codegen/lower/lower_util.h"

namespace shapeshift::codegen::lower {
namespace {

absl::Status ScanError(const passes::Group& g, absl::string_view why) {
  return lower::GroupError(g, g.nodes.empty() ? nullptr : g.nodes.front(), why);
}

}  // namespace

absl::StatusOr<KernelCall> LowerScan(const passes::Group& g, ShapeEnv* env) {
  if (g.nodes.size() != 1 || g.outputs.size() != 1) return ScanError(g, "expects one CumSum node");
  const Node* node = g.nodes[0];
  const GraphValue* x = node->input(0);
  const GraphValue* axis_value = node->num_inputs() > 1 ? node->input(1) : nullptr;
  if (x == nullptr || axis_value == nullptr) return ScanError(g, "CumSum needs its input and its axis");
  const auto& axis_elements = axis_value->elements();
  if (!axis_elements || axis_elements->size() != 1 || !(*axis_elements)[0].AsConst()) {
    return ScanError(g, "the axis must be known while compiling");
  }
  const std::vector<SymExpr>& shape = x->type().shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = *(*axis_elements)[0].AsConst();
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return ScanError(g, absl::StrCat("axis is outside rank ", rank));
  absl::StatusOr<int64_t> exclusive = node->attrs().GetInt("exclusive", 0);
  absl::StatusOr<int64_t> reverse = node->attrs().GetInt("reverse", 0);
  if (!exclusive.ok()) return exclusive.status();
  if (!reverse.ok()) return reverse.status();
  absl::StatusOr<ScalarType> type = KernelType(x->type().dtype, "node '" + node->name() + "'");
  if (!type.ok()) return type.status();
  if (*type == ScalarType::kBool) return ScanError(g, "CumSum of bool is not numeric");

  KernelCall call;
  call.kernel.name = "cumsum";
  ElementEmitter em(&call.kernel, env, {});
  const SymExpr outer = em.dims().Bind(Product(shape, 0, axis));
  const SymExpr n = em.dims().Bind(shape[axis]);
  const SymExpr inner = em.dims().Bind(Product(shape, axis + 1, shape.size()));
  absl::StatusOr<BufferRef> in = em.InputBuffer(x);
  if (!in.ok()) return in.status();
  absl::StatusOr<BufferRef> out = em.OutputBuffer(g.outputs[0]);
  if (!out.ok()) return out.status();

  // Line p: outer index p / inner, inner index p % inner.
  const SymExpr p = call.kernel.ParallelVar();
  const SymExpr j = SymExpr::Symbol("j");
  const SymExpr step = *reverse ? n - 1 - j : j;
  const SymExpr at = (FloorDiv(p, inner) * n + step) * inner + Mod(p, inner);
  call.kernel.parallel_extent = outer * inner;
  Value zero = *type == ScalarType::kF32 ? F32(0) : *type == ScalarType::kI64 ? I64(0) : Cast(*type, I64(0));
  Stmt add = Accumulate("sum", ReduceOp::kSum, Load(*in, at));
  Stmt store = Store(*out, at, Var("sum", *type));
  std::vector<Stmt> body = *exclusive ? std::vector<Stmt>{store, add} : std::vector<Stmt>{add, store};
  call.kernel.body = {Accumulator("sum", zero), Loop("j", 0, n, std::move(body))};
  call.dim_values = em.dims().dim_values();
  call.buffers = em.buffer_values();
  return call;
}

}  // namespace shapeshift::codegen::lower
