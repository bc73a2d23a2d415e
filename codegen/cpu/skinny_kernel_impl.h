// The skinny GEMM's algorithm, written once over an instruction set's vector
// type (`Isa`: V, kLanes, kRows, Zero, Load, LoadU, Splat, Fma, Add, Mul,
// Store, StoreU) and included
// by one translation unit per instruction set (skinny_kernel_avx512.cc,
// skinny_kernel_avx2.cc), each compiled with its own target flags. It lives
// in an anonymous namespace so that no inline function compiled for one
// instruction set can be merged with, and called in place of, another's.
//
// Per chunk of rows (PanelArgs::row_chunk), per panel of W = 2 * kLanes
// columns and per block of up to kRows rows, the block's 2 * kRows
// accumulators stay in registers over all of k (or over a slice of k,
// PanelArgs::k_slice, the sums parked on the stack between slices): one
// pass reads each packed weight once per row block, in the order it is
// stored (the panels are one sequential stream per thread), A's rows are
// broadcast a float at a time.
// From two row blocks a chunk up (unsliced), the blocks after a panel's
// first prefetch the thread's next panel over their k loops
// (PanelArgs::prefetch_next_panel).
// The epilogue (scale, bias, GELU, residual) runs on the finished block in
// the vector registers (FinishBlock; the last panel's columns, when n is
// not a multiple of W, through zero-padded stack rows).
#ifndef SHAPESHIFT_CODEGEN_CPU_SKINNY_KERNEL_IMPL_H_
#define SHAPESHIFT_CODEGEN_CPU_SKINNY_KERNEL_IMPL_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "codegen/cpu/math_coefficients.h"
#include "codegen/cpu/skinny_kernel.h"

namespace shapeshift::codegen::cpu::skinny {
namespace {

// The epilogue's functions over a vector of lanes (GCC's vector extensions
// on Isa::V, so one source serves every core).

// Horner's rule over coefficients lowest first.
template <class V, size_t N>
inline V HornerLanes(V x, const std::array<double, N>& c) {
  V acc = V{} + static_cast<float>(c[N - 1]);
  for (size_t i = N - 1; i-- > 0;) acc = acc * x + static_cast<float>(c[i]);
  return acc;
}

// exp(x) for x <= 0 (GELU needs no more). Below -87 the result is 0 (the
// true value is under 1.7e-38: flushed rather than built as a denormal), so
// 2^n is built from exponent bits alone. Rounds x / ln2 to the nearest
// integer with the 1.5 * 2^23 trick. A NaN stays NaN.
template <class V>
inline V ExpNonPositiveLanes(V x) {
  using Lanes = decltype(x < x);  // one int32 per lane
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const Lanes underflows = x < -87.0f;
  x = underflows ? V{} - 87.0f : x;
  const V shifted = x * static_cast<float>(M_LOG2E) + kRound;
  const V n = shifted - kRound;
  const Lanes ni = std::bit_cast<Lanes>(shifted) - std::bit_cast<int32_t>(kRound);
  V r = x - n * static_cast<float>(math::kLn2High);
  r = r - n * static_cast<float>(math::kLn2Low);
  const Lanes bits = (ni + 127) << 23;
  const V e = HornerLanes(r, math::kExpTaylor) * std::bit_cast<V>(bits);
  return underflows ? V{} : e;
}

// GELU, erf form: 0.5 x (1 + erf(x / sqrt 2)). With z = |x| / sqrt 2 and
// q = t P(t) exp(-z^2) (Abramowitz & Stegun 7.1.26, math_coefficients.h),
// 1 + erf is q for x < 0 and 2 - q otherwise: no cancellation for x << 0.
template <class V>
inline V GeluErfLanes(V x) {
  const auto negative = x < 0.0f;
  const V z = (negative ? -x : x) * static_cast<float>(M_SQRT1_2);
  const V t = 1.0f / (1.0f + static_cast<float>(math::kErfP) * z);
  const V q = t * HornerLanes(t, math::kErfPoly) * ExpNonPositiveLanes(-z * z);
  return 0.5f * x * (negative ? q : 2.0f - q);
}

// GELU, tanh form: 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)) with
// u = sqrt(2/pi) (x + 0.044715 x^3); for u < 0, exp(2u) is used instead:
// x exp(2u) / (1 + exp(2u)), so exp only ever sees arguments <= 0.
template <class V>
inline V GeluTanhLanes(V x) {
  const V u = static_cast<float>(std::sqrt(2.0 / M_PI)) * (x + 0.044715f * x * x * x);
  const auto negative = u < 0.0f;
  const V e = ExpNonPositiveLanes(negative ? 2.0f * u : -2.0f * u);
  return negative ? x * e / (1.0f + e) : x / (1.0f + e);
}

template <MatmulActivation kAct, class V>
inline V ActivateLanes(V y) {
  if constexpr (kAct == MatmulActivation::kGeluErf) return GeluErfLanes(y);
  if constexpr (kAct == MatmulActivation::kGeluTanh) return GeluTanhLanes(y);
  return y;
}

// C's rows [row0, row0 + kR), columns [col0, col0 + width) =
// act(scale * acc + bias) + residual, from the accumulators. A panel of
// fewer than W columns (the last, when n is not a multiple of W) goes
// through stack rows padded with zeros: the same operations on its lanes.
template <class Isa, int kR, MatmulActivation kAct>
void FinishBlock(const PanelArgs& g, const typename Isa::V (&lo)[kR], const typename Isa::V (&hi)[kR], int64_t row0,
                 int64_t col0, int64_t width) {
  using V = typename Isa::V;
  constexpr int64_t kW = 2 * Isa::kLanes;
  const bool whole = width == kW;
  alignas(64) float row[kW];  // a part panel's bias, residual or result
  auto load = [&](const float* p) {  // kW floats of a row, zero past width
    if (whole) return p;
    for (int64_t j = 0; j < kW; ++j) row[j] = j < width ? p[j] : 0.0f;
    return static_cast<const float*>(row);
  };
  const V scale = Isa::Splat(g.scale);
  V bias_lo = Isa::Zero(), bias_hi = Isa::Zero();
  if (g.bias != nullptr) {
    const float* bias = load(g.bias + col0);
    bias_lo = Isa::LoadU(bias), bias_hi = Isa::LoadU(bias + Isa::kLanes);
  }
  for (int r = 0; r < kR; ++r) {
    V y_lo = ActivateLanes<kAct>(Isa::Add(Isa::Mul(lo[r], scale), bias_lo));
    V y_hi = ActivateLanes<kAct>(Isa::Add(Isa::Mul(hi[r], scale), bias_hi));
    float* c = g.c + (row0 + r) * g.n + col0;
    if (g.residual != nullptr) {
      const float* residual = load(g.residual + (row0 + r) * g.n + col0);
      y_lo = Isa::Add(y_lo, Isa::LoadU(residual));
      y_hi = Isa::Add(y_hi, Isa::LoadU(residual + Isa::kLanes));
    }
    if (whole) {
      Isa::StoreU(c, y_lo);
      Isa::StoreU(c + Isa::kLanes, y_hi);
    } else {
      Isa::Store(row, y_lo);
      Isa::Store(row + Isa::kLanes, y_hi);
      for (int64_t j = 0; j < width; ++j) c[j] = row[j];
    }
  }
}

// Where a row block's k loop prefetches the thread's next panel: the line
// holding at + q * step at step q (step > 0 floats; several steps may fall
// in one line, which the cache then already has).
struct NextPanel {
  const float* at = nullptr;
  int64_t step = 0;
};

// Rows [row0, row0 + kR) times rows [q0, q1) of one panel (columns
// [col0, col0 + width)), prefetching `next` when kNext. The sums start
// from zero at q0 = 0, else from `partial` (kR rows of W floats); at q1 = k
// the block is finished into C, else its sums go back to `partial`. Stored
// and reloaded floats are exact, so the result is the same bits however k
// is sliced.
template <class Isa, int kR, bool kPrefetch, bool kNext>
void RowBlock(const PanelArgs& g, const float* panel, int64_t row0, int64_t col0, int64_t width, int64_t q0,
              int64_t q1, float* partial, NextPanel next) {
  using V = typename Isa::V;
  constexpr int64_t kW = 2 * Isa::kLanes;
  V lo[kR], hi[kR];
  for (int r = 0; r < kR; ++r) {
    lo[r] = q0 == 0 ? Isa::Zero() : Isa::Load(partial + r * kW);
    hi[r] = q0 == 0 ? Isa::Zero() : Isa::Load(partial + r * kW + Isa::kLanes);
  }
  const float* a = g.a + row0 * g.k;
  const int64_t k = g.k;
  // The weights prefetch_steps rows of the panel ahead (past its end: the
  // next panel's), two cache lines a row on AVX-512, one on AVX2.
  const float* ahead = panel + g.prefetch_steps * kW;
  for (int64_t q = q0; q < q1; ++q) {
    if constexpr (kPrefetch) {
      __builtin_prefetch(ahead + q * kW, 0, 3);
      if constexpr (kW * sizeof(float) > 64) __builtin_prefetch(ahead + q * kW + 64 / sizeof(float), 0, 3);
    }
    if constexpr (kNext) __builtin_prefetch(next.at + q * next.step, 0, 2);
    V b0 = Isa::Load(panel + q * kW);
    V b1 = Isa::Load(panel + q * kW + Isa::kLanes);
    for (int r = 0; r < kR; ++r) {
      V x = Isa::Splat(a[r * k + q]);
      lo[r] = Isa::Fma(x, b0, lo[r]);
      hi[r] = Isa::Fma(x, b1, hi[r]);
    }
  }
  if (q1 < k) {
    for (int r = 0; r < kR; ++r) {
      Isa::Store(partial + r * kW, lo[r]);
      Isa::Store(partial + r * kW + Isa::kLanes, hi[r]);
    }
    return;
  }
  switch (g.activation) {
    case MatmulActivation::kNone:
      return FinishBlock<Isa, kR, MatmulActivation::kNone>(g, lo, hi, row0, col0, width);
    case MatmulActivation::kGeluErf:
      return FinishBlock<Isa, kR, MatmulActivation::kGeluErf>(g, lo, hi, row0, col0, width);
    case MatmulActivation::kGeluTanh:
      return FinishBlock<Isa, kR, MatmulActivation::kGeluTanh>(g, lo, hi, row0, col0, width);
  }
}

template <class Isa, int kR, bool kPrefetch>
void RowBlockUpTo(const PanelArgs& g, const float* panel, int64_t row0, int64_t rows, int64_t col0, int64_t width,
                  int64_t q0, int64_t q1, float* partial, NextPanel next) {
  if constexpr (kR > 1) {
    if (rows < kR) {
      return RowBlockUpTo<Isa, kR - 1, kPrefetch>(g, panel, row0, rows, col0, width, q0, q1, partial, next);
    }
  }
  if (next.step > 0) return RowBlock<Isa, kR, kPrefetch, true>(g, panel, row0, col0, width, q0, q1, partial, next);
  RowBlock<Isa, kR, kPrefetch, false>(g, panel, row0, col0, width, q0, q1, partial, next);
}

// The thread's panels over A's rows a chunk at a time (row_chunk), each
// chunk row block by row block; with k_slice, a panel's slices of k in
// turn over groups of up to kMaxSlicedBlocks row blocks.
template <class Isa, bool kPrefetch>
void RunPanelsWith(const PanelArgs& g) {
  constexpr int64_t kW = 2 * Isa::kLanes;
  alignas(64) float partial[kMaxSlicedBlocks * Isa::kRows * kW];
  const int64_t panel_floats = PanelRows(g.k) * kW;
  const int64_t chunk = g.row_chunk > 0 ? g.row_chunk : g.m;
  const int64_t slice = g.k_slice > 0 && g.k_slice < g.k ? g.k_slice : g.k;
  const int64_t group = slice < g.k ? kMaxSlicedBlocks * Isa::kRows : chunk;
  for (int64_t chunk0 = 0; chunk0 < g.m; chunk0 += chunk) {
    const int64_t chunk_end = g.m - chunk0 < chunk ? g.m : chunk0 + chunk;
    const int64_t blocks = (chunk_end - chunk0 + Isa::kRows - 1) / Isa::kRows;
    // The next panel over the k loops of blocks 1..blocks-1, evenly.
    const int64_t later_steps = (blocks - 1) * g.k;
    const int64_t next_step = g.prefetch_next_panel && slice == g.k && blocks >= 2
                                  ? (panel_floats + later_steps - 1) / later_steps
                                  : 0;
    for (int64_t p = g.panel_begin; p < g.panel_end; ++p) {
      const float* panel = g.panels + p * panel_floats;
      const float* next = p + 1 < g.panel_end ? panel + panel_floats
                          : chunk_end < g.m   ? g.panels + g.panel_begin * panel_floats
                                              : nullptr;
      const int64_t col0 = p * kW;
      const int64_t width = g.n - col0 < kW ? g.n - col0 : kW;
      for (int64_t group0 = chunk0; group0 < chunk_end; group0 += group) {
        const int64_t group_end = chunk_end - group0 < group ? chunk_end : group0 + group;
        for (int64_t q0 = 0; q0 < g.k; q0 += slice) {
          const int64_t q1 = g.k - q0 < slice ? g.k : q0 + slice;
          // The group's rows in blocks of at most kRows; unsliced, as even
          // as can be (32 rows on AVX2: 6, 6, 5, 5, 5, 5, not five 6s and a
          // 2): a block of 1..3 rows waits on its accumulators' FMA latency
          // (2 rows: half the FMA rate). Sliced (few rows, waiting on
          // memory), full blocks first measured faster.
          const int64_t len = group_end - group0, count = (len + Isa::kRows - 1) / Isa::kRows;
          for (int64_t block = 0, row0 = group0; block < count; ++block) {
            const int64_t rows = slice < g.k ? std::min<int64_t>(Isa::kRows, group_end - row0)
                                             : len / count + (block < len % count ? 1 : 0);
            NextPanel ahead;
            if (next != nullptr && next_step > 0 && block > 0) {
              ahead = {next + (block - 1) * g.k * next_step, next_step};
            }
            // Unsliced, a group is the whole chunk and no sums are parked.
            float* parked = slice < g.k ? partial + (row0 - group0) * kW : nullptr;
            RowBlockUpTo<Isa, Isa::kRows, kPrefetch>(g, panel, row0, rows, col0, width, q0, q1, parked, ahead);
            row0 += rows;
          }
        }
      }
    }
  }
}

template <class Isa>
void RunPanels(const PanelArgs& g) {
  if (g.prefetch_steps > 0) return RunPanelsWith<Isa, true>(g);
  RunPanelsWith<Isa, false>(g);
}

}  // namespace
}  // namespace shapeshift::codegen::cpu::skinny

#endif  // SHAPESHIFT_CODEGEN_CPU_SKINNY_KERNEL_IMPL_H_
