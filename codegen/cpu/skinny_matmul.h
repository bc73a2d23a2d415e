// SkinnyMatmul: shapeshift's own GEMM for few rows over packed weights.
//
//   C[m, n] = act(scale * (A[m, k] · B[k, n]) + bias) + R     (B a constant)
//
// A decode step (m = batch, 1..8) or a short request (m = tokens) is bound by
// reading B: every weight is used m times, so the GEMM should run at memory
// bandwidth. oneDNN does not reach it on this path (bench/RESULTS.md: its
// static small-rows primitives read BERT-base's 768x3072 weights at 10.6 GB/s
// at m = 32, 40% of the machine's triad bandwidth). This kernel:
//
//   - packs B once (PackB) into column panels of W floats (W = two vector
//     registers: 32 on AVX-512, 16 on AVX2), each panel k rows of W (k
//     rounded up to 16: oneDNN's blocked layout, panel_rows_matmul.h)
//     contiguous floats, zero past n: the whole matrix is one sequential
//     stream, and each thread reads its own contiguous range of panels;
//   - keeps a block of up to 8 (AVX-512) or 6 (AVX2) rows' accumulators for
//     one panel in registers over all of k, so each weight is loaded once
//     per row block and multiplied into every row of it; further row blocks
//     of the same panel read it again from L2 (a panel is k * W * 4 bytes:
//     96 KiB for k = 768); a chunk's rows are split into blocks as even as
//     can be (a block of 1..3 rows is bound by its FMAs' latency);
//   - applies scale, bias, GELU (erf or tanh form, math_coefficients.h) and
//     the residual to the finished block before it leaves the cache;
//   - runs a long request's rows in chunks (RowChunk), each over all of a
//     thread's panels, so the chunk of A the panels read stays in L2 instead
//     of coming from L3 or memory once per panel;
//   - from 2 row blocks a chunk up, streams the thread's next panel while
//     this one's blocks after the first run (prefetch_next_panel), so no
//     panel's first block waits on memory; on the AVX2 core, at 2..3
//     blocks (7..18 rows), runs each panel in slices of k instead (KSlice),
//     every block over a slice before the next, so the blocks after the
//     first read the slice from L1 while memory streams the next (on the
//     AVX-512 core slices measured slower: none).
//
// The core is compiled once per instruction set (skinny_kernel.h) and chosen
// at creation; Isa names it, so a test or a tuning run can ask for AVX2 on an
// AVX-512 machine. Which m this path serves (against oneDNN's) is the
// caller's decision: it computes any m correctly.
//
// Threads: the panels are split statically over the whole OpenMP team (the
// team size of the creating thread unless SkinnyOptions gives one, like
// oneDNN's primitives), threads past the last panel idle (parallel_run.h's
// TeamFor says why a narrower team costs more); a GEMM below kSerialGemmMacs
// multiply-adds runs on the calling thread.
// Execute() is thread-safe.
#ifndef SHAPESHIFT_CODEGEN_CPU_SKINNY_MATMUL_H_
#define SHAPESHIFT_CODEGEN_CPU_SKINNY_MATMUL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codegen/cpu/cache_sizes.h"
#include "codegen/cpu/onednn_matmul.h"

namespace shapeshift::codegen::cpu {

// What can be chosen per machine (by measurement: bench/skinny_gemm_bench.cc).
struct SkinnyOptions {
  int threads = 0;  // <= 0: the creating thread's OpenMP team size
  // Software prefetch of the weights this many panel rows ahead (0: none;
  // the hardware prefetchers alone). bench/RESULTS.md has the measurement
  // behind the default.
  int64_t prefetch_rows = 32;
  // The request rows a Program serves here rather than on oneDNN: 1..32,
  // where this kernel was measured faster than both oneDNN paths on every
  // BERT-base weight shape (bench/RESULTS.md; it computes any m correctly).
  int64_t max_rows = 32;
  // And from this many rows up: a tuning file (runtime/tuning/) raises it
  // where oneDNN's gemv beats this kernel at m = 1.
  int64_t min_rows = 1;
  // The bytes of A one chunk of rows may hold (RowChunk); <= 0: chosen from
  // this host's cache sizes and the request's rows.
  int64_t row_chunk_bytes = 0;
  // The bytes of a panel one slice of k holds (KSlice): > 0 sets it, 0 lets
  // KSlice choose, < 0 never slices.
  int64_t slice_bytes = 0;
  // Whether a panel's row blocks after the first prefetch the thread's next
  // panel (PanelArgs::prefetch_next_panel): measured on AVX2 at 0.90-1.0x
  // the time at 32 rows, 0.93-0.97x at 48, 0.95-0.99x at 64, even from
  // 128 up (bench/RESULTS.md, "the next panel").
  bool prefetch_next_panel = true;
};

class SkinnyMatmul {
 public:
  enum class Isa { kAvx512, kAvx2 };

  // The widest instruction set both the CPU and the OS support (AVX-512F, or
  // AVX2 with FMA); nullopt on a CPU with neither.
  static std::optional<Isa> HostIsa();
  // Whether this CPU can run `isa`.
  static bool Supported(Isa isa);

  // True when `config` (a GEMM with constant weights) has this path: 2-D
  // operands, runtime m, static k and n, B not already packed for oneDNN.
  static bool Applies(const MatmulConfig& config);

  static absl::StatusOr<std::unique_ptr<SkinnyMatmul>> Create(const MatmulConfig& config, Isa isa,
                                                              const SkinnyOptions& options = {});

  // B in its plain layout ([k, n], or [n, k] with transpose_b) as panels.
  // `consumed`, when set, is told — from any thread of the team, each part of
  // B once — about parts of B this call has finished reading: a caller whose
  // B lives in a spill file (graph/constant_spill.h) gives their pages back
  // while the rest is packed, so a large matrix (a 262 MB LM head) is never
  // resident twice in full.
  absl::StatusOr<PackedWeights> PackB(const float* b,
                                      const std::function<void(const float* begin, size_t bytes)>& consumed = {}) const;

  // Runs `shape` (m >= 1; k and n the configuration's) with ops.b = PackB()'s
  // data.
  absl::Status Execute(const MatmulShape& shape, const MatmulOperands& ops) const;

  // How many of A's m rows (k floats each) one chunk holds (0: all of them),
  // in whole blocks of `block_rows`, at least one, for a thread whose panels
  // (`panel_width` columns each) take `panel_bytes`; `chunk_bytes` > 0 sets
  // the bytes of A a chunk may hold. Unchunked, every panel reads all of A,
  // from L3 or memory once it is past L2; chunked, every panel reads the
  // chunk from L2 and every chunk reads the thread's panels, which moves
  // panel_width / chunk_rows as many bytes, from L3 while the panels fit a
  // quarter of it. So a chunk is half of L2 when that holds at least
  // 4 * panel_width rows and the panels fit; else, only when A is past a
  // quarter of L3, an eighth of L3 (A from L3 instead of memory); else none.
  static int64_t RowChunk(int64_t m, int64_t k, int64_t block_rows, int64_t panel_width, int64_t panel_bytes,
                          int64_t chunk_bytes, const CacheSizes& caches);

  // How many of a panel's k rows one slice holds (0: all of k, no
  // slicing) for a chunk of `chunk_rows` rows on the `isa` core (its row
  // blocks and panel width); `slice_bytes` as in SkinnyOptions. Unsliced, a
  // panel's first row block streams it from memory, faster than memory can
  // feed it at these rows, while the blocks after it re-read it from L2 and
  // (without the next panel's prefetch) memory idles. In slices of
  // kSliceBytes every block takes the slice from L1, and memory streams the
  // next slice (prefetched a slice ahead) meanwhile. Measured (bench/
  // RESULTS.md, "k in slices" and "k slices on the AVX-512 core") against the
  // unsliced kernel with the next panel prefetched: on the AVX2 core
  // 0.71-0.84x the time at 8 rows (2 blocks), median 0.97x at 16 (3),
  // 1.03-1.12x at 24 (4) and no gain from 5 blocks up; on the AVX-512 core
  // (8-row blocks, 32-column panels: a 4 KiB slice is only 32 k rows)
  // 1.0-1.3x the time at 10-20 rows and 1.26-1.43x at 24 on every shape
  // measured, never faster. Nothing at one block (decode), which reads each
  // weight once either way. Hence slices for chunks of 2..
  // MaxSlicedChunkBlocks(isa) blocks: 3 on AVX2, none on AVX-512.
  static constexpr int64_t kSliceBytes = 4096;
  static constexpr int64_t MaxSlicedChunkBlocks(Isa isa) { return isa == Isa::kAvx2 ? 3 : 0; }
  static int64_t KSlice(Isa isa, int64_t chunk_rows, int64_t k, int64_t slice_bytes);

  const MatmulConfig& config() const { return config_; }
  Isa isa() const { return isa_; }
  int64_t panel_width() const;
  // The options with threads resolved.
  const SkinnyOptions& options() const { return options_; }

 private:
  SkinnyMatmul(const MatmulConfig& config, Isa isa, const SkinnyOptions& options)
      : config_(config), isa_(isa), options_(options) {}
  int64_t Panels() const;
  MatmulConfig config_;
  Isa isa_;
  SkinnyOptions options_;
};

const char* IsaName(SkinnyMatmul::Isa isa);  // "avx512", "avx2"

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_SKINNY_MATMUL_H_
