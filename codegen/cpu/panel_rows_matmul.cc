#include "codegen/cpu/panel_rows_matmul.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shapeshift::codegen::cpu {

absl::StatusOr<std::unique_ptr<PanelRowsMatmul>> PanelRowsMatmul::Create(const SkinnyMatmul& skinny) {
  std::vector<std::unique_ptr<OnednnMatmul>> chunks;
  for (int64_t rows : kChunkRows) {
    MatmulConfig config = skinny.config();
    config.m = rows;
    config.pack_b = true;
    config.b_panel_width = skinny.panel_width();
    auto created = OnednnMatmul::Create(config);
    // oneDNN accepts any layout, but only its blocked kernels read this one
    // at speed; its reference kernel would be orders of magnitude slower.
    // Without one (or where oneDNN refuses the configuration) every row
    // runs on the skinny GEMM.
    if (!created.ok() || !absl::StartsWith((*created)->implementation(), "brg")) {
      chunks.clear();
      break;
    }
    chunks.push_back(*std::move(created));
  }
  std::string engine =
      chunks.empty() ? absl::StrCat("skinny-", IsaName(skinny.isa())) : std::string(kOnednnPanelsEngine);
  return std::unique_ptr<PanelRowsMatmul>(new PanelRowsMatmul(skinny, std::move(chunks), std::move(engine)));
}

const std::string& PanelRowsMatmul::implementation() const {
  return chunks_.empty() ? engine_ : chunks_.front()->implementation();
}

absl::Status PanelRowsMatmul::Execute(const MatmulShape& shape, const MatmulOperands& ops) const {
  const MatmulConfig& cfg = skinny_.config();
  if (shape.m < 1 || shape.k != cfg.k || shape.n != cfg.n) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeConfig(cfg), ": cannot run m=", shape.m, " k=", shape.k,
                                                   " n=", shape.n));
  }
  // Rows [row, row + rows) of A, C and the residual; B and the bias whole.
  auto rows_of = [&](int64_t row) {
    MatmulOperands part = ops;
    part.a = ops.a + row * cfg.k;
    part.c = ops.c + row * cfg.n;
    if (ops.residual != nullptr) part.residual = ops.residual + row * cfg.n;
    return part;
  };
  int64_t row = 0;
  for (size_t i = 0; i < chunks_.size(); ++i) {
    const int64_t rows = kChunkRows[i];
    for (; shape.m - row >= rows; row += rows) {
      MatmulShape part{1, rows, cfg.k, cfg.n};
      if (absl::Status s = chunks_[i]->Execute(part, rows_of(row)); !s.ok()) return s;
    }
  }
  if (row == shape.m) return absl::OkStatus();
  return skinny_.Execute(MatmulShape{1, shape.m - row, cfg.k, cfg.n}, rows_of(row));
}

}  // namespace shapeshift::codegen::cpu
