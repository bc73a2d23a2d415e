// Shape rule for ScatterND (opset 11; `reduction` from 16): the output is
// the data's type; updates must be indices.shape[:-1] ++ data.shape[K:]
// for the static tuple length K = indices.shape[-1].
#include "absl/strings/str_cat.h"
#include "graph/ops/common.h"
#include "graph/ops/rules.h"

namespace shapeshift {

absl::Status rules::ScatterND(InferenceContext& ctx) {
  if (ctx.input_dtype(1) != DType::kI64) return ctx.Error("indices must be i64");
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) return ctx.Error("updates and data must have the same type");
  const auto& data = ctx.input_shape(0);
  const auto& indices = ctx.input_shape(1);
  const auto& updates = ctx.input_shape(2);
  const int64_t r = static_cast<int64_t>(data.size());
  const int64_t q = static_cast<int64_t>(indices.size());
  if (r < 1 || q < 1) return ctx.Error("data and indices must have rank >= 1");
  std::optional<int64_t> tuple = indices.back().AsConst();
  if (!tuple) return ctx.Error(absl::StrCat("the last dim of indices (", indices.back().ToString(), ") must be static"));
  if (*tuple < 1 || *tuple > r) {
    return ctx.Error(absl::StrCat("index tuples of length ", *tuple, " do not fit data of rank ", r));
  }
  std::vector<SymExpr> want(indices.begin(), indices.end() - 1);
  want.insert(want.end(), data.begin() + *tuple, data.end());
  if (updates.size() != want.size()) {
    return ctx.Error(absl::StrCat("updates have rank ", updates.size(), ", expected ", want.size()));
  }
  for (size_t d = 0; d < want.size(); ++d) {
    if (absl::Status s = RequireEqualDims(ctx, updates[d], want[d], "ScatterND updates shape"); !s.ok()) return s;
  }
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), data));
  return absl::OkStatus();
}

}  // namespace shapeshift
