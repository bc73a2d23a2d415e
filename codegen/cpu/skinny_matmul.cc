#include "codegen/cpu/skinny_matmul.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/cpu/isa_limit.h"
#include "codegen/cpu/parallel_run.h"
#include "codegen/cpu/skinny_kernel.h"

namespace shapeshift::codegen::cpu {
namespace {

// Each core's register block: rows per block and columns per panel.
int64_t BlockRows(SkinnyMatmul::Isa isa) {
  return isa == SkinnyMatmul::Isa::kAvx512 ? skinny::kAvx512BlockRows : skinny::kAvx2BlockRows;
}
int64_t PanelWidth(SkinnyMatmul::Isa isa) {
  return isa == SkinnyMatmul::Isa::kAvx512 ? skinny::kAvx512PanelWidth : skinny::kAvx2PanelWidth;
}

}  // namespace

const char* IsaName(SkinnyMatmul::Isa isa) { return isa == SkinnyMatmul::Isa::kAvx512 ? "avx512" : "avx2"; }

bool SkinnyMatmul::Supported(Isa isa) {
  // SHAPESHIFT_MAX_CPU_ISA=avx2 rules the AVX-512 core out (isa_limit.h).
  return isa == Isa::kAvx512 ? Avx512FmaUsable() : Avx2FmaUsable();
}

std::optional<SkinnyMatmul::Isa> SkinnyMatmul::HostIsa() {
  if (Supported(Isa::kAvx512)) return Isa::kAvx512;
  if (Supported(Isa::kAvx2)) return Isa::kAvx2;
  return std::nullopt;
}

int64_t SkinnyMatmul::RowChunk(int64_t m, int64_t k, int64_t block_rows, int64_t panel_width, int64_t panel_bytes,
                               int64_t chunk_bytes, const CacheSizes& caches) {
  const int64_t row_bytes = std::max<int64_t>(k, 1) * static_cast<int64_t>(sizeof(float));
  auto rows_within = [&](int64_t bytes) { return std::max<int64_t>(bytes / (row_bytes * block_rows), 1) * block_rows; };
  if (chunk_bytes > 0) return rows_within(chunk_bytes);
  const int64_t in_l2 = rows_within(caches.l2_bytes / 2);
  if (in_l2 >= 4 * panel_width && panel_bytes <= caches.l3_bytes / 4) return in_l2;
  if (m * row_bytes > caches.l3_bytes / 4) return rows_within(caches.l3_bytes / 8);
  return 0;
}

int64_t SkinnyMatmul::KSlice(Isa isa, int64_t chunk_rows, int64_t k, int64_t slice_bytes) {
  const int64_t block_rows = BlockRows(isa);
  const int64_t row_bytes = PanelWidth(isa) * static_cast<int64_t>(sizeof(float));
  if (slice_bytes == 0) {
    const int64_t blocks = (chunk_rows + block_rows - 1) / block_rows;
    if (blocks < 2 || blocks > MaxSlicedChunkBlocks(isa)) return 0;
    slice_bytes = kSliceBytes;
  }
  if (slice_bytes < 0) return 0;
  const int64_t rows = std::max<int64_t>(slice_bytes / row_bytes, 1);
  return rows < k ? rows : 0;
}

bool SkinnyMatmul::Applies(const MatmulConfig& config) {
  return config.batch == 0 && config.m == kRuntimeDim && config.k > 0 && config.n > 0 && !config.pack_b;
}

absl::StatusOr<std::unique_ptr<SkinnyMatmul>> SkinnyMatmul::Create(const MatmulConfig& config, Isa isa,
                                                                   const SkinnyOptions& options) {
  if (!Applies(config)) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeConfig(config), ": the skinny GEMM needs 2-D operands, runtime m, static k and n"));
  }
  if (!Supported(isa)) {
    return absl::FailedPreconditionError(
        absl::StrCat(DescribeConfig(config), ": this CPU cannot run the skinny GEMM's ", IsaName(isa), " core"));
  }
  if (options.prefetch_rows < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeConfig(config), ": prefetch distance ", options.prefetch_rows, " is negative"));
  }
  SkinnyOptions resolved = options;
  if (resolved.threads <= 0) resolved.threads = omp_get_max_threads();
  return std::unique_ptr<SkinnyMatmul>(new SkinnyMatmul(config, isa, resolved));
}

int64_t SkinnyMatmul::panel_width() const {
  return PanelWidth(isa_);
}

int64_t SkinnyMatmul::Panels() const { return (config_.n + panel_width() - 1) / panel_width(); }

absl::StatusOr<PackedWeights> SkinnyMatmul::PackB(
    const float* b, const std::function<void(const float* begin, size_t bytes)>& consumed) const {
  if (b == nullptr) return absl::InvalidArgumentError(absl::StrCat(DescribeConfig(config_), ": missing B"));
  const int64_t k = config_.k, n = config_.n, w = panel_width(), panels = Panels(), rows = skinny::PanelRows(k);
  SS_ASSIGN_OR_RETURN(packed, PackedWeights::Allocate(panels * rows * w * static_cast<int64_t>(sizeof(float)),
                                                      DescribeConfig(config_)));
  float* out = packed.writable();
  // B is read in its memory order and the panels are written by the whole
  // team (independent, so in parallel: a model's first compile packs every
  // weight once, 4.1 GB for a 1B decoder, and the kernel's zeroing of the
  // new pages happens in whichever thread touches them first). A [k, n] B
  // goes by blocks of rows, each a slice of w floats into every panel, and
  // a block is `consumed` once copied; an [n, k] B by panels, each reading w
  // rows of B (a column of the panel per row).
  const int team = std::max(1, options_.threads);
  const bool parallel = panels > 1 && !omp_in_parallel();
  if (!config_.transpose_b) {
    constexpr int64_t kRowsPerBlock = 64;
    for (int64_t q0 = 0; q0 < rows; q0 += kRowsPerBlock) {
      const int64_t q1 = std::min(rows, q0 + kRowsPerBlock);
#pragma omp parallel for schedule(static) num_threads(team) if (parallel)
      for (int64_t p = 0; p < panels; ++p) {
        const int64_t col0 = p * w, cols = std::min(w, n - col0);
        for (int64_t q = q0; q < q1; ++q) {
          float* dst = out + (p * rows + q) * w;
          if (q < k) std::copy(b + q * n + col0, b + q * n + col0 + cols, dst);
          std::fill(dst + (q < k ? cols : 0), dst + w, 0.0f);
        }
      }
      if (consumed && q0 < k) consumed(b + q0 * n, static_cast<size_t>((std::min(q1, k) - q0) * n) * sizeof(float));
    }
    return packed;
  }
#pragma omp parallel for schedule(static) num_threads(team) if (parallel)
  for (int64_t p = 0; p < panels; ++p) {
    float* panel = out + p * rows * w;
    const int64_t col0 = p * w, cols = std::min(w, n - col0);
    std::fill(panel, panel + rows * w, 0.0f);
    for (int64_t j = 0; j < cols; ++j) {
      const float* src = b + (col0 + j) * k;
      for (int64_t q = 0; q < k; ++q) panel[q * w + j] = src[q];
    }
    if (consumed) consumed(b + col0 * k, static_cast<size_t>(cols * k) * sizeof(float));
  }
  return packed;
}

absl::Status SkinnyMatmul::Execute(const MatmulShape& shape, const MatmulOperands& ops) const {
  const MatmulConfig& cfg = config_;
  if (shape.m < 1 || shape.k != cfg.k || shape.n != cfg.n) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeConfig(cfg), ": cannot run m=", shape.m, " k=", shape.k,
                                                   " n=", shape.n));
  }
  if (ops.a == nullptr || ops.b == nullptr || ops.c == nullptr || cfg.bias != (ops.bias != nullptr) ||
      cfg.residual != (ops.residual != nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat(DescribeConfig(cfg), ": operands do not match the configuration"));
  }
  skinny::PanelArgs args;
  args.a = ops.a;
  args.panels = ops.b;
  args.bias = ops.bias;
  args.residual = ops.residual;
  args.c = ops.c;
  args.m = shape.m, args.k = cfg.k, args.n = cfg.n;
  args.scale = cfg.scale;
  args.activation = cfg.activation;
  args.prefetch_steps = options_.prefetch_rows;
  args.prefetch_next_panel = options_.prefetch_next_panel;
  void (*run)(const skinny::PanelArgs&) = isa_ == Isa::kAvx512 ? skinny::RunPanelsAvx512 : skinny::RunPanelsAvx2;
  const int64_t panels = Panels();
  const int64_t block_rows = BlockRows(isa_);
  static const CacheSizes caches = HostCacheSizes();
  // The whole team or none (parallel_run.h's TeamFor says why): threads past
  // the last panel get an empty range.
  int team = options_.threads;
  if (panels <= 1 || shape.m * cfg.k * cfg.n < kSerialGemmMacs || omp_in_parallel()) team = 1;
  const int64_t thread_panels = (panels + team - 1) / team;
  args.row_chunk = RowChunk(shape.m, cfg.k, block_rows, panel_width(),
                            thread_panels * skinny::PanelRows(cfg.k) * panel_width() * int64_t{sizeof(float)},
                            options_.row_chunk_bytes, caches);
  const int64_t chunk_rows = args.row_chunk > 0 ? std::min(args.row_chunk, shape.m) : shape.m;
  args.k_slice = KSlice(isa_, chunk_rows, cfg.k, options_.slice_bytes);
  // Sliced, the weights are prefetched a slice ahead: the rows after the
  // current slice, which the first block reaches only after every block
  // has taken this one.
  if (args.k_slice > 0 && args.prefetch_steps > 0) args.prefetch_steps = args.k_slice;
  if (team <= 1) {
    args.panel_begin = 0, args.panel_end = panels;
    run(args);
    return absl::OkStatus();
  }
#pragma omp parallel num_threads(team)
  {
    skinny::PanelArgs mine = args;
    const int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    mine.panel_begin = panels * t / count;
    mine.panel_end = panels * (t + 1) / count;
    if (mine.panel_begin < mine.panel_end) run(mine);
  }
  return absl::OkStatus();
}

}  // namespace shapeshift::codegen::cpu
