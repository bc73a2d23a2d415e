#include "codegen/cpu/small_rows_matmul.h"

#include "absl/strings/str_cat.h"

namespace shapeshift::codegen::cpu {

bool SmallRowsMatmul::Applies(const MatmulConfig& config) {
  return config.batch == 0 && config.m == kRuntimeDim && config.k != kRuntimeDim && config.n != kRuntimeDim &&
         !config.pack_b;
}

absl::StatusOr<std::unique_ptr<SmallRowsMatmul>> SmallRowsMatmul::Create(const MatmulConfig& config) {
  if (!Applies(config)) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeConfig(config), ": a small-rows path needs 2-D operands, runtime m, static k and n"));
  }
  std::vector<std::unique_ptr<OnednnMatmul>> by_rows;
  for (int64_t m = kMinRows; m <= kMaxRows; ++m) {
    MatmulConfig fixed = config;
    fixed.m = m;
    fixed.pack_b = true;
    absl::StatusOr<std::unique_ptr<OnednnMatmul>> created = OnednnMatmul::Create(fixed);
    if (!created.ok()) return created.status();
    if (!by_rows.empty() && !(*created)->SamePackedLayout(*by_rows.front())) {
      return absl::FailedPreconditionError(absl::StrCat(DescribeConfig(fixed), ": oneDNN packs B differently than for m=",
                                                        kMinRows, ", so one packed copy cannot serve every m"));
    }
    by_rows.push_back(*std::move(created));
  }
  return std::unique_ptr<SmallRowsMatmul>(new SmallRowsMatmul(std::move(by_rows)));
}

absl::StatusOr<PackedWeights> SmallRowsMatmul::PackB(const float* b) const { return by_rows_.front()->PackB(b); }

absl::Status SmallRowsMatmul::Execute(const MatmulShape& shape, const MatmulOperands& ops) const {
  if (!Covers(shape.m)) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeConfig(by_rows_.front()->config()), ": m=", shape.m,
                                                   " is outside the small-rows range ", kMinRows, "..", kMaxRows));
  }
  return by_rows_[shape.m - kMinRows]->Execute(shape, ops);
}

}  // namespace shapeshift::codegen::cpu
