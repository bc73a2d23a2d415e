// OnednnMatmul: one (batched) matmul with a fused epilogue, on oneDNN.
//
//   C[b] = act(scale * (A[b] · op(B[b])) + bias) + R[b]
//
// (the fusion plan's contract, passes/fusion_plan.h). oneDNN applies output
// scales after its bias argument, so with a scale the bias is a binary-add
// post-op instead, which comes after the scale.
//
// A is [batch, M, K], B is [batch, K, N] (or [batch, N, K] with transpose_b,
// for Q·Kᵀ), C and the residual R are [batch, M, N]; bias is per-N; all
// dense row-major f32. batch == 0 means plain 2-D operands; callers flatten
// leading batch dims [B..., M, K] into one.
//
// Why a wrapper: a oneDNN primitive is expensive to create (it JITs code), so
// it is created once per configuration and executed with the actual sizes.
// Each dimension is either static (fixed at creation) or kRuntimeDim (given
// at every Execute): measured on this machine, runtime dims select oneDNN's
// gemm:jit and fully static dims brg:avx512_core, and neither wins on every
// shape, so a tier above chooses per shape class.
//
// The oneDNN engine is shared by every matmul; each thread executes on its
// own stream. Execute() is thread-safe.
//
// Per-call cost: a call with the previous call's shape re-points the cached
// oneDNN memory objects instead of re-creating them; a GEMM below 2^17
// multiply-adds, and a residual copy below 16384 floats, run on the calling
// thread (no OpenMP fork).
//
// Scratchpad: oneDNN's default ("library") scratchpad is one buffer per
// creating thread, shared by every primitive made on it, so primitives
// created on one thread and run concurrently from several (as Program::Run
// does) would overwrite each other's partial results. Each primitive is
// therefore created with a user-managed scratchpad, and Execute() hands it
// the calling thread's own buffer (grown to the largest size needed, kept
// for the thread's life). Runtime-dims primitives measured need none (size
// 0); fully static ones (brg:avx512_core) can.
#ifndef SHAPESHIFT_CODEGEN_CPU_ONEDNN_MATMUL_H_
#define SHAPESHIFT_CODEGEN_CPU_ONEDNN_MATMUL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codegen/cpu/packed_weights.h"

namespace shapeshift::codegen::cpu {

// A dimension bound at each Execute() instead of at creation.
inline constexpr int64_t kRuntimeDim = -1;

enum class MatmulActivation { kNone, kGeluErf, kGeluTanh };

struct MatmulConfig {
  int64_t batch = 0;  // 0: 2-D operands; else static size or kRuntimeDim
  int64_t m = kRuntimeDim;
  int64_t k = kRuntimeDim;
  int64_t n = kRuntimeDim;
  bool transpose_b = false;  // B is stored [batch, N, K]
  bool bias = false;
  float scale = 1.0f;
  MatmulActivation activation = MatmulActivation::kNone;
  bool residual = false;
  // B is a constant (model weights): PackB() reorders it once into the
  // layout oneDNN's kernel prefers, and Execute() reads that. Needs static
  // k and n and 2-D operands.
  bool pack_b = false;
  // pack_b only: 0 lets oneDNN choose B's layout; 16 or 32 fixes it to the
  // skinny GEMM's column panels of that width (skinny_matmul.h; oneDNN's
  // BA16a16b / BA16a32b), so one packed copy serves both kernels.
  int64_t b_panel_width = 0;
  // Batched only: B[b] starts at b * MatmulShape::b_batch_stride elements
  // instead of b * K * N, given per call — a KV cache that lives in a
  // buffer with room for more positions than this call reads (runtime/
  // kv_cache.h); the rows inside one batch stay dense. A call with the
  // dense stride computes exactly what the unstrided configuration does.
  bool b_batch_stride = false;
};

// Actual sizes for one Execute(); batch is ignored for 2-D configurations.
struct MatmulShape {
  int64_t batch = 1;
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  int64_t b_batch_stride = 0;  // elements; read iff config.b_batch_stride (>= K * N)
};

struct MatmulOperands {
  const float* a = nullptr;
  const float* b = nullptr;  // with config.pack_b: PackedWeights::data()
  const float* bias = nullptr;      // required iff config.bias
  // Required iff config.residual. It may equal c (in place); otherwise it is
  // first copied into c, because oneDNN adds it as a `sum` post-op (its
  // binary post-ops need static dims).
  const float* residual = nullptr;
  float* c = nullptr;
};

class OnednnMatmul {
 public:
  // Creates the oneDNN primitive; an error names the configuration.
  static absl::StatusOr<std::unique_ptr<OnednnMatmul>> Create(const MatmulConfig& config);
  ~OnednnMatmul();

  // Runs on the calling thread's stream and waits for completion. Sizes must
  // be positive and equal the static ones.
  absl::Status Execute(const MatmulShape& shape, const MatmulOperands& operands) const;

  // Reorders B (plain layout, [K, N] or [N, K] with transpose_b) for a
  // pack_b configuration.
  absl::StatusOr<PackedWeights> PackB(const float* b) const;

  // Whether `other` (also pack_b) wants B in exactly this one's packed
  // layout, so one PackB() result serves both.
  bool SamePackedLayout(const OnednnMatmul& other) const;

  const MatmulConfig& config() const { return config_; }
  // oneDNN's implementation name, e.g. "gemm:jit" or "brg:avx512_core".
  const std::string& implementation() const { return implementation_; }
  // Bytes of scratchpad one Execute() needs (0 for most runtime-dims ones).
  int64_t scratchpad_bytes() const;

 private:
  struct Primitive;
  struct CallCache;
  OnednnMatmul(const MatmulConfig& config, std::unique_ptr<Primitive> primitive, std::string implementation);
  MatmulConfig config_;
  std::unique_ptr<Primitive> primitive_;
  std::string implementation_;
  std::unique_ptr<CallCache> cache_;  // the last call's argument memories
};

// "matmul[batch=?, m=?, k=768, n=768, bias, gelu_erf]" — for messages and logs.
std::string DescribeConfig(const MatmulConfig& config);

// The oneDNN library this process runs, "major.minor.patch".
std::string OnednnVersion();

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_ONEDNN_MATMUL_H_
