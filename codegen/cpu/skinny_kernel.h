// The instruction-set-specific cores of SkinnyMatmul (skinny_matmul.h).
//
// Each core is the same algorithm (skinny_kernel_impl.h) compiled in its own
// translation unit with its own target flags (codegen/CMakeLists.txt), so a
// binary built for any x86-64 carries both and SkinnyMatmul picks one at run
// time from the CPU's features.
#ifndef SHAPESHIFT_CODEGEN_CPU_SKINNY_KERNEL_H_
#define SHAPESHIFT_CODEGEN_CPU_SKINNY_KERNEL_H_

#include <cstdint>

#include "codegen/cpu/onednn_matmul.h"

namespace shapeshift::codegen::cpu::skinny {

// Rows each panel holds: k rounded up to 16, the rows past k zero. With it a
// panel set is exactly oneDNN's BA16a{w}b layout of [k, n] (k in blocks of
// 16 rows, n in blocks of w columns, the column blocks outermost), so
// oneDNN's blocked GEMM reads the same copy for long requests
// (panel_rows_matmul.h).
inline constexpr int64_t kPanelRowBlock = 16;
inline int64_t PanelRows(int64_t k) { return (k + kPanelRowBlock - 1) / kPanelRowBlock * kPanelRowBlock; }

// One call: rows [0, m) of A times the column panels [panel_begin,
// panel_end) of the packed B (panel p holds columns [p*w, p*w + w) of B as
// PanelRows(k) rows of w floats, zero past n and past k), with the epilogue
//   C = act(scale * (A · B) + bias) + R.
// residual may equal c.
struct PanelArgs {
  const float* a = nullptr;  // [m, k], row-major
  const float* panels = nullptr;
  const float* bias = nullptr;      // [n] or null
  const float* residual = nullptr;  // [m, n] or null
  float* c = nullptr;               // [m, n]
  int64_t m = 0, k = 0, n = 0;
  float scale = 1.0f;
  MatmulActivation activation = MatmulActivation::kNone;
  int64_t panel_begin = 0, panel_end = 0;
  int64_t prefetch_steps = 0;  // software prefetch distance in panel rows; 0: none
  // A's rows run in chunks of this many (a multiple of the core's row block;
  // 0: one chunk), each chunk over all of [panel_begin, panel_end) before
  // the next (SkinnyMatmul::RowChunk says how many).
  int64_t row_chunk = 0;
  // Each panel's k rows run in slices of this many (0: all of k at once):
  // every row block of the chunk (up to kMaxSlicedBlocks at a time) takes
  // a slice before any takes the next, its sums kept between slices in a
  // small stack buffer (SkinnyMatmul::KSlice says when and how many).
  int64_t k_slice = 0;
  // Unsliced, with 2 or more row blocks a panel: the blocks after the
  // first prefetch the thread's next panel (into L2), spread evenly over
  // their k loops, so its first block finds it there instead of waiting on
  // memory (SkinnyOptions::prefetch_next_panel).
  bool prefetch_next_panel = false;
};

// Most row blocks a slice runs over before the next slice (their partial
// sums are kept on the stack).
inline constexpr int64_t kMaxSlicedBlocks = 8;

// AVX-512F: panels of 32 columns (two zmm), blocks of up to 8 rows.
inline constexpr int64_t kAvx512PanelWidth = 32;
inline constexpr int64_t kAvx512BlockRows = 8;
void RunPanelsAvx512(const PanelArgs& args);

// AVX2 + FMA: panels of 16 columns (two ymm), blocks of up to 6 rows.
inline constexpr int64_t kAvx2PanelWidth = 16;
inline constexpr int64_t kAvx2BlockRows = 6;
void RunPanelsAvx2(const PanelArgs& args);

}  // namespace shapeshift::codegen::cpu::skinny

#endif  // SHAPESHIFT_CODEGEN_CPU_SKINNY_KERNEL_H_
