// FusedAttention's algorithm, written once over an instruction set's vector
// type (`Isa`: see the Avx512 struct in fused_attention_avx512.cc for the
// operations it needs) and included by one translation unit per core
// (fused_attention_avx512.cc, fused_attention_avx2.cc, and fused_attention.cc
// for the portable one), each compiled with its own target flags. It lives
// in an anonymous namespace so that no inline function compiled for one
// instruction set can be merged with, and called in place of, another's.
//
// One work item is a tile of R = kRV * lanes query rows of one (batch,
// head). Per tile:
//  - Q's rows are copied transposed and zero-padded into qt[d][R], so that a
//    vector holds one feature of `lanes` consecutive query rows;
//  - the keys are visited in blocks of kKeyBlock. For a block, the scores
//    are computed transposed, st[key][R] (one vector over rows per key): the
//    micro-kernel keeps kAccumulators vectors (kKeys keys × kRV row vectors)
//    in registers over d, reading each key's features as broadcasts straight
//    from K (no packing of K) and qt's vectors — K in place where its rows
//    are adjacent, else from the thread's dense copy of the (batch, KV
//    head)'s K and V, made once for all of the head's tiles (DenseKv);
//  - the softmax is vertical (every operation is between rows' own values,
//    no horizontal reduction): the block's y = scale·x + mask (or + fill),
//    its per-row maximum, the running maximum m, the rescale factor
//    alpha = exp(m_old - m_new), p = exp(y - m_new) written over the scores
//    and the running sum l = l·alpha + Σp;
//  - P·V: o[R][dv] (in the thread's workspace) = o·alpha + P·V, a micro-kernel
//    of kPvRows query rows × kPvVecs vectors of V's columns in registers over
//    the block's keys, P broadcast from st, V's rows read in place;
//  - at the end O = o / l, or NaN (0 with nan_to_zero) for a row that saw a
//    NaN or +inf score (tracked per row) or whose scores were all -inf.
//
// Causal tiles first run the key blocks that hold an allowed key for some
// row of the tile, then decide whether the others (wholly above the
// diagonal, or below the window) can be skipped: only when their
// exponentials are exactly 0 in f32 for every row, which CanSkip proves
// (see there); otherwise they run like the rest.
#ifndef SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_IMPL_H_
#define SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_IMPL_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

#include "codegen/cpu/fused_attention_kernel.h"
#include "codegen/cpu/math_coefficients.h"

namespace shapeshift::codegen::cpu::attention {
namespace {

// Keys per block: the scores of one block (kKeyBlock × R floats) stay in L1.
inline constexpr int64_t kKeyBlock = 64;

// Causal block skipping (CanSkip): the fill must be at most this, every
// (non-NaN) row's running maximum at least kSkipRowMaxAtLeast, and a bound
// on |scale · q·k| (from Frobenius norms, see CanSkip) at most
// kSkipScoreBound. Then every
// skipped y = fl(x + fill) <= fill + |x| + |fill|·2^-24 < -9.9e29, at least
// 8e29 below the row's maximum, and exp of anything below -104 is 0 in f32
// (the smallest denormal is 1.4e-45 = exp(-103.3)).
inline constexpr float kSkipFillAtMost = -1e30f;
inline constexpr float kSkipRowMaxAtLeast = -1e29f;
inline constexpr double kSkipScoreBound = 1e20;

enum class MaskMode {
  kNone,    // no mask
  kPerKey,  // row_stride 0: one value per key (or one in all, column stride 0)
  kPerRow,  // column stride 0: one value per query row
  kFull,    // one value per (row, key)
};

MaskMode ModeOf(const AttentionArgs& a) {
  if (a.mask.data == nullptr) return MaskMode::kNone;
  if (a.mask.row_stride == 0) return MaskMode::kPerKey;
  if (a.mask_col_stride == 0) return MaskMode::kPerRow;
  return MaskMode::kFull;
}

// A grow-only, 64-byte aligned scratch buffer per thread and slot (and per
// core: each translation unit has its own): slot 0 the tile's workspace,
// slot 1 its dense copy of K and V.
template <int kSlot = 0>
float* ThreadWorkspace(int64_t floats) {
  thread_local std::unique_ptr<float[]> storage;
  thread_local int64_t capacity = 0;
  if (floats > capacity) {
    storage.reset(new float[floats + 16]);
    capacity = floats;
  }
  auto address = reinterpret_cast<uintptr_t>(storage.get());
  return reinterpret_cast<float*>((address + 63) & ~uintptr_t{63});
}

// The largest dense copy of one (batch, KV head)'s K and V a tile makes
// (Tile::DenseKv); past it, K and V are read in place.
inline constexpr int64_t kDenseKvMaxBytes = 8 << 20;

// exp(x) for x <= 0 (and -inf). Below -87 the result is 0: the true value
// is under 1.7e-38, a weight no softmax sum can notice (flushed rather than
// built as a denormal), so 2^n is built from exponent bits alone. x = n·ln2
// + r, n rounded with the 1.5·2^23 trick, ln2 split in two so n·ln2 is
// exact, then Taylor to r^7 on |r| <= ln2/2 (relative error < 1e-8 before
// the float rounding of a few operations: a few ulp). A NaN gives some
// value; the caller has already marked its row.
template <class Isa>
inline typename Isa::V ExpNonPositive(typename Isa::V x) {
  using V = typename Isa::V;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  constexpr float kFloor = -87.0f;
  const V xc = Isa::Max(x, Isa::Splat(kFloor));
  const V shifted = Isa::Fma(xc, Isa::Splat(static_cast<float>(M_LOG2E)), Isa::Splat(kRound));
  const V n = Isa::Sub(shifted, Isa::Splat(kRound));
  V r = Isa::Fma(n, Isa::Splat(static_cast<float>(-math::kLn2High)), xc);
  r = Isa::Fma(n, Isa::Splat(static_cast<float>(-math::kLn2Low)), r);
  constexpr size_t kTerms = math::kExpTaylor.size();
  V p = Isa::Splat(static_cast<float>(math::kExpTaylor[kTerms - 1]));
  for (size_t i = kTerms - 1; i-- > 0;) p = Isa::Fma(p, r, Isa::Splat(static_cast<float>(math::kExpTaylor[i])));
  return Isa::ZeroBelow(Isa::Mul(p, Isa::Pow2(shifted, std::bit_cast<int32_t>(kRound))), x, kFloor);
}

// Lanes [0, valid) of base[lane * stride], the others 0.
template <class Isa>
inline typename Isa::V GatherRows(const float* base, int64_t stride, int64_t valid, bool stride_fits_int32) {
  if (stride_fits_int32) return Isa::Gather(base, static_cast<int32_t>(stride), static_cast<int>(valid));
  alignas(64) float lanes[Isa::kLanes] = {};
  for (int64_t lane = 0; lane < valid; ++lane) lanes[lane] = base[lane * stride];
  return Isa::Load(lanes);
}

// o[r][0, kVecs·lanes) = o[r]·alpha[r] + Σ_c p[c·p_stride + r] · v[c·v_stride + ...]
// for rows r < kRows and keys c < keys; with kPartial the last vector of V
// has only last_lanes columns (the rest of o's padded row is left at 0·…).
struct PvArgs {
  const float* p = nullptr;      // st + r0
  int64_t p_stride = 0;          // R
  const float* alpha = nullptr;  // alpha + r0
  const float* v = nullptr;      // V's row j0, column e0
  int64_t v_stride = 0;
  int64_t keys = 0;
  float* o = nullptr;  // o + r0 * o_stride + e0
  int64_t o_stride = 0;
  int last_lanes = 0;
};

template <class Isa, int kRows, int kVecs, bool kPartial>
void AccumulatePv(const PvArgs& g) {
  using V = typename Isa::V;
  constexpr int L = Isa::kLanes;
  V acc[kRows][kVecs];
  for (int r = 0; r < kRows; ++r) {
    const V scale = Isa::Splat(g.alpha[r]);
    for (int e = 0; e < kVecs; ++e) acc[r][e] = Isa::Mul(Isa::Load(g.o + r * g.o_stride + e * L), scale);
  }
  const float* p = g.p;
  const float* v = g.v;
  for (int64_t c = 0; c < g.keys; ++c, p += g.p_stride, v += g.v_stride) {
    V vv[kVecs];
    for (int e = 0; e < kVecs; ++e) {
      vv[e] = (kPartial && e == kVecs - 1) ? Isa::LoadPartial(v + e * L, g.last_lanes) : Isa::LoadU(v + e * L);
    }
    for (int r = 0; r < kRows; ++r) {
      const V pr = Isa::Splat(p[r]);
      for (int e = 0; e < kVecs; ++e) acc[r][e] = Isa::Fma(pr, vv[e], acc[r][e]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int e = 0; e < kVecs; ++e) Isa::Store(g.o + r * g.o_stride + e * L, acc[r][e]);
}

template <class Isa, int kRows, int kVecs>
void PvVecs(const PvArgs& g, int vecs, bool partial) {
  if constexpr (kVecs > 1) {
    if (vecs < kVecs) return PvVecs<Isa, kRows, kVecs - 1>(g, vecs, partial);
  }
  if (partial) return AccumulatePv<Isa, kRows, kVecs, true>(g);
  AccumulatePv<Isa, kRows, kVecs, false>(g);
}

template <class Isa, int kRows>
void PvRows(const PvArgs& g, int rows, int vecs, bool partial) {
  if constexpr (kRows > 1) {
    if (rows < kRows) return PvRows<Isa, kRows - 1>(g, rows, vecs, partial);
  }
  PvVecs<Isa, kRows, Isa::kPvVecs>(g, vecs, partial);
}

// One query tile of kRV row vectors.
template <class Isa, int kRV>
class Tile {
 public:
  using V = typename Isa::V;
  using Flags = typename Isa::Flags;
  static constexpr int L = Isa::kLanes;
  static constexpr int64_t R = int64_t{kRV} * L;
  static constexpr int kKeys = Isa::kAccumulators / kRV;  // keys per score micro-tile

  // The workspace's floats for `a`: qt, st, o, then m, l, alpha, bad, mrow,
  // then mt (a full mask's block, transposed like st).
  static int64_t WorkspaceFloats(const AttentionArgs& a) {
    return a.head_dim * R + kKeyBlock * R + R * PaddedDim(a.v_head_dim) + 5 * R + kKeyBlock * R;
  }
  static int64_t PaddedDim(int64_t n) { return (n + L - 1) / L * L; }

  Tile(const AttentionArgs& a, MaskMode mode, bool gather32, float* workspace)
      : a_(a), mode_(mode), gather32_(gather32), dvp_(PaddedDim(a.v_head_dim)) {
    qt_ = workspace;
    st_ = qt_ + a.head_dim * R;
    o_ = st_ + kKeyBlock * R;
    m_ = o_ + R * dvp_;
    l_ = m_ + R;
    alpha_ = l_ + R;
    bad_ = alpha_ + R;
    mrow_ = bad_ + R;
    mt_ = mrow_ + R;
  }

  void Run(int64_t b, int64_t h, int64_t i0) {
    const AttentionArgs& a = a_;
    const int64_t kvh = h / (a.heads / a.kv_heads);
    i0_ = i0;
    rows_ = std::min(R, a.q_len - i0);
    q_ = a.q.data + b * a.q.batch_stride + h * a.q.head_stride + i0 * a.q.row_stride;
    DenseKv(a.k.data + b * a.k.batch_stride + kvh * a.k.head_stride,
            a.v.data + b * a.v.batch_stride + kvh * a.v.head_stride);
    out_ = a.out.data + b * a.out.batch_stride + h * a.out.head_stride + i0 * a.out.row_stride;
    mask_ = mode_ == MaskMode::kNone
                ? nullptr
                : a.mask.data + b * a.mask.batch_stride + h * a.mask.head_stride + i0 * a.mask.row_stride;

    PackQ();
    for (int64_t r = 0; r < R; ++r) m_[r] = -std::numeric_limits<float>::infinity();
    std::fill(l_, l_ + R, 0.0f);
    std::fill(bad_, bad_ + R, 0.0f);
    std::fill(o_, o_ + R * dvp_, 0.0f);
    if (mode_ == MaskMode::kPerRow) {
      for (int r = 0; r < kRV; ++r) {
        const V row = GatherRows<Isa>(mask_ + r * L * a.mask.row_stride, a.mask.row_stride, ValidLanes(r), gather32_);
        Isa::Store(mrow_ + r * L, row);
      }
    }

    const int64_t blocks = (a.kv_len + kKeyBlock - 1) / kKeyBlock;
    int64_t first = 0, last = blocks;  // the blocks that hold an allowed key
    if (a.causal) {
      const int64_t offset = a.kv_len - a.q_len;
      const int64_t j_high = std::min(a.kv_len - 1, i0 + rows_ - 1 + offset);
      const int64_t j_low = a.window > 0 ? std::max<int64_t>(0, i0 + offset - a.window + 1) : 0;
      if (j_high < j_low) {
        first = last = 0;
      } else {
        first = j_low / kKeyBlock;
        last = j_high / kKeyBlock + 1;
      }
    }
    for (int64_t block = first; block < last; ++block) Block(block);
    if ((first > 0 || last < blocks) && !CanSkip()) {
      for (int64_t block = 0; block < first; ++block) Block(block);
      for (int64_t block = last; block < blocks; ++block) Block(block);
    }
    Finish();
  }

 private:
  // K and V of one (batch, KV head), from `k` and `v` in the caller's
  // layout. Rows that are not adjacent (a [b, S, h, d] tensor: rows
  // h * d floats apart, 3 KiB for BERT-base) fall on few cache sets — every
  // fourth 3 KiB row on the same L1 sets, all of a head's rows on a quarter
  // of a 512 KiB L2's — and every tile of the head reads them all again, so
  // such K and V are copied once per (batch, KV head) and thread into dense
  // rows (a plain copy: the same values), unless the head has one tile or
  // the copy would pass kDenseKvMaxBytes.
  void DenseKv(const float* k, const float* v) {
    const AttentionArgs& a = a_;
    k_ = k_source_ = k, v_ = v_source_ = v;
    k_stride_ = a.k.row_stride, v_stride_ = a.v.row_stride;
    const bool adjacent = k_stride_ == a.head_dim && v_stride_ == a.v_head_dim;
    const int64_t floats = a.kv_len * (a.head_dim + a.v_head_dim);
    if (adjacent || a.q_len <= R || floats * static_cast<int64_t>(sizeof(float)) > kDenseKvMaxBytes) return;
    float* dense = ThreadWorkspace<1>(floats);
    float* dense_v = dense + a.kv_len * a.head_dim;
    if (k != dense_k_source_ || v != dense_v_source_ || dense != dense_) {
      for (int64_t j = 0; j < a.kv_len; ++j) {
        std::copy(k + j * k_stride_, k + j * k_stride_ + a.head_dim, dense + j * a.head_dim);
        std::copy(v + j * v_stride_, v + j * v_stride_ + a.v_head_dim, dense_v + j * a.v_head_dim);
      }
      dense_k_source_ = k, dense_v_source_ = v, dense_ = dense;
    }
    k_ = dense, v_ = dense_v;
    k_stride_ = a.head_dim, v_stride_ = a.v_head_dim;
  }

  int64_t ValidLanes(int r) const { return std::clamp<int64_t>(rows_ - int64_t{r} * L, 0, L); }

  // qt[dd][r] = Q[i0 + r][dd], zero past the tile's rows: lanes × lanes
  // blocks transposed in registers where whole (a scalar transpose costs as
  // much as the scores of a short block; gathers are slower still), scalar
  // copies for the rest.
  void PackQ() {
    const int64_t d = a_.head_dim, stride = a_.q.row_stride;
    for (int r = 0; r < kRV; ++r) {
      const float* src = q_ + int64_t{r} * L * stride;
      float* dst = qt_ + r * L;
      const int64_t valid = ValidLanes(r);
      const int64_t whole = valid == L ? d / L * L : 0;
      for (int64_t dd = 0; dd < whole; dd += L) Isa::Transpose(src + dd, stride, dst + dd * R, R);
      for (int64_t dd = whole; dd < d; ++dd) {
        for (int64_t lane = 0; lane < L; ++lane) dst[dd * R + lane] = lane < valid ? src[lane * stride + dd] : 0.0f;
      }
    }
  }

  // st[c][·] = scale · q·k for keys j + c, c < kN.
  template <int kN>
  void Scores(int64_t j, float* s) const {
    V acc[kN][kRV];
    for (int c = 0; c < kN; ++c)
      for (int r = 0; r < kRV; ++r) acc[c][r] = Isa::Zero();
    const int64_t krs = k_stride_, d = a_.head_dim;
    const float* kj = k_ + j * krs;
    const float* qp = qt_;
    for (int64_t dd = 0; dd < d; ++dd, qp += R) {
      V qv[kRV];
      for (int r = 0; r < kRV; ++r) qv[r] = Isa::Load(qp + r * L);
      for (int c = 0; c < kN; ++c) {
        const V kb = Isa::Splat(kj[c * krs + dd]);
        for (int r = 0; r < kRV; ++r) acc[c][r] = Isa::Fma(qv[r], kb, acc[c][r]);
      }
    }
    const V scale = Isa::Splat(a_.scale);
    for (int c = 0; c < kN; ++c)
      for (int r = 0; r < kRV; ++r) Isa::Store(s + c * R + r * L, Isa::Mul(acc[c][r], scale));
  }

  template <int kN>
  void ScoresUpTo(int64_t n, int64_t j, float* s) const {
    if constexpr (kN > 1) {
      if (n < kN) return ScoresUpTo<kN - 1>(n, j, s);
    }
    Scores<kN>(j, s);
  }

  void Block(int64_t block) {
    const int64_t j0 = block * kKeyBlock;
    const int64_t keys = std::min(kKeyBlock, a_.kv_len - j0);
    PrefetchBlock(j0 + kKeyBlock);
    for (int64_t c = 0; c < keys; c += kKeys)
      ScoresUpTo<kKeys>(std::min<int64_t>(kKeys, keys - c), j0 + c, st_ + c * R);
    switch (mode_) {
      case MaskMode::kNone:
        a_.causal ? Softmax<MaskMode::kNone, true>(j0, keys) : Softmax<MaskMode::kNone, false>(j0, keys);
        break;
      case MaskMode::kPerKey:
        a_.causal ? Softmax<MaskMode::kPerKey, true>(j0, keys) : Softmax<MaskMode::kPerKey, false>(j0, keys);
        break;
      case MaskMode::kPerRow:
        a_.causal ? Softmax<MaskMode::kPerRow, true>(j0, keys) : Softmax<MaskMode::kPerRow, false>(j0, keys);
        break;
      case MaskMode::kFull:
        PackMask(j0, keys);
        a_.causal ? Softmax<MaskMode::kFull, true>(j0, keys) : Softmax<MaskMode::kFull, false>(j0, keys);
        break;
    }
    const int64_t dv = a_.v_head_dim;
    const int64_t vectors = dvp_ / L;
    const int last_lanes = static_cast<int>(dv - (vectors - 1) * L);
    for (int64_t r0 = 0; r0 < rows_; r0 += Isa::kPvRows) {
      const int rows = static_cast<int>(std::min<int64_t>(Isa::kPvRows, rows_ - r0));
      for (int64_t e0 = 0; e0 < vectors; e0 += Isa::kPvVecs) {
        const int vecs = static_cast<int>(std::min<int64_t>(Isa::kPvVecs, vectors - e0));
        const bool partial = e0 + vecs == vectors && last_lanes < L;
        PvArgs g;
        g.p = st_ + r0;
        g.p_stride = R;
        g.alpha = alpha_ + r0;
        g.v = v_ + j0 * v_stride_ + e0 * L;
        g.v_stride = v_stride_;
        g.keys = keys;
        g.o = o_ + r0 * dvp_ + e0 * L;
        g.o_stride = dvp_;
        g.last_lanes = last_lanes;
        PvRows<Isa, Isa::kPvRows>(g, rows, vecs, partial);
      }
    }
  }

  // mt[c][r] = M[i0 + r][j0 + c] for the block's keys c < keys, 0 past the
  // tile's rows: the mask's rows are read contiguously, lanes × lanes
  // blocks transposed in registers where whole (a strided gather per key
  // and row vector is several times slower), scalar copies for the rest.
  // Values where the causal mask disallows are read too (within the
  // mask's bounds) but then replaced by the fill.
  void PackMask(int64_t j0, int64_t keys) {
    const int64_t stride = a_.mask.row_stride;
    const int64_t whole_keys = keys / L * L;
    for (int r = 0; r < kRV; ++r) {
      const float* src = mask_ + int64_t{r} * L * stride + j0;
      float* dst = mt_ + r * L;
      const int64_t valid = ValidLanes(r);
      const int64_t whole = valid == L ? whole_keys : 0;
      for (int64_t c = 0; c < whole; c += L) Isa::Transpose(src + c, stride, dst + c * R, R);
      for (int64_t c = whole; c < keys; ++c) {
        for (int64_t lane = 0; lane < L; ++lane) dst[c * R + lane] = lane < valid ? src[lane * stride + c] : 0.0f;
      }
    }
  }

  // Asks for the K and V rows of the block at key j_next into L2 while this
  // block computes (the next block in order; from L3 or memory otherwise,
  // one row at a time at the micro-kernels' pace).
  void PrefetchBlock(int64_t j_next) const {
    if (j_next >= a_.kv_len) return;
    const int64_t keys = std::min(kKeyBlock, a_.kv_len - j_next);
    constexpr int64_t kLine = 64 / sizeof(float);
    for (int64_t c = 0; c < keys; ++c) {
      const float* k = k_ + (j_next + c) * k_stride_;
      for (int64_t e = 0; e < a_.head_dim; e += kLine) __builtin_prefetch(k + e, 0, 2);
      const float* v = v_ + (j_next + c) * v_stride_;
      for (int64_t e = 0; e < a_.v_head_dim; e += kLine) __builtin_prefetch(v + e, 0, 2);
    }
  }

  // The block's scores become y, then p; m, l, alpha and bad are updated.
  template <MaskMode kMode, bool kCausal>
  void Softmax(int64_t j0, int64_t keys) {
    const AttentionArgs& a = a_;
    V top[kRV];
    Flags flags[kRV];
    for (int r = 0; r < kRV; ++r) {
      top[r] = Isa::Splat(-std::numeric_limits<float>::infinity());
      flags[r] = Isa::NoFlags();
    }
    const int64_t offset = a.kv_len - a.q_len;
    const V fill = Isa::Splat(a.fill);
    for (int64_t c = 0; c < keys; ++c) {
      const int64_t j = j0 + c;
      float* s = st_ + c * R;
      [[maybe_unused]] V key_mask;
      if constexpr (kMode == MaskMode::kPerKey) key_mask = Isa::Splat(mask_[j * a.mask_col_stride]);
      for (int r = 0; r < kRV; ++r) {
        const V x = Isa::Load(s + r * L);
        V y = x;
        if constexpr (kMode == MaskMode::kPerKey) y = Isa::Add(x, key_mask);
        if constexpr (kMode == MaskMode::kPerRow) y = Isa::Add(x, Isa::Load(mrow_ + r * L));
        if constexpr (kMode == MaskMode::kFull) y = Isa::Add(x, Isa::Load(mt_ + c * R + r * L));
        if constexpr (kCausal) {
          // Row i may see key j iff j - offset <= i (< j - offset + window).
          const int64_t base = i0_ + int64_t{r} * L;
          const int64_t lo = std::clamp<int64_t>(j - offset - base, 0, L);
          const int64_t hi = a.window > 0 ? std::clamp<int64_t>(j - offset + a.window - base, 0, L) : L;
          y = Isa::SelectLanes(y, Isa::Add(x, fill), static_cast<int>(lo), static_cast<int>(hi));
        }
        Isa::Store(s + r * L, y);
        flags[r] = Isa::MarkBad(flags[r], y);
        top[r] = Isa::Max(top[r], y);
      }
    }
    V shift[kRV];
    for (int r = 0; r < kRV; ++r) {
      const V old_max = Isa::Load(m_ + r * L);
      const V new_max = Isa::Max(old_max, top[r]);
      Isa::Store(m_ + r * L, new_max);
      // A row whose scores are all -inf so far subtracts 0: its p are 0,
      // not exp(-inf - -inf) = NaN (and its o and l are still 0).
      shift[r] = Isa::NegInfToZero(new_max);
      Isa::Store(alpha_ + r * L, ExpNonPositive<Isa>(Isa::Sub(old_max, shift[r])));
      Isa::Store(bad_ + r * L, Isa::Max(Isa::Load(bad_ + r * L), Isa::FlagsToOnes(flags[r])));
    }
    V sum[kRV];
    for (int r = 0; r < kRV; ++r) sum[r] = Isa::Zero();
    for (int64_t c = 0; c < keys; ++c) {
      float* s = st_ + c * R;
      for (int r = 0; r < kRV; ++r) {
        const V p = ExpNonPositive<Isa>(Isa::Sub(Isa::Load(s + r * L), shift[r]));
        Isa::Store(s + r * L, p);
        sum[r] = Isa::Add(sum[r], p);
      }
    }
    for (int r = 0; r < kRV; ++r) {
      Isa::Store(l_ + r * L, Isa::Fma(Isa::Load(l_ + r * L), Isa::Load(alpha_ + r * L), sum[r]));
    }
  }

  // Whether the keys outside the tile's allowed blocks (all of them
  // disallowed for every row of the tile) contribute exactly nothing: each of their
  // y = fl(x + fill) has |x| <= |scale|·|q_i|·|k_j| (Cauchy-Schwarz) <=
  // |scale|·‖Q_tile‖·‖K‖ (Frobenius norms of the tile's queries and of all
  // of the head's keys; 1.01 covers their float rounding) <= kSkipScoreBound
  // and fill <= kSkipFillAtMost, so y < -9.9e29, while every row that is not
  // already NaN has a maximum >= kSkipRowMaxAtLeast from the keys run so far
  // (its final maximum is at least that): exp(y - max) is exactly 0 in f32,
  // as in the graph's softmax, and p·V adds exactly 0 — V's values are
  // checked finite (Σ v² finite), since 0·inf is NaN in the graph. A NaN or
  // inf in Q or K makes the bound NaN or inf: no skip, so a skipped y is
  // never NaN and no row that would be NaN escapes.
  bool CanSkip() {
    const AttentionArgs& a = a_;
    if (!(a.fill <= kSkipFillAtMost)) return false;
    for (int64_t r = 0; r < rows_; ++r) {
      if (bad_[r] == 0.0f && !(m_[r] >= kSkipRowMaxAtLeast)) return false;
    }
    if (k_source_ != norm_keys_ || v_source_ != norm_values_) {  // once per (batch, kv head) and thread
      norm_keys_ = k_source_, norm_values_ = v_source_;
      keys_norm2_ = SumOfSquares(k_, a.kv_len, k_stride_, a.head_dim);
      values_finite_ = std::isfinite(SumOfSquares(v_, a.kv_len, v_stride_, a.v_head_dim));
    }
    if (!values_finite_) return false;
    const double q_norm2 = SumOfSquares(qt_, 1, 0, a.head_dim * R);  // zero-padded rows add 0
    const double bound = 1.01 * std::abs(static_cast<double>(a.scale)) * std::sqrt(q_norm2 * keys_norm2_);
    return bound <= kSkipScoreBound;  // false for NaN
  }

  // Σ x² over `rows` rows of n floats `stride` apart, in float vectors (inf
  // on overflow, NaN for a NaN).
  static double SumOfSquares(const float* x, int64_t rows, int64_t stride, int64_t n) {
    V acc = Isa::Zero();
    const int64_t full = n / L * L;
    for (int64_t r = 0; r < rows; ++r, x += stride) {
      for (int64_t e = 0; e < full; e += L) {
        const V v = Isa::LoadU(x + e);
        acc = Isa::Fma(v, v, acc);
      }
      if (full < n) {
        const V v = Isa::LoadPartial(x + full, static_cast<int>(n - full));
        acc = Isa::Fma(v, v, acc);
      }
    }
    alignas(64) float lanes[L];
    Isa::Store(lanes, acc);
    double sum = 0;
    for (float lane : lanes) sum += lane;
    return sum;
  }

  void Finish() {
    const AttentionArgs& a = a_;
    const float nan_row = a.nan_to_zero ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    for (int64_t r = 0; r < rows_; ++r) {
      float* dst = out_ + r * a.out.row_stride;
      if (bad_[r] != 0.0f || m_[r] == -std::numeric_limits<float>::infinity()) {
        std::fill(dst, dst + a.v_head_dim, nan_row);
        continue;
      }
      const float inv = 1.0f / l_[r];
      const float* src = o_ + r * dvp_;
      for (int64_t e = 0; e < a.v_head_dim; ++e) dst[e] = src[e] * inv;
    }
  }

  const AttentionArgs& a_;
  const MaskMode mode_;
  const bool gather32_;
  const int64_t dvp_;
  int64_t i0_ = 0, rows_ = 0;
  const float *q_ = nullptr, *k_ = nullptr, *v_ = nullptr, *mask_ = nullptr;
  float* out_ = nullptr;
  int64_t k_stride_ = 0, v_stride_ = 0;  // k_'s and v_'s row strides
  const float *k_source_ = nullptr, *v_source_ = nullptr;  // K and V in the caller's tensors
  // What the thread's dense copy (slot 1) holds: the K and V it was made from.
  const float *dense_k_source_ = nullptr, *dense_v_source_ = nullptr, *dense_ = nullptr;
  const float* norm_keys_ = nullptr;    // the keys keys_norm2_ is of (caller's)
  const float* norm_values_ = nullptr;  // the values values_finite_ is of (caller's)
  double keys_norm2_ = 0;
  bool values_finite_ = false;
  float *qt_, *st_, *o_, *m_, *l_, *alpha_, *bad_, *mrow_, *mt_;
};

// ---------------------------------------------------------------------------
// Decode: q_len <= the core's decode_max_q_len (fused_attention_kernel.h; a
// step with a KV cache, q_len = 1, or a few speculative tokens). A query tile would hold 1..4 of its 16
// rows, so the tile's score micro-kernel would waste most of its lanes;
// here the vectors run over the head dim and the keys instead.
//
// A work item is (batch, a run of heads_per_item query heads of one KV
// head): its n = heads_per_item · S query rows share each read of K and V
// (grouped-query heads included), so every K and V row of the (batch, KV
// head) is read from memory once. Per block of kDecodeBlock keys, per row:
//  - the scores of lanes keys at a time: one accumulator vector per key over
//    d (q · k with K's rows loaded contiguously), then SumEach turns the
//    lanes accumulators into one vector whose lane c is key c's dot product;
//  - y = scale·x + mask (the mask's row read contiguously, or one value
//    broadcast) or + fill where the causal band disallows, -inf past T;
//  - the online softmax is horizontal: the block's max (ReduceMax), the
//    rescale alpha = exp(m_old - m_new), p = exp(y - m_new) into the row's
//    p buffer, l = l·alpha + ReduceAdd(Σp);
// then o = o·alpha + P·V over the block, kDecodePvRows rows × kPvVecs
// vectors of V's columns × kDecodePvSplit sets of alternate keys in
// registers, V's rows read in place. Each row's
// arithmetic depends only on the row, never on which rows share its item,
// so the grouping (chosen from the team size) does not change the result.
//
// With a PastCopy (fused_attention.h) the keys below its rows are read from
// the past instead of K and V, and the item that runs a KV head's first
// query heads also copies each block's past rows into K and V just before
// reading them, with streaming stores: nothing in the step reads the copy
// back (the attention reads the past), and in a decode loop the next step's
// read of it comes after the weights have passed through every cache. The
// past is read from memory once, the copy written once, no
// read-for-ownership. Measured on GPT-2 + past against the same copy with
// cached stores (medians of 3 alternations, 12 attentions per step): batch
// 8 x 128 cached positions 4.5 vs 6.4 ms per step, 8 x 32 1.7 vs 2.1, 8 x 8
// 0.8 vs 1.3 (bench/RESULTS.md). A block that straddles the end of the past
// is gathered into the workspace (its rows from both sources), so every
// block is read through one pointer and row stride and the blocks, and
// with them every sum, are the ones K and V alone would give.
inline constexpr int64_t kDecodeBlock = 64;
inline constexpr int kDecodePvRows = 2;
inline constexpr int kDecodePvSplit = 2;

template <class Isa>
class Decode {
 public:
  using V = typename Isa::V;
  using Flags = typename Isa::Flags;
  static constexpr int L = Isa::kLanes;
  static_assert(kDecodeBlock % L == 0);

  static int64_t PaddedDim(int64_t n) { return (n + L - 1) / L * L; }
  // Per row: q (padded), o (padded), p (a block), then m, l, alpha, bad,
  // then a straddling block's K and V rows (dense).
  static int64_t RowFloats(const AttentionArgs& a) {
    return PaddedDim(a.head_dim) + PaddedDim(a.v_head_dim) + kDecodeBlock;
  }
  static int64_t WorkspaceFloats(const AttentionArgs& a, int64_t rows) {
    return rows * RowFloats(a) + 4 * PaddedDim(rows) + kDecodeBlock * (a.head_dim + a.v_head_dim);
  }

  Decode(const AttentionArgs& a, const PastCopy* past, int64_t heads_per_item, float* workspace)
      : a_(a),
        past_(past),
        dp_(PaddedDim(a.head_dim)),
        dvp_(PaddedDim(a.v_head_dim)),
        rows_max_(heads_per_item * a.q_len) {
    qw_ = workspace;
    o_ = qw_ + rows_max_ * dp_;
    p_ = o_ + rows_max_ * dvp_;
    m_ = p_ + rows_max_ * kDecodeBlock;
    l_ = m_ + PaddedDim(rows_max_);
    alpha_ = l_ + PaddedDim(rows_max_);
    bad_ = alpha_ + PaddedDim(rows_max_);
    k_straddle_ = bad_ + PaddedDim(rows_max_);
    v_straddle_ = k_straddle_ + kDecodeBlock * a.head_dim;
  }

  // Query heads [h0, h0 + heads) of batch b (one KV head's); with `copy`,
  // the past's rows are copied into K and V too.
  void Run(int64_t b, int64_t h0, int64_t heads, bool copy) {
    const AttentionArgs& a = a_;
    const int64_t kvh = h0 / (a.heads / a.kv_heads);
    b_ = b, h0_ = h0;
    rows_ = heads * a.q_len;
    k_ = a.k.data + b * a.k.batch_stride + kvh * a.k.head_stride;
    v_ = a.v.data + b * a.v.batch_stride + kvh * a.v.head_stride;
    k_past_ = v_past_ = nullptr;
    past_rows_ = 0;
    if (past_ != nullptr && past_->rows > 0) {
      past_rows_ = past_->rows;
      const AttentionOperand &pk = past_->k, &pv = past_->v;
      if (pk.data != nullptr) k_past_ = pk.data + b * pk.batch_stride + kvh * pk.head_stride;
      if (pv.data != nullptr) v_past_ = pv.data + b * pv.batch_stride + kvh * pv.head_stride;
    }
    for (int64_t r = 0; r < rows_; ++r) {
      const float* q =
          a.q.data + b * a.q.batch_stride + (h0 + r / a.q_len) * a.q.head_stride + (r % a.q_len) * a.q.row_stride;
      float* dst = qw_ + r * dp_;
      std::copy(q, q + a.head_dim, dst);
      std::fill(dst + a.head_dim, dst + dp_, 0.0f);
      m_[r] = -std::numeric_limits<float>::infinity();
      l_[r] = 0.0f;
      bad_[r] = 0.0f;
    }
    std::fill(o_, o_ + rows_ * dvp_, 0.0f);
    for (int64_t j0 = 0; j0 < a.kv_len; j0 += kDecodeBlock) {
      const int64_t keys = std::min(kDecodeBlock, a.kv_len - j0);
      if (copy && j0 < past_rows_) CopyPast(j0, std::min(j0 + keys, past_rows_));
      Prefetch(j0 + kDecodeBlock);
      SetBlock(j0, keys);
      for (int64_t r = 0; r < rows_; ++r) ScoresAndSoftmax(r, j0, keys);
      Pv(keys);
    }
    Finish();
  }

 private:
  // Key j's row of K (V): the past's below past_rows_ where it has one.
  const float* KRow(int64_t j) const {
    return k_past_ != nullptr && j < past_rows_ ? k_past_ + j * past_->k.row_stride : k_ + j * a_.k.row_stride;
  }
  const float* VRow(int64_t j) const {
    return v_past_ != nullptr && j < past_rows_ ? v_past_ + j * past_->v.row_stride : v_ + j * a_.v.row_stride;
  }

  // Rows [j0, j1) of the past into K and V (those the PastCopy has): one
  // run of floats where both sides' rows are adjacent (a dense present and
  // past), else row by row.
  void CopyPast(int64_t j0, int64_t j1) const {
    auto rows = [&](float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t d) {
      if (dst_stride == d && src_stride == d) return Copy(dst + j0 * d, src + j0 * d, (j1 - j0) * d);
      for (int64_t j = j0; j < j1; ++j) Copy(dst + j * dst_stride, src + j * src_stride, d);
    };
    if (k_past_ != nullptr) rows(k_, a_.k.row_stride, k_past_, past_->k.row_stride, a_.head_dim);
    if (v_past_ != nullptr) rows(v_, a_.v.row_stride, v_past_, past_->v.row_stride, a_.v_head_dim);
  }

  // dst[0, n) = src[0, n): whole vectors at aligned addresses streamed,
  // the floats around them stored plainly.
  static void Copy(float* dst, const float* src, int64_t n) {
    constexpr uintptr_t kAlign = L * sizeof(float);
    int64_t i = 0;
    for (; i < n && reinterpret_cast<uintptr_t>(dst + i) % kAlign != 0; ++i) dst[i] = src[i];
    for (; i + L <= n; i += L) Isa::Stream(dst + i, Isa::LoadU(src + i));
    for (; i < n; ++i) dst[i] = src[i];
  }

  // dst's dense rows = rows [j0, j1) of a straddling block: those below
  // the past's end from `past`, the rest from `whole` (each a run of
  // floats where its rows are adjacent).
  void Gather(float* dst, const float* past, int64_t past_stride, const float* whole, int64_t whole_stride, int64_t d,
              int64_t j0, int64_t j1) const {
    auto rows = [&](const float* src, int64_t stride, int64_t from, int64_t to) {
      if (stride == d) return static_cast<void>(std::copy_n(src + from * d, (to - from) * d, dst + (from - j0) * d));
      for (int64_t j = from; j < to; ++j) std::copy_n(src + j * stride, d, dst + (j - j0) * d);
    };
    rows(past, past_stride, j0, past_rows_);
    rows(whole, whole_stride, past_rows_, j1);
  }

  // Where the block of `keys` keys at j0 is read: K and V in place (the
  // past's or the caller's), or a block straddling the past's end gathered
  // into the workspace.
  void SetBlock(int64_t j0, int64_t keys) {
    Place(k_, a_.k.row_stride, k_past_, k_past_ == nullptr ? 0 : past_->k.row_stride, k_straddle_, a_.head_dim, j0,
          j0 + keys, k_block_, k_block_stride_);
    Place(v_, a_.v.row_stride, v_past_, v_past_ == nullptr ? 0 : past_->v.row_stride, v_straddle_, a_.v_head_dim, j0,
          j0 + keys, v_block_, v_block_stride_);
  }

  // SetBlock for one of K and V: `whole` the caller's, `past` the past's (or
  // null), `straddle` the workspace rows.
  void Place(const float* whole, int64_t whole_stride, const float* past, int64_t past_stride, float* straddle,
             int64_t d, int64_t j0, int64_t j1, const float*& base, int64_t& stride) const {
    if (past == nullptr || j0 >= past_rows_) {
      base = whole + j0 * whole_stride, stride = whole_stride;
    } else if (j1 <= past_rows_) {
      base = past + j0 * past_stride, stride = past_stride;
    } else {
      Gather(straddle, past, past_stride, whole, whole_stride, d, j0, j1);
      base = straddle, stride = d;
    }
  }

  // Asks for the K and V rows of the block at key j_next into L1 while
  // this block computes.
  void Prefetch(int64_t j_next) const {
    if (j_next >= a_.kv_len) return;
    const int64_t keys = std::min(kDecodeBlock, a_.kv_len - j_next);
    constexpr int64_t kLine = 64 / sizeof(float);
    for (int64_t c = 0; c < keys; ++c) {
      const float* k = KRow(j_next + c);
      for (int64_t e = 0; e < a_.head_dim; e += kLine) __builtin_prefetch(k + e, 0, 3);
      const float* v = VRow(j_next + c);
      for (int64_t e = 0; e < a_.v_head_dim; e += kLine) __builtin_prefetch(v + e, 0, 3);
    }
  }

  // The row's scores for keys [j0, j0 + keys) become p (in p_ + r·block);
  // m, l, alpha and bad are updated.
  void ScoresAndSoftmax(int64_t r, int64_t j0, int64_t keys) {
    const AttentionArgs& a = a_;
    const int64_t h = h0_ + r / a.q_len, i = r % a.q_len;
    const float* mask = a.mask.data == nullptr
                            ? nullptr
                            : a.mask.data + b_ * a.mask.batch_stride + h * a.mask.head_stride + i * a.mask.row_stride;
    // Row i may see key j iff j - offset <= i (< j - offset + window).
    const int64_t offset = a.kv_len - a.q_len;
    const int64_t last = i + offset;                                       // the last allowed key
    const int64_t first = a.window > 0 ? last - a.window + 1 : INT64_MIN;  // the first
    const float* q = qw_ + r * dp_;
    float* p = p_ + r * kDecodeBlock;
    const V scale = Isa::Splat(a.scale), fill = Isa::Splat(a.fill);
    const V minus_inf = Isa::Splat(-std::numeric_limits<float>::infinity());
    V top = minus_inf;
    Flags flags = Isa::NoFlags();
    for (int64_t c0 = 0; c0 < keys; c0 += L) {
      const int n = static_cast<int>(std::min<int64_t>(L, keys - c0));
      const int64_t j = j0 + c0;
      const V x = Isa::Mul(Dots(q, k_block_ + c0 * k_block_stride_, n), scale);
      V y = x;
      if (mask != nullptr) {
        if (a.mask_col_stride == 0) {
          y = Isa::Add(x, Isa::Splat(*mask));
        } else {
          y = Isa::Add(x, n == L ? Isa::LoadU(mask + j) : Isa::LoadPartial(mask + j, n));
        }
      }
      if (a.causal) {
        const int64_t lo = a.window > 0 ? std::clamp<int64_t>(first - j, 0, L) : 0;
        const int64_t hi = std::clamp<int64_t>(last + 1 - j, 0, L);
        y = Isa::SelectLanes(y, Isa::Add(x, fill), static_cast<int>(lo), static_cast<int>(hi));
      }
      if (n < L) y = Isa::SelectLanes(y, minus_inf, 0, n);
      Isa::Store(p + c0, y);
      flags = Isa::MarkBad(flags, y);
      top = Isa::Max(top, y);
    }
    const float old_max = m_[r], block_max = Isa::ReduceMax(top);
    const float new_max = block_max > old_max ? block_max : old_max;
    m_[r] = new_max;
    // A row whose scores are all -inf so far subtracts 0 (see Tile::Softmax).
    const float shift = new_max == -std::numeric_limits<float>::infinity() ? 0.0f : new_max;
    alpha_[r] = First(ExpNonPositive<Isa>(Isa::Splat(old_max - shift)));
    bad_[r] = std::max(bad_[r], Isa::ReduceMax(Isa::FlagsToOnes(flags)));
    const V shift_v = Isa::Splat(shift);
    V sum = Isa::Zero();
    for (int64_t c0 = 0; c0 < keys; c0 += L) {
      const V e = ExpNonPositive<Isa>(Isa::Sub(Isa::Load(p + c0), shift_v));
      Isa::Store(p + c0, e);
      sum = Isa::Add(sum, e);
    }
    l_[r] = l_[r] * alpha_[r] + Isa::ReduceAdd(sum);
  }

  static float First(V v) {
    alignas(64) float lanes[L];
    Isa::Store(lanes, v);
    return lanes[0];
  }

  // Lane c < n: q · K[c] over the head dim (K's rows the block's stride apart);
  // lanes from n on: 0. Head dims up to kDecodeMaxDotVecs whole vectors (and
  // a partial one) have a fully unrolled kernel, one K row pointer stepping
  // by the row stride; the rest a loop.
  V Dots(const float* q, const float* k, int n) const {
    const int64_t d = a_.head_dim;
    const int64_t whole = d / L;
    const bool tail = whole * L < d;
    switch (whole) {
      case 0:
        return DotsOf<0>(q, k, n, tail);
      case 1:
        return DotsOf<1>(q, k, n, tail);
      case 2:
        return DotsOf<2>(q, k, n, tail);
      case 3:
        return DotsOf<3>(q, k, n, tail);
      case 4:
        return DotsOf<4>(q, k, n, tail);
      case 5:
        return DotsOf<5>(q, k, n, tail);
      case 6:
        return DotsOf<6>(q, k, n, tail);
      case 7:
        return DotsOf<7>(q, k, n, tail);
      case 8:
        return DotsOf<8>(q, k, n, tail);
      default:
        return DotsAny(q, k, n);
    }
  }

  template <int kVecs>
  V DotsOf(const float* q, const float* k, int n, bool tail) const {
    if (n == L) return tail ? DotsFixed<kVecs, true, true>(q, k, n) : DotsFixed<kVecs, false, true>(q, k, n);
    return tail ? DotsFixed<kVecs, true, false>(q, k, n) : DotsFixed<kVecs, false, false>(q, k, n);
  }

  template <int kVecs, bool kTail, bool kWhole>
  V DotsFixed(const float* q, const float* k, int n) const {
    const int64_t krs = k_block_stride_;
    const int tail = static_cast<int>(a_.head_dim - kVecs * L);
    V acc[L];
#pragma GCC unroll 16
    for (int c = 0; c < L; ++c) {
      V sum = Isa::Zero();
      if (kWhole || c < n) {
#pragma GCC unroll 16
        for (int e = 0; e < kVecs; ++e) sum = Isa::Fma(Isa::Load(q + e * L), Isa::LoadU(k + e * L), sum);
        if constexpr (kTail) sum = Isa::Fma(Isa::Load(q + kVecs * L), Isa::LoadPartial(k + kVecs * L, tail), sum);
      }
      acc[c] = sum;
      k += krs;
    }
    return Isa::SumEach(acc);
  }

  V DotsAny(const float* q, const float* k, int n) const {
    const int64_t d = a_.head_dim, krs = k_block_stride_;
    const int64_t whole = d / L * L;
    V acc[L];
    for (int c = 0; c < L; ++c) acc[c] = Isa::Zero();
    for (int c = 0; c < n; ++c) {
      const float* kc = k + c * krs;
      V sum = Isa::Zero();
      for (int64_t dd = 0; dd < whole; dd += L) sum = Isa::Fma(Isa::Load(q + dd), Isa::LoadU(kc + dd), sum);
      if (whole < d)
        sum = Isa::Fma(Isa::Load(q + whole), Isa::LoadPartial(kc + whole, static_cast<int>(d - whole)), sum);
      acc[c] = sum;
    }
    return Isa::SumEach(acc);
  }

  // o[r] = o[r]·alpha[r] + Σ_c p[r][c] · V[j0 + c] for every row.
  void Pv(int64_t keys) {
    const int64_t vectors = dvp_ / L;
    const int last_lanes = static_cast<int>(a_.v_head_dim - (vectors - 1) * L);
    for (int64_t r0 = 0; r0 < rows_; r0 += kDecodePvRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kDecodePvRows, rows_ - r0));
      for (int64_t e0 = 0; e0 < vectors; e0 += Isa::kPvVecs) {
        const int vecs = static_cast<int>(std::min<int64_t>(Isa::kPvVecs, vectors - e0));
        PvArgs g;
        g.p = p_ + r0 * kDecodeBlock;
        g.p_stride = kDecodeBlock;  // here: between rows (keys are adjacent)
        g.alpha = alpha_ + r0;
        g.v = v_block_ + e0 * L;
        g.v_stride = v_block_stride_;
        g.keys = keys;
        g.o = o_ + r0 * dvp_ + e0 * L;
        g.o_stride = dvp_;
        g.last_lanes = last_lanes;
        PvRowsOf<kDecodePvRows>(g, rows, vecs, e0 + vecs == vectors && last_lanes < L);
      }
    }
  }

  // kDecodePvSplit accumulator sets over alternate keys (added in a fixed
  // order at the end) keep enough FMA chains in flight for a single row;
  // the split is the same for every kRows, so that a row's sums do not
  // depend on how many rows share the item.
  template <int kRows, int kVecs, bool kPartial>
  static void AccumulateRowsPv(const PvArgs& g) {
    constexpr int kSplit = kDecodePvSplit;
    V acc[kSplit][kRows][kVecs];
    for (int r = 0; r < kRows; ++r) {
      const V scale = Isa::Splat(g.alpha[r]);
      for (int e = 0; e < kVecs; ++e) {
        acc[0][r][e] = Isa::Mul(Isa::Load(g.o + r * g.o_stride + e * L), scale);
        for (int s = 1; s < kSplit; ++s) acc[s][r][e] = Isa::Zero();
      }
    }
    auto step = [&](int s, const float* v, int64_t c) {
      V vv[kVecs];
      for (int e = 0; e < kVecs; ++e) {
        vv[e] = (kPartial && e == kVecs - 1) ? Isa::LoadPartial(v + e * L, g.last_lanes) : Isa::LoadU(v + e * L);
      }
      for (int r = 0; r < kRows; ++r) {
        const V pr = Isa::Splat(g.p[r * g.p_stride + c]);
        for (int e = 0; e < kVecs; ++e) acc[s][r][e] = Isa::Fma(pr, vv[e], acc[s][r][e]);
      }
    };
    const float* v = g.v;
    int64_t c = 0;
    for (; c + kSplit <= g.keys; c += kSplit, v += kSplit * g.v_stride) {
      for (int s = 0; s < kSplit; ++s) step(s, v + s * g.v_stride, c + s);
    }
    for (int s = 0; c < g.keys; ++c, ++s, v += g.v_stride) step(s, v, c);
    for (int r = 0; r < kRows; ++r)
      for (int e = 0; e < kVecs; ++e) {
        V sum = acc[0][r][e];
        for (int s = 1; s < kSplit; ++s) sum = Isa::Add(sum, acc[s][r][e]);
        Isa::Store(g.o + r * g.o_stride + e * L, sum);
      }
  }

  template <int kRows, int kVecs>
  static void PvVecsOf(const PvArgs& g, int vecs, bool partial) {
    if constexpr (kVecs > 1) {
      if (vecs < kVecs) return PvVecsOf<kRows, kVecs - 1>(g, vecs, partial);
    }
    if (partial) return AccumulateRowsPv<kRows, kVecs, true>(g);
    AccumulateRowsPv<kRows, kVecs, false>(g);
  }

  template <int kRows>
  static void PvRowsOf(const PvArgs& g, int rows, int vecs, bool partial) {
    if constexpr (kRows > 1) {
      if (rows < kRows) return PvRowsOf<kRows - 1>(g, rows, vecs, partial);
    }
    PvVecsOf<kRows, Isa::kPvVecs>(g, vecs, partial);
  }

  void Finish() {
    const AttentionArgs& a = a_;
    const float nan_row = a.nan_to_zero ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    for (int64_t r = 0; r < rows_; ++r) {
      float* dst = a.out.data + b_ * a.out.batch_stride + (h0_ + r / a.q_len) * a.out.head_stride +
                   (r % a.q_len) * a.out.row_stride;
      if (bad_[r] != 0.0f || m_[r] == -std::numeric_limits<float>::infinity()) {
        std::fill(dst, dst + a.v_head_dim, nan_row);
        continue;
      }
      const float inv = 1.0f / l_[r];
      const float* src = o_ + r * dvp_;
      for (int64_t e = 0; e < a.v_head_dim; ++e) dst[e] = src[e] * inv;
    }
  }

  const AttentionArgs& a_;
  const PastCopy* past_;  // or null
  const int64_t dp_, dvp_, rows_max_;
  int64_t b_ = 0, h0_ = 0, rows_ = 0;
  float *k_ = nullptr, *v_ = nullptr;  // this (batch, KV head)'s K and V
  const float *k_past_ = nullptr, *v_past_ = nullptr;  // the past's, or null
  int64_t past_rows_ = 0;
  const float *k_block_ = nullptr, *v_block_ = nullptr;  // the block's first key, as SetBlock placed it
  int64_t k_block_stride_ = 0, v_block_stride_ = 0;
  float *k_straddle_ = nullptr, *v_straddle_ = nullptr;
  float *qw_, *o_, *p_, *m_, *l_, *alpha_, *bad_;
};

// Decode items [begin, end): item (b · kv_heads + kvh) · parts + part runs
// query heads [part · heads_per_item, +heads_per_item) of KV head kvh's
// group (parts = group / heads_per_item). With a PastCopy (or null), part
// 0 of each KV head copies its past.
template <class Isa>
void RunDecodeItems(const AttentionArgs& a, const PastCopy* past, int64_t heads_per_item, int64_t begin,
                    int64_t end) {
  using D = Decode<Isa>;
  const int64_t group = a.heads / a.kv_heads, parts = group / heads_per_item;
  D decode(a, past, heads_per_item, ThreadWorkspace(D::WorkspaceFloats(a, heads_per_item * a.q_len)));
  bool copied = false;
  for (int64_t item = begin; item < end; ++item) {
    const int64_t part = item % parts, bkv = item / parts;
    const int64_t b = bkv / a.kv_heads, kvh = bkv % a.kv_heads;
    decode.Run(b, kvh * group + part * heads_per_item, heads_per_item, past != nullptr && part == 0);
    copied = copied || (past != nullptr && part == 0);
  }
  // The streamed rows, ordered before the team's barrier (after which
  // others read them).
  if (copied) Isa::Fence();
}

template <class Isa, int kRV>
void RunItemsWith(const AttentionArgs& a, int64_t begin, int64_t end) {
  using T = Tile<Isa, kRV>;
  const int64_t tiles = (a.q_len + T::R - 1) / T::R;
  const MaskMode mode = ModeOf(a);
  const bool gather32 =
      a.mask.row_stride <= std::numeric_limits<int32_t>::max() / Isa::kLanes;  // (lanes-1)·stride + 1 fits
  T tile(a, mode, gather32, ThreadWorkspace(T::WorkspaceFloats(a)));
  for (int64_t item = begin; item < end; ++item) {
    const int64_t t = item % tiles, bh = item / tiles;
    tile.Run(bh / a.heads, bh % a.heads, t * T::R);
  }
}

template <class Isa, int kRV>
void RunItemsUpTo(const AttentionArgs& a, int64_t vectors, int64_t begin, int64_t end) {
  if constexpr (kRV > 1) {
    if (vectors < kRV) return RunItemsUpTo<Isa, kRV - 1>(a, vectors, begin, end);
  }
  RunItemsWith<Isa, kRV>(a, begin, end);
}

// Items [begin, end) with the tiling of fused_attention_kernel.h.
template <class Isa>
void RunItems(const AttentionArgs& a, int64_t begin, int64_t end) {
  constexpr CoreShape kShape{Isa::kLanes, Isa::kMaxRowVectors};
  const int64_t vectors = TileRows(kShape, a.q_len) / Isa::kLanes;
  RunItemsUpTo<Isa, Isa::kMaxRowVectors>(a, vectors, begin, end);
}

}  // namespace
}  // namespace shapeshift::codegen::cpu::attention

#endif  // SHAPESHIFT_CODEGEN_CPU_FUSED_ATTENTION_IMPL_H_
