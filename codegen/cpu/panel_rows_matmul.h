// PanelRowsMatmul: the long-request path of a constant-weight GEMM, reading
// the skinny GEMM's packed panels instead of the plain weights.
//
// A Program serves short requests of a constant-weight GEMM on the skinny
// GEMM (skinny_matmul.h) over B packed into column panels, and long ones on
// oneDNN's runtime-M GEMM over B as the model holds it: two copies of every
// weight matrix in memory, unless long requests read the panels too — then
// the plain copy's pages can go back to the OS (graph/constant_spill.h).
// Two engines read the panels:
//
//   - "onednn-panels": the AVX-512 core's panels are exactly oneDNN's
//     BA16a32b layout, which oneDNN's runtime-M GEMM cannot read (it falls
//     back to its reference kernel) but its static-M blocked GEMM
//     (brg:avx512_core) can. A request of m rows runs as chunks of static-M
//     primitives over the panels — greedily the largest of kChunkRows that
//     fits, the primitives created once at compile time — and the last
//     m mod kChunkRows.back() rows on the skinny GEMM over the same panels.
//     Measured (bench/RESULTS.md, "Long requests over the skinny GEMM's
//     panels" and "One resident copy of the weights"): BERT-base with it
//     takes 1.00-1.03x the time with the runtime-M gemm:jit over the plain
//     weights at 48..512 tokens, batch 1 and 8, on an AMD EPYC; 1.07x (1x128)
//     and 1.11x (1x512) on an Intel Xeon.
//   - "skinny-avx2" (the skinny GEMM's name for its core): where oneDNN has
//     no blocked kernel for the layout or refuses the configuration — the
//     AVX2 core's BA16a16b, for which oneDNN 2.6 has only ref:any — every
//     row runs on the skinny GEMM. Measured on an AVX2 AMD EPYC
//     (bench/RESULTS.md, "One copy of the weights on AVX2"): 0.52-0.99x
//     oneDNN's runtime-M time at 128..1024 rows on BERT-base's, GPT-2's and
//     the 1.1B Llama's weight shapes, 1.03-1.09x at 4096.
//
// Every row is computed by one primitive or by the skinny GEMM with the
// configuration's epilogue; rows never mix across chunks, so the result is
// each row's, as on the other paths (float summation order differs between
// engines, as it does between the skinny GEMM and oneDNN today).
// Execute() is thread-safe.
#ifndef SHAPESHIFT_CODEGEN_CPU_PANEL_ROWS_MATMUL_H_
#define SHAPESHIFT_CODEGEN_CPU_PANEL_ROWS_MATMUL_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codegen/cpu/onednn_matmul.h"
#include "codegen/cpu/skinny_matmul.h"

namespace shapeshift::codegen::cpu {

class PanelRowsMatmul {
 public:
  // Rows per chunk, largest first.
  static constexpr std::array<int64_t, 2> kChunkRows = {128, 32};

  // The engine name of the chunked path (ProgramStats' long_engine, the
  // tuning's LongRows::kPanels).
  static constexpr char kOnednnPanelsEngine[] = "onednn-panels";

  // For the GEMM `skinny` serves (its configuration and panel layout); the
  // skinny GEMM also runs the tail rows (or all of them) and must outlive
  // this object.
  static absl::StatusOr<std::unique_ptr<PanelRowsMatmul>> Create(const SkinnyMatmul& skinny);

  // Runs `shape` (any m >= 1; fewer rows than the smallest chunk run wholly
  // on the skinny GEMM) with ops.b = the skinny GEMM's PackB() data. A
  // Program sends every request its skinny range does not take here, so
  // the plain weights are never read (graph/constant_spill.h gives their
  // pages back).
  absl::Status Execute(const MatmulShape& shape, const MatmulOperands& ops) const;

  // "onednn-panels" or the skinny GEMM's "skinny-<isa>" (see above).
  const std::string& engine() const { return engine_; }
  // oneDNN's implementation of the chunks, e.g. "brg:avx512_core"; engine()
  // where there are none.
  const std::string& implementation() const;

 private:
  PanelRowsMatmul(const SkinnyMatmul& skinny, std::vector<std::unique_ptr<OnednnMatmul>> chunks, std::string engine)
      : skinny_(skinny), chunks_(std::move(chunks)), engine_(std::move(engine)) {}
  const SkinnyMatmul& skinny_;
  std::vector<std::unique_ptr<OnednnMatmul>> chunks_;  // [i]: kChunkRows[i] rows; none: all on skinny_
  std::string engine_;
};

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_PANEL_ROWS_MATMUL_H_
