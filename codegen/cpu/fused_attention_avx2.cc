// FusedAttention's core for AVX2 + FMA (compiled with -mavx2 -mfma: see
// codegen/CMakeLists.txt; called only where the CPU has both).
#include <immintrin.h>

#include <cfloat>
#include <cstdint>
#include <limits>

#include "codegen/cpu/fused_attention_impl.h"

namespace shapeshift::codegen::cpu::attention {
namespace {

// The operations of fused_attention_avx512.cc's Avx512, on 8 lanes.
struct Avx2 {
  using V = __m256;
  using Flags = __m256;  // all-ones lanes: the row saw a NaN or +inf score
  static constexpr int kLanes = static_cast<int>(kAvx2Shape.lanes);
  static constexpr int kMaxRowVectors = static_cast<int>(kAvx2Shape.max_row_vectors);
  // Score micro-tile: 12 accumulators + up to 2 row vectors + a broadcast,
  // of the 16 ymm registers (tiles of 16 rows measured faster than of 24 or
  // 32 here, from S = 32 to 512).
  static constexpr int kAccumulators = 12;
  // P·V micro-tile: 4 rows × 3 vectors (24 columns) + 3 of V + a broadcast
  // (a little faster than 6 × 2).
  static constexpr int kPvRows = 4;
  static constexpr int kPvVecs = 3;

  static V Zero() { return _mm256_setzero_ps(); }
  static V Splat(float x) { return _mm256_set1_ps(x); }
  static V Load(const float* p) { return _mm256_load_ps(p); }
  static V LoadU(const float* p) { return _mm256_loadu_ps(p); }
  static V LoadPartial(const float* p, int n) { return _mm256_maskload_ps(p, LaneMask(0, n)); }
  static void Store(float* p, V v) { _mm256_store_ps(p, v); }
  // A store past the caches (p aligned to the vector), ordered by Fence.
  static void Stream(float* p, V v) { _mm256_stream_ps(p, v); }
  static void Fence() { _mm_sfence(); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V Max(V a, V b) { return _mm256_max_ps(a, b); }
  static V Pow2(V shifted, int32_t round_bits) {
    __m256i n = _mm256_sub_epi32(_mm256_castps_si256(shifted), _mm256_set1_epi32(round_bits));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
  }
  static V ZeroBelow(V e, V x, float threshold) {
    return _mm256_andnot_ps(_mm256_cmp_ps(x, Splat(threshold), _CMP_LT_OQ), e);
  }
  static V NegInfToZero(V x) {
    return _mm256_andnot_ps(_mm256_cmp_ps(x, Splat(-std::numeric_limits<float>::infinity()), _CMP_EQ_OQ), x);
  }
  static V SelectLanes(V in, V out, int lo, int hi) {
    if (lo >= hi) return out;
    return _mm256_blendv_ps(out, in, _mm256_castsi256_ps(LaneMask(lo, hi)));
  }
  static Flags NoFlags() { return Zero(); }
  static Flags MarkBad(Flags f, V y) { return _mm256_or_ps(f, _mm256_cmp_ps(y, Splat(FLT_MAX), _CMP_NLE_UQ)); }
  static V FlagsToOnes(Flags f) { return _mm256_and_ps(f, Splat(1.0f)); }
  static V Gather(const float* base, int32_t stride, int valid) {
    const __m256i index = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(stride));
    return _mm256_mask_i32gather_ps(Zero(), base, index, _mm256_castsi256_ps(LaneMask(0, valid)), 4);
  }
  // Lane c: the sum of acc[c]'s lanes, for c < 8.
  static V SumEach(const V* acc) {
    __m256 t[4];
    for (int i = 0; i < 4; ++i) {
      const __m256 a = acc[2 * i], b = acc[2 * i + 1];
      t[i] = _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
    }
    __m256 u[2];
    for (int i = 0; i < 2; ++i) {
      const __m256d a = _mm256_castps_pd(t[2 * i]), b = _mm256_castps_pd(t[2 * i + 1]);
      u[i] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(a, b)), _mm256_castpd_ps(_mm256_unpackhi_pd(a, b)));
    }
    return _mm256_add_ps(_mm256_permute2f128_ps(u[0], u[1], 0x20), _mm256_permute2f128_ps(u[0], u[1], 0x31));
  }
  static float ReduceMax(V v) {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_max_ss(x, _mm_shuffle_ps(x, x, 1)));
  }
  static float ReduceAdd(V v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_shuffle_ps(x, x, 1)));
  }
  // dst[c * dst_stride + r] = src[r * stride + c] for r, c < 8.
  static void Transpose(const float* src, int64_t stride, float* dst, int64_t dst_stride) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; ++i) {
      const __m256 a = _mm256_loadu_ps(src + (2 * i) * stride), b = _mm256_loadu_ps(src + (2 * i + 1) * stride);
      t[2 * i] = _mm256_unpacklo_ps(a, b);
      t[2 * i + 1] = _mm256_unpackhi_ps(a, b);
    }
    // u[4i + c], 128-bit lane k: rows 4i..4i+3 of column 4k + c.
    for (int i = 0; i < 2; ++i) {
      const __m256d t0 = _mm256_castps_pd(t[4 * i]), t1 = _mm256_castps_pd(t[4 * i + 1]);
      const __m256d t2 = _mm256_castps_pd(t[4 * i + 2]), t3 = _mm256_castps_pd(t[4 * i + 3]);
      u[4 * i] = _mm256_castpd_ps(_mm256_unpacklo_pd(t0, t2));
      u[4 * i + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(t0, t2));
      u[4 * i + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(t1, t3));
      u[4 * i + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(t1, t3));
    }
    for (int c = 0; c < 4; ++c) {
      _mm256_store_ps(dst + c * dst_stride, _mm256_permute2f128_ps(u[c], u[4 + c], 0x20));
      _mm256_store_ps(dst + (4 + c) * dst_stride, _mm256_permute2f128_ps(u[c], u[4 + c], 0x31));
    }
  }

 private:
  // All-ones in lanes [lo, hi).
  static __m256i LaneMask(int lo, int hi) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_si256(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32(lo - 1)),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), lane));
  }
};

}  // namespace

void RunItemsAvx2(const AttentionArgs& args, int64_t begin, int64_t end) { RunItems<Avx2>(args, begin, end); }
void RunDecodeItemsAvx2(const AttentionArgs& args, const PastCopy* past, int64_t heads_per_item, int64_t begin,
                          int64_t end) {
  RunDecodeItems<Avx2>(args, past, heads_per_item, begin, end);
}

}  // namespace shapeshift::codegen::cpu::attention
