// SkinnyMatmul's core for AVX2 + FMA (compiled with -mavx2 -mfma: see
// codegen/CMakeLists.txt; called only where the CPU has both).
#include <immintrin.h>

#include "codegen/cpu/skinny_kernel_impl.h"

namespace shapeshift::codegen::cpu::skinny {
namespace {

struct Avx2 {
  using V = __m256;
  static constexpr int64_t kLanes = 8;
  static constexpr int kRows = 6;  // 12 accumulators + 2 weights + 1 broadcast of the 16 ymm registers
  static V Zero() { return _mm256_setzero_ps(); }
  static V Load(const float* p) { return _mm256_load_ps(p); }
  static V Splat(float x) { return _mm256_set1_ps(x); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static void Store(float* p, V v) { _mm256_store_ps(p, v); }
  static V LoadU(const float* p) { return _mm256_loadu_ps(p); }
  static void StoreU(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
};
static_assert(2 * Avx2::kLanes == kAvx2PanelWidth);
static_assert(Avx2::kRows == kAvx2BlockRows);

}  // namespace

void RunPanelsAvx2(const PanelArgs& args) { RunPanels<Avx2>(args); }

}  // namespace shapeshift::codegen::cpu::skinny
