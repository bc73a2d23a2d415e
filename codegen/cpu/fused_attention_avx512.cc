// FusedAttention's core for AVX-512F (compiled with -mavx512f -mfma: see
// codegen/CMakeLists.txt; called only where the CPU has both and the ISA
// limit allows AVX-512).
#include <immintrin.h>

#include <cfloat>
#include <cstdint>
#include <limits>

#include "codegen/cpu/fused_attention_impl.h"

namespace shapeshift::codegen::cpu::attention {
namespace {

// The operations fused_attention_impl.h needs of an instruction set.
struct Avx512 {
  using V = __m512;
  using Flags = __mmask16;  // per lane: the row saw a NaN or +inf score
  static constexpr int kLanes = static_cast<int>(kAvx512Shape.lanes);
  static constexpr int kMaxRowVectors = static_cast<int>(kAvx512Shape.max_row_vectors);
  // Score micro-tile: 24 accumulators (keys × row vectors) + the row
  // vectors + a broadcast, of the 32 zmm registers.
  static constexpr int kAccumulators = 24;
  // P·V micro-tile: 6 rows × 4 vectors (64 columns) + 4 of V + a broadcast.
  static constexpr int kPvRows = 6;
  static constexpr int kPvVecs = 4;

  static V Zero() { return _mm512_setzero_ps(); }
  static V Splat(float x) { return _mm512_set1_ps(x); }
  static V Load(const float* p) { return _mm512_load_ps(p); }
  static V LoadU(const float* p) { return _mm512_loadu_ps(p); }
  // Lanes [0, n) from p (nothing past them is read), the rest 0.
  static V LoadPartial(const float* p, int n) { return _mm512_maskz_loadu_ps(LaneMask(0, n), p); }
  static void Store(float* p, V v) { _mm512_store_ps(p, v); }
  // A store past the caches (p aligned to the vector), ordered by Fence.
  static void Stream(float* p, V v) { _mm512_stream_ps(p, v); }
  static void Fence() { _mm_sfence(); }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  // Here and below the masked forms with an all-ones mask: GCC 12's
  // unmasked ones pass an "undefined" source that -W(maybe-)uninitialized
  // reports.
  static V Max(V a, V b) { return _mm512_mask_max_ps(a, 0xFFFF, a, b); }
  // 2^n for `shifted` = n + 1.5·2^23 (n in [-126, 127]) as exponent bits.
  static V Pow2(V shifted, int32_t round_bits) {
    __m512i n = _mm512_sub_epi32(_mm512_castps_si512(shifted), _mm512_set1_epi32(round_bits));
    return _mm512_castsi512_ps(_mm512_mask_slli_epi32(n, 0xFFFF, _mm512_add_epi32(n, _mm512_set1_epi32(127)), 23));
  }
  // e where x >= threshold (or x is NaN), else 0.
  static V ZeroBelow(V e, V x, float threshold) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, Splat(threshold), _CMP_NLT_UQ), e);
  }
  static V NegInfToZero(V x) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, Splat(-std::numeric_limits<float>::infinity()), _CMP_EQ_OQ), x,
                                Zero());
  }
  // Lanes [lo, hi) of `in`, the others of `out`.
  static V SelectLanes(V in, V out, int lo, int hi) {
    if (lo >= hi) return out;
    return _mm512_mask_blend_ps(LaneMask(lo, hi), out, in);
  }
  static Flags NoFlags() { return 0; }
  static Flags MarkBad(Flags f, V y) { return f | _mm512_cmp_ps_mask(y, Splat(FLT_MAX), _CMP_NLE_UQ); }
  static V FlagsToOnes(Flags f) { return _mm512_maskz_mov_ps(f, Splat(1.0f)); }
  // Lanes [0, valid) of base[lane * stride], the others 0.
  static V Gather(const float* base, int32_t stride, int valid) {
    const __m512i index = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                             _mm512_set1_epi32(stride));
    return _mm512_mask_i32gather_ps(Zero(), LaneMask(0, valid), index, base, 4);
  }
  // Lanes a[imm & 3], a[imm >> 2 & 3], b[imm >> 4 & 3], b[imm >> 6] of 128 bits.
  template <int kImm>
  static V Shuffle128(V a, V b) {
    return _mm512_mask_shuffle_f32x4(a, 0xFFFF, a, b, kImm);
  }
  // Lane c: the sum of acc[c]'s lanes, for c < 16 (a transpose-and-add
  // tree: pairs of vectors, then pairs of pairs, then the 128-bit lanes).
  static V SumEach(const V* acc) {
    __m512 t[8], u[4];
    for (int i = 0; i < 8; ++i) {
      const __m512 a = acc[2 * i], b = acc[2 * i + 1];
      // Per 128-bit lane: a0+a2, b0+b2, a1+a3, b1+b3.
      t[i] = _mm512_add_ps(_mm512_mask_unpacklo_ps(a, 0xFFFF, a, b), _mm512_mask_unpackhi_ps(a, 0xFFFF, a, b));
    }
    for (int i = 0; i < 4; ++i) {
      // Per 128-bit lane: the lane's partial sums of keys 4i .. 4i + 3.
      const __m512d a = _mm512_castps_pd(t[2 * i]), b = _mm512_castps_pd(t[2 * i + 1]);
      u[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_mask_unpacklo_pd(a, 0xFF, a, b)),
                           _mm512_castpd_ps(_mm512_mask_unpackhi_pd(a, 0xFF, a, b)));
    }
    // 128-bit lanes: keys 0-3 of lanes 0+1, of lanes 2+3, keys 4-7 of 0+1, of 2+3.
    const __m512 w0 = _mm512_add_ps(Shuffle128<0x88>(u[0], u[1]), Shuffle128<0xDD>(u[0], u[1]));
    const __m512 w1 = _mm512_add_ps(Shuffle128<0x88>(u[2], u[3]), Shuffle128<0xDD>(u[2], u[3]));
    return _mm512_add_ps(Shuffle128<0x88>(w0, w1), Shuffle128<0xDD>(w0, w1));
  }
  // (GCC 12's _mm512_reduce_* warn like the unmasked forms above.)
  static float ReduceMax(V v) {
    v = Max(v, Shuffle128<0x4E>(v, v));  // 256-bit halves swapped
    v = Max(v, Shuffle128<0xB1>(v, v));  // 128-bit lanes swapped in pairs
    __m128 x = _mm512_mask_extractf32x4_ps(_mm_setzero_ps(), 0xF, v, 0);
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_max_ss(x, _mm_shuffle_ps(x, x, 1)));
  }
  static float ReduceAdd(V v) {
    v = Add(v, Shuffle128<0x4E>(v, v));
    v = Add(v, Shuffle128<0xB1>(v, v));
    __m128 x = _mm512_mask_extractf32x4_ps(_mm_setzero_ps(), 0xF, v, 0);
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_shuffle_ps(x, x, 1)));
  }
  // dst[c * dst_stride + r] = src[r * stride + c] for r, c < 16.
  static void Transpose(const float* src, int64_t stride, float* dst, int64_t dst_stride) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; ++i) {
      const __m512 a = _mm512_loadu_ps(src + (2 * i) * stride), b = _mm512_loadu_ps(src + (2 * i + 1) * stride);
      t[2 * i] = _mm512_mask_unpacklo_ps(a, 0xFFFF, a, b);  // per 128-bit lane k: a[4k] b[4k] a[4k+1] b[4k+1]
      t[2 * i + 1] = _mm512_mask_unpackhi_ps(a, 0xFFFF, a, b);
    }
    // u[4i + c], 128-bit lane k: rows 4i..4i+3 of column 4k + c.
    for (int i = 0; i < 4; ++i) {
      const __m512d t0 = _mm512_castps_pd(t[4 * i]), t1 = _mm512_castps_pd(t[4 * i + 1]);
      const __m512d t2 = _mm512_castps_pd(t[4 * i + 2]), t3 = _mm512_castps_pd(t[4 * i + 3]);
      u[4 * i] = _mm512_castpd_ps(_mm512_mask_unpacklo_pd(t0, 0xFF, t0, t2));
      u[4 * i + 1] = _mm512_castpd_ps(_mm512_mask_unpackhi_pd(t0, 0xFF, t0, t2));
      u[4 * i + 2] = _mm512_castpd_ps(_mm512_mask_unpacklo_pd(t1, 0xFF, t1, t3));
      u[4 * i + 3] = _mm512_castpd_ps(_mm512_mask_unpackhi_pd(t1, 0xFF, t1, t3));
    }
    for (int c = 0; c < 4; ++c) {
      const __m512 v0 = Shuffle128<0x88>(u[c], u[4 + c]), v1 = Shuffle128<0xDD>(u[c], u[4 + c]);
      const __m512 w0 = Shuffle128<0x88>(u[8 + c], u[12 + c]);
      const __m512 w1 = Shuffle128<0xDD>(u[8 + c], u[12 + c]);
      _mm512_store_ps(dst + c * dst_stride, Shuffle128<0x88>(v0, w0));
      _mm512_store_ps(dst + (4 + c) * dst_stride, Shuffle128<0x88>(v1, w1));
      _mm512_store_ps(dst + (8 + c) * dst_stride, Shuffle128<0xDD>(v0, w0));
      _mm512_store_ps(dst + (12 + c) * dst_stride, Shuffle128<0xDD>(v1, w1));
    }
  }

 private:
  static __mmask16 LaneMask(int lo, int hi) {
    return static_cast<__mmask16>(((uint32_t{1} << hi) - 1) & ~((uint32_t{1} << lo) - 1));
  }
};

}  // namespace

void RunItemsAvx512(const AttentionArgs& args, int64_t begin, int64_t end) { RunItems<Avx512>(args, begin, end); }
void RunDecodeItemsAvx512(const AttentionArgs& args, const PastCopy* past, int64_t heads_per_item, int64_t begin,
                          int64_t end) {
  RunDecodeItems<Avx512>(args, past, heads_per_item, begin, end);
}

}  // namespace shapeshift::codegen::cpu::attention
