// SmallRowsMatmul: the short-request path of a weight GEMM with runtime M.
//
// A runtime-M oneDNN matmul (OnednnMatmul with m = kRuntimeDim) runs
// oneDNN's gemm:jit over B in its plain layout. For few rows that kernel is
// weight-bandwidth bound and reads B inefficiently: measured on this
// machine (1 thread, B cold, BERT's 768x768, 768x3072 and 3072x768), a
// static-M primitive over B packed in the primitive's preferred (blocked)
// layout took 0.70-0.92x the time for 4 <= M <= 32, while at M = 1 (gemv)
// and M >= 48 the runtime primitive is as fast or faster (bench/RESULTS.md).
// Short requests are most of serving traffic (a BERT request of 16 tokens is
// M = 16), so:
//
//   - one static-M primitive per M in [kMinRows, kMaxRows], created at
//     compile time (about 0.2 ms each, shared by every layer with the same
//     configuration), so no request ever waits for oneDNN to generate code;
//   - each constant B is packed once (PackB) into the layout all of them
//     share — checked at creation, since oneDNN could choose per M;
//   - Execute() runs M in range on its primitive, the caller keeps the
//     runtime primitive for every other M.
//
// Cost: the packed copy of each weight matrix is held next to the plain one
// (the runtime primitive reads that), i.e. the GEMM weights twice.
// CompileOptions::pack_small_row_gemms turns the path off.
#ifndef SHAPESHIFT_CODEGEN_CPU_SMALL_ROWS_MATMUL_H_
#define SHAPESHIFT_CODEGEN_CPU_SMALL_ROWS_MATMUL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codegen/cpu/onednn_matmul.h"

namespace shapeshift::codegen::cpu {

class SmallRowsMatmul {
 public:
  static constexpr int64_t kMinRows = 4;
  static constexpr int64_t kMaxRows = 32;

  // True when `config` (the runtime-M configuration of a GEMM) can have a
  // small-rows path: 2-D operands, runtime m, static k and n, B not packed.
  static bool Applies(const MatmulConfig& config);
  // Creates the static-M primitives for `config` with m fixed to each
  // value in [kMinRows, kMaxRows] and packed B; an error names the config.
  static absl::StatusOr<std::unique_ptr<SmallRowsMatmul>> Create(const MatmulConfig& config);

  bool Covers(int64_t m) const { return m >= kMinRows && m <= kMaxRows; }
  // B (plain layout, as the runtime primitive reads it) in the shared packed
  // layout.
  absl::StatusOr<PackedWeights> PackB(const float* b) const;
  // Runs `shape` (Covers(shape.m)) with ops.b = PackB()'s data.
  absl::Status Execute(const MatmulShape& shape, const MatmulOperands& ops) const;

 private:
  explicit SmallRowsMatmul(std::vector<std::unique_ptr<OnednnMatmul>> by_rows) : by_rows_(std::move(by_rows)) {}
  std::vector<std::unique_ptr<OnednnMatmul>> by_rows_;  // [m - kMinRows]
};

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_SMALL_ROWS_MATMUL_H_
