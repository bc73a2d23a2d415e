// SkinnyMatmul's core for AVX-512F (compiled with -mavx512f -mfma: see
// codegen/CMakeLists.txt; called only where the CPU has both).
#include <immintrin.h>

#include "codegen/cpu/skinny_kernel_impl.h"

namespace shapeshift::codegen::cpu::skinny {
namespace {

struct Avx512 {
  using V = __m512;
  static constexpr int64_t kLanes = 16;
  static constexpr int kRows = 8;  // 16 accumulators of the 32 zmm registers
  static V Zero() { return _mm512_setzero_ps(); }
  static V Load(const float* p) { return _mm512_load_ps(p); }
  static V Splat(float x) { return _mm512_set1_ps(x); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static void Store(float* p, V v) { _mm512_store_ps(p, v); }
  static V LoadU(const float* p) { return _mm512_loadu_ps(p); }
  static void StoreU(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
};
static_assert(2 * Avx512::kLanes == kAvx512PanelWidth);
static_assert(Avx512::kRows == kAvx512BlockRows);

}  // namespace

void RunPanelsAvx512(const PanelArgs& args) { RunPanels<Avx512>(args); }

}  // namespace shapeshift::codegen::cpu::skinny
