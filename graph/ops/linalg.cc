// Shape rules for MatMul (numpy semantics: 1-D operands promoted and the
// promoted dim removed, batch dims broadcast) and Gemm (2-D, optional
// transposes, C unidirectionally broadcast). The contraction dims must be
// equal: proven from the shapes, or a guard the env records; otherwise the
// error names both dims.
#include "absl/strings/str_cat.h"
#include "graph/ops/rules.h"
#include "graph/ops/common.h"

namespace shapeshift {

absl::Status rules::MatMul(InferenceContext& ctx) {
  if (ctx.input_dtype(0) != ctx.input_dtype(1)) {
    return ctx.Error(absl::StrCat("input dtypes differ: ", ctx.input_type(0).ToString(), " vs ",
                                  ctx.input_type(1).ToString()));
  }
  std::vector<SymExpr> a = ctx.input_shape(0), b = ctx.input_shape(1);
  if (a.empty() || b.empty()) return ctx.Error("MatMul operands must have rank >= 1");
  bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), SymExpr(1));
  if (b_vector) b.push_back(SymExpr(1));
  SymExpr m = a[a.size() - 2], k_a = a.back(), k_b = b[b.size() - 2], n = b.back();
  if (absl::Status s = RequireEqualDims(ctx, k_a, k_b, "MatMul contraction dims"); !s.ok()) return s;
  std::vector<SymExpr> batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  auto batch = BroadcastShapes(ctx, batch_a, batch_b);
  if (!batch.ok()) return batch.status();
  std::vector<SymExpr> shape = *batch;
  if (!a_vector) shape.push_back(m);
  if (!b_vector) shape.push_back(n);
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)));
  return absl::OkStatus();
}

absl::Status rules::Gemm(InferenceContext& ctx) {
  if (ctx.input_rank(0) != 2 || ctx.input_rank(1) != 2) {
    return ctx.Error(absl::StrCat("A and B must be 2-D, got ", ctx.input_type(0).ToString(), " and ",
                                  ctx.input_type(1).ToString()));
  }
  if (ctx.input_dtype(0) != ctx.input_dtype(1)) return ctx.Error("A and B dtypes differ");
  if (ctx.attrs().Has("broadcast")) {
    return ctx.Error("the legacy 'broadcast' attribute (opset < 7) is not supported");
  }
  absl::StatusOr<int64_t> trans_a = ctx.attrs().GetInt("transA", 0);
  absl::StatusOr<int64_t> trans_b = ctx.attrs().GetInt("transB", 0);
  if (!trans_a.ok()) return ctx.Error(trans_a.status().message());
  if (!trans_b.ok()) return ctx.Error(trans_b.status().message());
  const auto& a = ctx.input_shape(0);
  const auto& b = ctx.input_shape(1);
  SymExpr m = *trans_a ? a[1] : a[0], k_a = *trans_a ? a[0] : a[1];
  SymExpr k_b = *trans_b ? b[1] : b[0], n = *trans_b ? b[0] : b[1];
  if (absl::Status s = RequireEqualDims(ctx, k_a, k_b, "Gemm contraction dims"); !s.ok()) return s;
  std::vector<SymExpr> shape = {m, n};
  if (ctx.HasInput(2)) {
    auto c = BroadcastShapes(ctx, shape, ctx.input_shape(2));
    if (!c.ok()) return c.status();
    if (*c != shape) {
      return ctx.Error(absl::StrCat("C ", ctx.input_type(2).ToString(), " does not broadcast to ",
                                    ShapeToString(shape)));
    }
  }
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)));
  return absl::OkStatus();
}

}  // namespace shapeshift
