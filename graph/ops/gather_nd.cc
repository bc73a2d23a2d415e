// Shape rule for GatherND (opset 11/12+: batch_dims).
//
// Why its own file: torch's dynamo exporter writes the attention-mask lookup
// `mask[batch_idx, kv_idx]` as GatherND with index tuples built from Range
// and Expand; the rule has to state the symbolic result shape exactly
// (indices.shape[:-1] ++ data.shape[batch_dims + K:]) so that passes can
// prove it equal to a view of the mask. The tuple length K must be static.
#include "absl/strings/str_cat.h"
#include "graph/ops/rules.h"
#include "graph/ops/common.h"

namespace shapeshift {

absl::Status rules::GatherND(InferenceContext& ctx) {
  DType index_type = ctx.input_dtype(1);
  if (index_type != DType::kI64) return ctx.Error("indices must be i64");
  absl::StatusOr<int64_t> batch_dims = ctx.attrs().GetInt("batch_dims", 0);
  if (!batch_dims.ok()) return ctx.Error(batch_dims.status().message());
  const auto& data = ctx.input_shape(0);
  const auto& indices = ctx.input_shape(1);
  const int64_t r = static_cast<int64_t>(data.size());
  const int64_t q = static_cast<int64_t>(indices.size());
  if (r < 1 || q < 1) return ctx.Error("data and indices must have rank >= 1");
  std::optional<int64_t> tuple = indices.back().AsConst();
  if (!tuple) return ctx.Error(absl::StrCat("the last dim of indices (", indices.back().ToString(), ") must be static"));
  const int64_t b = *batch_dims;
  if (b < 0 || b >= q || b >= r) return ctx.Error(absl::StrCat("batch_dims ", b, " out of range"));
  if (*tuple < 1 || *tuple > r - b) {
    return ctx.Error(absl::StrCat("index tuples of length ", *tuple, " do not fit data of rank ", r,
                                  " with batch_dims ", b));
  }
  for (int64_t d = 0; d < b; ++d) {
    if (absl::Status s = RequireEqualDims(ctx, data[d], indices[d], "GatherND batch dims"); !s.ok()) return s;
  }
  std::vector<SymExpr> shape(indices.begin(), indices.end() - 1);
  shape.insert(shape.end(), data.begin() + b + *tuple, data.end());
  ctx.SetOutput(0, TensorType(ctx.input_dtype(0), std::move(shape)));
  return absl::OkStatus();
}

}  // namespace shapeshift
