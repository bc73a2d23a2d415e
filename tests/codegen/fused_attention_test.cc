// FusedAttention (codegen/cpu/fused_attention.h) must compute the graph's
// unfused attention — x = scale·(q·k) and y = x + mask (or + fill) in f32,
// softmax over each row, P·V — on every core this CPU runs, for any sizes,
// layouts (through strides), grouped-query heads, masks broadcast through
// strides, causal masks with or without a window, and special values; and
// its result must not depend on the thread count.
//
// The reference below follows the header's semantics literally: x and y in
// float like the graph, the softmax and P·V in double.
#include "codegen/cpu/fused_attention.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/parallel_run.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::testing::HasSubstr;

// Max |fused - reference| per output element, with every input uniform in
// [-1, 1] (the reference in double; the fused kernel's dot products and
// exponentials in f32, summed in another order).
constexpr double kTolerance = 2e-5;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kLowestFill = -3.4028235e38f;  // torch.finfo(float32).min

// The cores this CPU runs: the portable one always, AVX2 and AVX-512 where
// present (and allowed).
std::vector<AttentionIsa> Cores() {
  std::vector<AttentionIsa> cores = {AttentionIsa::kPortable};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) cores.push_back(AttentionIsa::kAvx2);
  if (SelectedAttentionIsa() == AttentionIsa::kAvx512) cores.push_back(AttentionIsa::kAvx512);
  return cores;
}

enum class Layout {
  kBHSD,  // dense [batch, heads, rows, dim]
  kBSHD,  // [batch, rows, heads, dim]: the heads interleaved in each row
};

// Which dims of [batch, heads, S, T] the mask has (the others broadcast
// with stride 0).
enum class MaskShape {
  kNone,
  kB11T,  // [b, 1, 1, T]: padding
  kB1ST,  // [b, 1, S, T]
  k1HST,  // [1, h, S, T]
  kBHST,  // [b, h, S, T]
  kBHS1,  // [b, h, S, 1]: mask_col_stride 0
  k1111,  // one value
};

struct Problem {
  int64_t batch = 1, heads = 1, kv_heads = 1, q_len = 1, kv_len = 1, head_dim = 64, v_head_dim = 64;
  Layout layout = Layout::kBHSD;
  MaskShape mask = MaskShape::kNone;
  bool causal = false;
  int64_t window = 0;
  float fill = 0.0f;
  bool nan_to_zero = false;
  float scale = 1.0f;
  uint32_t seed = 1;
  // K's and V's rows per head in memory (a KV cache's capacity): rows from
  // kv_len on are NaN and must not be read. 0: kv_len.
  int64_t kv_capacity = 0;
  // A materialized mask's rows are T + mask_row_pad apart.
  int64_t mask_row_pad = 0;

  std::string Describe() const {
    return absl::StrCat("b=", batch, " h=", heads, " kvh=", kv_heads, " S=", q_len, " T=", kv_len, " d=", head_dim,
                        " dv=", v_head_dim, " layout=", layout == Layout::kBHSD ? "bhsd" : "bshd",
                        " mask=", static_cast<int>(mask), causal ? " causal" : "", " window=", window, " fill=", fill,
                        nan_to_zero ? " nan_to_zero" : "", " scale=", scale, " capacity=", kv_capacity,
                        " mask_row_pad=", mask_row_pad);
  }
};

// One [B, H, R, C] operand in `layout`, filled in logical order, so that
// two layouts of the same problem hold the same values.
struct Tensor {
  std::vector<float> data;
  AttentionOperand op;

  Tensor(int64_t b, int64_t h, int64_t r, int64_t c, Layout layout) : data(b * h * r * c) {
    if (layout == Layout::kBHSD) {
      op = {nullptr, h * r * c, r * c, c};
    } else {
      op = {nullptr, r * h * c, c, h * c};
    }
    op.data = data.data();
    dims[0] = b, dims[1] = h, dims[2] = r, dims[3] = c;
  }
  float& at(int64_t b, int64_t h, int64_t r, int64_t c) {
    return data[b * op.batch_stride + h * op.head_stride + r * op.row_stride + c];
  }
  void Randomize(std::mt19937& rng) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int64_t b = 0; b < dims[0]; ++b)
      for (int64_t h = 0; h < dims[1]; ++h)
        for (int64_t r = 0; r < dims[2]; ++r)
          for (int64_t c = 0; c < dims[3]; ++c) at(b, h, r, c) = uniform(rng);
  }
  int64_t dims[4];
};

// A problem's buffers (random in [-1, 1]) and its AttentionArgs.
struct Buffers {
  explicit Buffers(const Problem& p)
      : q(p.batch, p.heads, p.q_len, p.head_dim, p.layout),
        k(p.batch, p.kv_heads, std::max(p.kv_len, p.kv_capacity), p.head_dim, p.layout),
        v(p.batch, p.kv_heads, std::max(p.kv_len, p.kv_capacity), p.v_head_dim, p.layout),
        out(p.batch, p.heads, p.q_len, p.v_head_dim, p.layout) {
    std::mt19937 rng(p.seed);
    q.Randomize(rng);
    k.Randomize(rng);
    v.Randomize(rng);
    for (Tensor* t : {&k, &v})
      for (int64_t b = 0; b < t->dims[0]; ++b)
        for (int64_t h = 0; h < t->dims[1]; ++h)
          for (int64_t r = p.kv_len; r < t->dims[2]; ++r)
            for (int64_t c = 0; c < t->dims[3]; ++c) t->at(b, h, r, c) = kNaN;  // past the cache's keys
    std::fill(out.data.begin(), out.data.end(), -12345.0f);                     // never the result
    args.batch = p.batch, args.heads = p.heads, args.kv_heads = p.kv_heads;
    args.q_len = p.q_len, args.kv_len = p.kv_len;
    args.head_dim = p.head_dim, args.v_head_dim = p.v_head_dim;
    args.q = q.op, args.k = k.op, args.v = v.op, args.out = out.op;
    args.causal = p.causal, args.window = p.window, args.fill = p.fill;
    args.nan_to_zero = p.nan_to_zero, args.scale = p.scale;
    MakeMask(p, rng);
  }

  void MakeMask(const Problem& p, std::mt19937& rng) {
    const int64_t b = p.batch, h = p.heads, s = p.q_len, t = p.kv_len, rt = t + p.mask_row_pad;
    int64_t size = 0;
    AttentionOperand& m = args.mask;
    args.mask_col_stride = 1;
    switch (p.mask) {
      case MaskShape::kNone:
        return;
      case MaskShape::kB11T:
        size = b * t, m.batch_stride = t;
        break;
      case MaskShape::kB1ST:
        size = b * s * rt, m.batch_stride = s * rt, m.row_stride = rt;
        break;
      case MaskShape::k1HST:
        size = h * s * rt, m.head_stride = s * rt, m.row_stride = rt;
        break;
      case MaskShape::kBHST:
        size = b * h * s * rt, m.batch_stride = h * s * rt, m.head_stride = s * rt, m.row_stride = rt;
        break;
      case MaskShape::kBHS1:
        size = b * h * s, m.batch_stride = h * s, m.head_stride = s, m.row_stride = 1;
        args.mask_col_stride = 0;
        break;
      case MaskShape::k1111:
        size = 1;
        args.mask_col_stride = 0;
        break;
    }
    mask.resize(size);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (float& x : mask) x = uniform(rng);
    if (m.row_stride == rt && p.mask_row_pad > 0) {
      for (size_t n = 0; n < mask.size(); ++n) {
        if (static_cast<int64_t>(n) % rt >= t) mask[n] = kNaN;  // past the row's T keys
      }
    }
    m.data = mask.data();
  }

  // The mask element (b, h, i, j) (the problem must have a mask).
  float& MaskAt(int64_t b, int64_t h, int64_t i, int64_t j) {
    const AttentionOperand& m = args.mask;
    return mask[b * m.batch_stride + h * m.head_stride + i * m.row_stride + j * args.mask_col_stride];
  }

  Tensor q, k, v, out;
  std::vector<float> mask;
  AttentionArgs args;
};

float At(const AttentionOperand& op, int64_t b, int64_t h, int64_t r, int64_t c) {
  return op.data[b * op.batch_stride + h * op.head_stride + r * op.row_stride + c];
}

// The header's semantics, literally: out[b][h][i][e] in double, [b, h, S, dv].
std::vector<double> Reference(const AttentionArgs& a) {
  const int64_t S = a.q_len, T = a.kv_len, group = a.heads / a.kv_heads;
  std::vector<double> out(a.batch * a.heads * S * a.v_head_dim);
  std::vector<float> y(T);
  std::vector<double> p(T);
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t kvh = h / group;
      for (int64_t i = 0; i < S; ++i) {
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < a.head_dim; ++d) dot += double{At(a.q, b, h, i, d)} * At(a.k, b, kvh, j, d);
          const float x = a.scale * static_cast<float>(dot);
          float m = 0.0f;
          if (a.mask.data != nullptr) {
            m = a.mask.data[b * a.mask.batch_stride + h * a.mask.head_stride + i * a.mask.row_stride +
                            j * a.mask_col_stride];
          }
          bool allowed = true;
          if (a.causal) {
            allowed = j <= i + (T - S) && (a.window == 0 || j > i + (T - S) - a.window);
          }
          y[j] = allowed ? x + m : x + a.fill;
        }
        double top = -std::numeric_limits<double>::infinity();
        bool nan_row = false;
        for (float value : y) {
          if (std::isnan(value) || value == kInf) nan_row = true;
          top = std::max(top, double{value});
        }
        if (top == -std::numeric_limits<double>::infinity()) nan_row = true;  // every score -inf
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) sum += p[j] = std::exp(y[j] - top);
        for (int64_t j = 0; j < T; ++j) {
          p[j] = nan_row ? std::numeric_limits<double>::quiet_NaN() : p[j] / sum;
          if (a.nan_to_zero && std::isnan(p[j])) p[j] = 0;
        }
        for (int64_t e = 0; e < a.v_head_dim; ++e) {
          double o = 0;
          for (int64_t j = 0; j < T; ++j) o += p[j] * At(a.v, b, kvh, j, e);
          out[((b * a.heads + h) * S + i) * a.v_head_dim + e] = o;
        }
      }
    }
  }
  return out;
}

// Compares the buffers' output with `want`.
void ExpectOutputMatches(const Buffers& buffers, const std::vector<double>& want) {
  const AttentionArgs& a = buffers.args;
  double worst = 0;
  int64_t mismatches = 0;
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      for (int64_t i = 0; i < a.q_len; ++i) {
        for (int64_t e = 0; e < a.v_head_dim; ++e) {
          const double w = want[((b * a.heads + h) * a.q_len + i) * a.v_head_dim + e];
          const float got = At(a.out, b, h, i, e);
          const bool ok = std::isnan(w) ? std::isnan(got) : std::isinf(w) ? got == w : std::abs(got - w) <= kTolerance;
          if (std::isfinite(w) && std::isfinite(got)) worst = std::max(worst, std::abs(got - w));
          if (!ok && mismatches++ < 5) {
            ADD_FAILURE() << "out[" << b << "][" << h << "][" << i << "][" << e << "] = " << got << ", want " << w;
          }
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << "max |diff| " << worst;
}

// Runs `isa` on the buffers' arguments and compares with `want`.
void ExpectMatches(AttentionIsa isa, Buffers& buffers, const std::vector<double>& want, const std::string& what) {
  SCOPED_TRACE(absl::StrCat(what, " core=", AttentionIsaName(isa)));
  std::fill(buffers.out.data.begin(), buffers.out.data.end(), -12345.0f);
  absl::Status run = RunFusedAttentionOn(isa, buffers.args);
  ASSERT_TRUE(run.ok()) << run;
  ExpectOutputMatches(buffers, want);
}

void CheckOnEveryCore(const Problem& p) {
  Buffers buffers(p);
  const std::vector<double> want = Reference(buffers.args);
  for (AttentionIsa isa : Cores()) ExpectMatches(isa, buffers, want, p.Describe());
}

void CheckOnEveryCore(Buffers& buffers, const std::string& what) {
  const std::vector<double> want = Reference(buffers.args);
  for (AttentionIsa isa : Cores()) ExpectMatches(isa, buffers, want, what);
}

constexpr int64_t kOddSizes[] = {1, 2, 7, 16, 17, 63, 64, 65, 130, 257};

TEST(FusedAttentionTest, SelectsTheWidestAllowedCore) {
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const char* limit = std::getenv("SHAPESHIFT_MAX_CPU_ISA");
  const bool limited = limit != nullptr && std::string(limit) == "avx2";
  const AttentionIsa want = avx512 && !limited ? AttentionIsa::kAvx512
                            : avx2             ? AttentionIsa::kAvx2
                                               : AttentionIsa::kPortable;
  EXPECT_EQ(SelectedAttentionIsa(), want);
  EXPECT_STREQ(AttentionIsaName(AttentionIsa::kAvx512), "avx512");
  EXPECT_STREQ(AttentionIsaName(AttentionIsa::kAvx2), "avx2");
  EXPECT_STREQ(AttentionIsaName(AttentionIsa::kPortable), "portable");
}

TEST(FusedAttentionTest, EverySizePairMatchesTheReference) {
  // S and T independently over odd and block-edge sizes (the key block is
  // 64, the query tiles 8..64 rows), with a padding mask and GQA.
  for (int64_t s : kOddSizes) {
    for (int64_t t : kOddSizes) {
      Problem p;
      p.heads = 2, p.kv_heads = 1, p.q_len = s, p.kv_len = t;
      p.mask = MaskShape::kB11T;
      p.scale = 0.125f;
      p.seed = static_cast<uint32_t>(s * 1000 + t);
      CheckOnEveryCore(p);
    }
  }
}

TEST(FusedAttentionTest, CausalWithPastOffsetMatchesTheReference) {
  // T >= S: the queries are the last S of T positions (a KV cache).
  for (int64_t s : kOddSizes) {
    for (int64_t t : kOddSizes) {
      if (t < s) continue;
      for (float fill : {kLowestFill, -10000.0f}) {
        Problem p;
        p.q_len = s, p.kv_len = t, p.causal = true, p.fill = fill;
        p.scale = 0.125f;
        p.seed = static_cast<uint32_t>(s * 1000 + t);
        CheckOnEveryCore(p);
      }
    }
  }
}

TEST(FusedAttentionTest, CausalWithFewerKeysThanQueriesMatchesTheReference) {
  // T < S: the first S - T rows allow no key at all, so their softmax runs
  // over the filled scores alone (uniform with the lowest fill).
  for (auto [s, t] : {std::pair<int64_t, int64_t>{17, 7}, {130, 65}, {257, 64}, {65, 1}}) {
    Problem p;
    p.q_len = s, p.kv_len = t, p.causal = true, p.fill = kLowestFill;
    p.seed = static_cast<uint32_t>(s + t);
    CheckOnEveryCore(p);
  }
}

TEST(FusedAttentionTest, CausalWindowMatchesTheReference) {
  for (int64_t window : {1, 5, 64, 100}) {
    for (auto [s, t] : {std::pair<int64_t, int64_t>{257, 257}, {130, 257}, {65, 65}, {7, 130}}) {
      for (float fill : {kLowestFill, -10000.0f}) {
        Problem p;
        p.heads = 2, p.q_len = s, p.kv_len = t, p.causal = true, p.window = window, p.fill = fill;
        p.mask = MaskShape::kB11T;
        p.scale = 0.3f;
        p.seed = static_cast<uint32_t>(window * 7 + s + t);
        CheckOnEveryCore(p);
      }
    }
  }
}

TEST(FusedAttentionTest, HeadDimsMatchTheReference) {
  // Multiples of 16 and of 8, and dims no vector width divides; V's dim
  // apart from Q's and K's.
  for (auto [d, dv] : {std::pair<int64_t, int64_t>{64, 64},
                       {32, 32},
                       {80, 80},
                       {128, 128},
                       {40, 40},
                       {24, 24},
                       {64, 32},
                       {32, 80},
                       {40, 128},
                       {3, 5},
                       {1, 1},
                       {96, 200},
                       {24, 20},
                       {16, 45},
                       {7, 70}}) {
    Problem p;
    p.batch = 2, p.heads = 2, p.q_len = 33, p.kv_len = 70, p.head_dim = d, p.v_head_dim = dv;
    p.mask = MaskShape::kB1ST;
    p.scale = 1.0f / std::sqrt(static_cast<float>(d));
    p.seed = static_cast<uint32_t>(d * 1000 + dv);
    CheckOnEveryCore(p);
  }
}

TEST(FusedAttentionTest, BatchesHeadsAndGroupedQueryHeadsMatchTheReference) {
  for (int64_t kv_heads : {3, 1}) {
    for (int64_t heads_per_group : {1, 2}) {
      Problem p;
      p.batch = 2, p.heads = kv_heads * heads_per_group, p.kv_heads = kv_heads;
      if (kv_heads == 3 && heads_per_group == 1) p.heads = 3;  // batch 2 × heads 3, no grouping
      p.q_len = 65, p.kv_len = 63;
      p.mask = MaskShape::kBHST;
      p.scale = 0.2f;
      p.seed = static_cast<uint32_t>(kv_heads * 10 + heads_per_group);
      CheckOnEveryCore(p);
    }
  }
  Problem p;
  p.batch = 2, p.heads = 6, p.kv_heads = 2, p.q_len = 17, p.kv_len = 130, p.causal = true, p.fill = kLowestFill;
  p.mask = MaskShape::kB1ST;
  CheckOnEveryCore(p);
}

TEST(FusedAttentionTest, EveryMaskBroadcastMatchesTheReference) {
  for (MaskShape mask : {MaskShape::kNone, MaskShape::kB11T, MaskShape::kB1ST, MaskShape::k1HST, MaskShape::kBHST,
                         MaskShape::kBHS1, MaskShape::k1111}) {
    for (bool causal : {false, true}) {
      Problem p;
      p.batch = 2, p.heads = 3, p.q_len = 65, p.kv_len = 130, p.mask = mask;
      p.causal = causal, p.fill = kLowestFill;
      p.scale = 0.5f;
      p.seed = static_cast<uint32_t>(static_cast<int>(mask) * 2 + causal);
      CheckOnEveryCore(p);
    }
  }
}

TEST(FusedAttentionTest, StridedLayoutGivesTheDenseLayoutsResult) {
  // [b, S, h, d] read through strides gives bit for bit what dense
  // [b, h, S, d] gives: the same values, summed in the same order.
  for (bool causal : {false, true}) {
    Problem p;
    p.batch = 2, p.heads = 3, p.q_len = 65, p.kv_len = 130, p.head_dim = 40, p.v_head_dim = 24;
    p.kv_heads = 3;  // K's and V's rows strided too (one KV head's rows would be adjacent)
    p.mask = MaskShape::kB1ST, p.causal = causal, p.fill = kLowestFill, p.scale = 0.4f;
    Problem strided = p;
    strided.layout = Layout::kBSHD;
    Buffers dense_buffers(p), strided_buffers(strided);
    CheckOnEveryCore(strided_buffers, strided.Describe());
    for (AttentionIsa isa : Cores()) {
      SCOPED_TRACE(AttentionIsaName(isa));
      ASSERT_TRUE(RunFusedAttentionOn(isa, dense_buffers.args).ok());
      ASSERT_TRUE(RunFusedAttentionOn(isa, strided_buffers.args).ok());
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.heads; ++h)
          for (int64_t i = 0; i < p.q_len; ++i)
            for (int64_t e = 0; e < p.v_head_dim; ++e) {
              ASSERT_EQ(std::bit_cast<uint32_t>(dense_buffers.out.at(b, h, i, e)),
                        std::bit_cast<uint32_t>(strided_buffers.out.at(b, h, i, e)))
                  << b << " " << h << " " << i << " " << e;
            }
    }
  }
}

TEST(FusedAttentionTest, ScaleAppliesToTheScoresOnly) {
  for (float scale : {1.0f, 0.125f, 2.5f, -0.7f}) {
    Problem p;
    p.q_len = 16, p.kv_len = 130, p.mask = MaskShape::kB11T, p.scale = scale;
    CheckOnEveryCore(p);
  }
}

TEST(FusedAttentionTest, SkippedCausalBlocksNeedAProvableZero) {
  // |x| reaches ~3e31 > |fill|: a key above the diagonal can hold a row's
  // largest y, so the kernel cannot prove those blocks contribute 0 and must
  // run them (each row is then nearly one-hot on its largest y, allowed or
  // not, as in the graph).
  Problem p;
  p.q_len = 130, p.kv_len = 130, p.causal = true, p.fill = -1e30f, p.scale = 1e31f;
  CheckOnEveryCore(p);
}

// The row i of (b, h) of the output is NaN everywhere (or 0 everywhere with
// nan_to_zero), and the other rows are finite.
void ExpectOnlyRowDegenerate(Buffers& buffers, int64_t b, int64_t h, int64_t i) {
  const AttentionArgs& a = buffers.args;
  for (int64_t bb = 0; bb < a.batch; ++bb)
    for (int64_t hh = 0; hh < a.heads; ++hh)
      for (int64_t ii = 0; ii < a.q_len; ++ii)
        for (int64_t e = 0; e < a.v_head_dim; ++e) {
          const float got = buffers.out.at(bb, hh, ii, e);
          if (bb == b && hh == h && ii == i) {
            if (a.nan_to_zero) {
              ASSERT_EQ(got, 0.0f) << ii << " " << e;
            } else {
              ASSERT_TRUE(std::isnan(got)) << ii << " " << e;
            }
          } else {
            ASSERT_TRUE(std::isfinite(got)) << bb << " " << hh << " " << ii << " " << e;
          }
        }
}

// Row i of (b, h) = (1, 2) made degenerate four ways (a NaN in Q, a NaN
// or +inf mask value at allowed key j, every mask value -inf), with and
// without nan_to_zero and causal.
void CheckDegenerateRows(int64_t q_len, int64_t kv_len, int64_t i, int64_t j) {
  enum Case { kNaNInQ, kNaNInMask, kRowAllMinusInf, kPlusInfInMask };
  for (Case c : {kNaNInQ, kNaNInMask, kRowAllMinusInf, kPlusInfInMask}) {
    for (bool nan_to_zero : {false, true}) {
      for (bool causal : {false, true}) {
        Problem p;
        p.batch = 2, p.heads = 3, p.q_len = q_len, p.kv_len = kv_len, p.mask = MaskShape::kBHST;
        p.nan_to_zero = nan_to_zero, p.causal = causal, p.fill = kLowestFill, p.scale = 0.125f;
        Buffers buffers(p);
        const int64_t b = 1, h = 2;
        switch (c) {
          case kNaNInQ:
            buffers.q.at(b, h, i, 5) = kNaN;
            break;
          case kNaNInMask:
            buffers.MaskAt(b, h, i, j) = kNaN;
            break;
          case kRowAllMinusInf:
            for (int64_t jj = 0; jj < p.kv_len; ++jj) buffers.MaskAt(b, h, i, jj) = -kInf;
            break;
          case kPlusInfInMask:
            buffers.MaskAt(b, h, i, j) = kInf;
            break;
        }
        const std::string what = absl::StrCat("case ", static_cast<int>(c), " ", p.Describe());
        CheckOnEveryCore(buffers, what);
        for (AttentionIsa isa : Cores()) {
          SCOPED_TRACE(absl::StrCat(what, " ", AttentionIsaName(isa)));
          ASSERT_TRUE(RunFusedAttentionOn(isa, buffers.args).ok());
          if (causal && c == kRowAllMinusInf && i + (kv_len - q_len) + 1 < kv_len) {
            // The filled scores are finite: the row attends to them
            // (uniformly: they all round to the fill), as the graph does.
            for (int64_t e = 0; e < p.v_head_dim; ++e) ASSERT_TRUE(std::isfinite(buffers.out.at(b, h, i, e)));
          } else {
            ExpectOnlyRowDegenerate(buffers, b, h, i);
          }
        }
      }
    }
  }
}

TEST(FusedAttentionTest, DegenerateRowsAreNaNOrZero) {
  // Causal: key 77 is allowed for row 40 (j <= i + T - S = 105).
  CheckDegenerateRows(65, 130, 40, 77);
}

TEST(FusedAttentionTest, MaskIsNotReadWhereCausalDisallows) {
  // A NaN mask value above the diagonal is replaced by the fill: no effect.
  Problem p;
  p.q_len = 65, p.kv_len = 65, p.mask = MaskShape::kB1ST, p.causal = true, p.fill = kLowestFill;
  Buffers buffers(p);
  buffers.MaskAt(0, 0, 10, 11) = kNaN;
  buffers.MaskAt(0, 0, 10, 64) = kInf;
  CheckOnEveryCore(buffers, p.Describe());
  for (int64_t e = 0; e < p.v_head_dim; ++e) EXPECT_TRUE(std::isfinite(buffers.out.at(0, 0, 10, e)));
}

TEST(FusedAttentionTest, NaNKeyMakesEveryRowNaN) {
  for (bool causal : {false, true}) {
    Problem p;
    p.heads = 2, p.q_len = 17, p.kv_len = 130, p.causal = causal, p.fill = kLowestFill;
    Buffers buffers(p);
    buffers.k.at(0, 0, 100, 3) = kNaN;  // x + fill is NaN too, allowed or not
    CheckOnEveryCore(buffers, p.Describe());
    for (int64_t i = 0; i < p.q_len; ++i) EXPECT_TRUE(std::isnan(buffers.out.at(0, 1, i, 0)));
  }
}

TEST(FusedAttentionTest, InfiniteValueAboveTheDiagonalGivesNaNAsInTheGraph) {
  // Key 129's value is inf in column 3: every row that may not see key 129
  // has p = 0 there, and 0·inf is NaN in the graph's P·V — so the blocks
  // above the diagonal must run, not be skipped.
  for (float bad : {kInf, kNaN}) {
    Problem p;
    p.q_len = 130, p.kv_len = 130, p.causal = true, p.fill = kLowestFill, p.scale = 0.125f;
    Buffers buffers(p);
    buffers.v.at(0, 0, 129, 3) = bad;
    CheckOnEveryCore(buffers, p.Describe());
    EXPECT_TRUE(std::isnan(buffers.out.at(0, 0, 0, 3)));
    EXPECT_TRUE(std::isfinite(buffers.out.at(0, 0, 0, 2)));
  }
}

// The core's result on a team of 1 thread and of 2, bit for bit.
void ExpectSameBitsOnOneAndTwoThreads(AttentionIsa isa, Buffers& buffers) {
  std::vector<float> one, two;
  {
    ScopedOmpThreads threads(1);
    ASSERT_TRUE(RunFusedAttentionOn(isa, buffers.args).ok());
    one = buffers.out.data;
  }
  {
    ScopedOmpThreads threads(2);
    ASSERT_TRUE(RunFusedAttentionOn(isa, buffers.args).ok());
    two = buffers.out.data;
  }
  ASSERT_EQ(one.size(), two.size());
  for (size_t n = 0; n < one.size(); ++n) {
    ASSERT_EQ(std::bit_cast<uint32_t>(one[n]), std::bit_cast<uint32_t>(two[n])) << n;
  }
}

TEST(FusedAttentionTest, ResultDoesNotDependOnTheThreadCount) {
  for (bool causal : {false, true}) {
    Problem p;
    p.batch = 2, p.heads = 3, p.q_len = 257, p.kv_len = 257, p.mask = MaskShape::kB11T;
    p.causal = causal, p.fill = kLowestFill, p.scale = 0.125f;
    Buffers buffers(p);
    for (AttentionIsa isa : Cores()) {
      SCOPED_TRACE(AttentionIsaName(isa));
      ExpectSameBitsOnOneAndTwoThreads(isa, buffers);
    }
  }
}

// K and V in [b, S, h, d] are copied into dense rows once per (batch, KV
// head) and thread (fused_attention_impl.h, Tile::DenseKv): grouped query
// heads share one copy, a new (batch, KV head) replaces it, and two threads
// (which split a head's tiles) give one thread's bits.
TEST(FusedAttentionTest, StridedGroupedHeadsMatchTheReferenceOnAnyTeam) {
  Problem p;
  p.batch = 2, p.heads = 6, p.kv_heads = 2, p.q_len = 50, p.kv_len = 70, p.head_dim = 24, p.v_head_dim = 40;
  p.layout = Layout::kBSHD;
  p.mask = MaskShape::kB11T, p.causal = true, p.fill = kLowestFill, p.scale = 0.3f;
  CheckOnEveryCore(p);
  Buffers buffers(p);
  for (AttentionIsa isa : Cores()) {
    SCOPED_TRACE(AttentionIsaName(isa));
    ExpectSameBitsOnOneAndTwoThreads(isa, buffers);
  }
}

TEST(FusedAttentionTest, ConcurrentCallsInsideAParallelRegionRunSerially) {
  // Each thread of a region runs its own attention (on its calling thread:
  // no nested team) with its own workspace; all match the reference.
  std::vector<Buffers> buffers;
  std::vector<std::vector<double>> want;
  for (int t = 0; t < 8; ++t) {
    Problem p;
    p.batch = 2, p.heads = 3, p.q_len = 65 + t, p.kv_len = 130 - t, p.head_dim = 32 + 8 * (t % 4);
    p.mask = MaskShape::kB1ST, p.causal = t % 2 == 1, p.fill = kLowestFill, p.seed = 50 + t;
    buffers.emplace_back(p);
    want.push_back(Reference(buffers.back().args));
  }
  std::vector<absl::Status> status(buffers.size());
#pragma omp parallel for num_threads(2) schedule(static, 1)
  for (size_t t = 0; t < buffers.size(); ++t) status[t] = RunFusedAttention(buffers[t].args);
  for (size_t t = 0; t < buffers.size(); ++t) {
    SCOPED_TRACE(absl::StrCat("item ", t));
    ASSERT_TRUE(status[t].ok()) << status[t];
    ExpectOutputMatches(buffers[t], want[t]);
  }
}

TEST(FusedAttentionTest, Avx2CoreRunsWhereTheCpuHasIt) {
  Problem p;
  p.batch = 2, p.heads = 4, p.kv_heads = 2, p.q_len = 63, p.kv_len = 130, p.head_dim = 80, p.v_head_dim = 40;
  p.mask = MaskShape::kB1ST, p.causal = true, p.window = 50, p.fill = kLowestFill, p.scale = 0.1f;
  Buffers buffers(p);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    ExpectMatches(AttentionIsa::kAvx2, buffers, Reference(buffers.args), p.Describe());
  } else {
    EXPECT_EQ(RunFusedAttentionOn(AttentionIsa::kAvx2, buffers.args).code(), absl::StatusCode::kFailedPrecondition);
  }
}

TEST(FusedAttentionTest, RunFusedAttentionUsesTheSelectedCore) {
  Problem p;
  p.batch = 2, p.heads = 3, p.q_len = 130, p.kv_len = 130, p.mask = MaskShape::kB11T, p.scale = 0.125f;
  Buffers buffers(p);
  ASSERT_TRUE(RunFusedAttention(buffers.args).ok());
  const std::vector<float> selected = buffers.out.data;
  ASSERT_TRUE(RunFusedAttentionOn(SelectedAttentionIsa(), buffers.args).ok());
  EXPECT_EQ(selected, buffers.out.data);
}

TEST(FusedAttentionTest, FullMaskAtOddSizesMatchesTheReference) {
  // [b, 1, S, T] and [b, h, S, T] masks, read row by row and transposed in
  // registers per key block: whole and partial 16×16 (8×8) blocks, tiles
  // with 1..64 valid rows, and rows further apart than T (NaN between).
  constexpr int64_t kSizes[] = {1, 5, 7, 16, 17, 63, 65, 130};
  for (int64_t s : kSizes) {
    for (int64_t t : kSizes) {
      for (MaskShape mask : {MaskShape::kB1ST, MaskShape::kBHST}) {
        for (bool causal : {false, true}) {
          Problem p;
          p.batch = 2, p.heads = 3, p.q_len = s, p.kv_len = t, p.mask = mask, p.causal = causal;
          p.fill = kLowestFill, p.scale = 0.125f;
          p.mask_row_pad = (s + t) % 3 == 0 ? 0 : 5;
          p.seed = static_cast<uint32_t>(s * 1000 + t * 3 + causal);
          CheckOnEveryCore(p);
        }
      }
    }
  }
}

TEST(FusedAttentionTest, FullMaskGivesThePerKeyMasksResult) {
  // A [b, 1, S, T] mask whose rows all equal a [b, 1, 1, T] one (as BERT
  // exports expand it): the same y, so the same result bit for bit; one
  // value changed in the last row of the last batch: the reference's
  // result (the rows are no longer all equal).
  for (int64_t s : {1, 3, 17, 130}) {
    Problem p;
    p.batch = 2, p.heads = 3, p.q_len = s, p.kv_len = 257, p.mask = MaskShape::kB11T, p.scale = 0.125f;
    Buffers per_key(p);
    Problem full_p = p;
    full_p.mask = MaskShape::kB1ST;
    Buffers full(full_p);
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t i = 0; i < s; ++i)
        for (int64_t j = 0; j < p.kv_len; ++j) full.MaskAt(b, 0, i, j) = per_key.MaskAt(b, 0, 0, j);
    for (AttentionIsa isa : Cores()) {
      SCOPED_TRACE(absl::StrCat("S=", s, " ", AttentionIsaName(isa)));
      ASSERT_TRUE(RunFusedAttentionOn(isa, per_key.args).ok());
      ASSERT_TRUE(RunFusedAttentionOn(isa, full.args).ok());
      for (size_t n = 0; n < per_key.out.data.size(); ++n) {
        ASSERT_EQ(std::bit_cast<uint32_t>(per_key.out.data[n]), std::bit_cast<uint32_t>(full.out.data[n])) << n;
      }
    }
    if (s > 1) {
      full.MaskAt(1, 0, s - 1, p.kv_len - 1) = -0.75f;
      CheckOnEveryCore(full, absl::StrCat("one value changed, S=", s));
      full.MaskAt(1, 0, s - 1, p.kv_len - 1) = per_key.MaskAt(1, 0, 0, p.kv_len - 1);
      full.MaskAt(0, 0, s / 2, 0) = kNaN;  // makes (0, ·, s / 2) NaN rows
      CheckOnEveryCore(full, absl::StrCat("NaN in row ", s / 2, ", S=", s));
    }
  }
  // [b, h, S, T] with equal rows per (batch, head), different heads.
  Problem p;
  p.batch = 2, p.heads = 3, p.q_len = 65, p.kv_len = 130, p.mask = MaskShape::kBHST, p.scale = 0.125f;
  Buffers buffers(p);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 1; i < p.q_len; ++i)
        for (int64_t j = 0; j < p.kv_len; ++j) buffers.MaskAt(b, h, i, j) = buffers.MaskAt(b, h, 0, j);
  CheckOnEveryCore(buffers, p.Describe());
}

// Decode: q_len 1..7 (vectors over the head dim and the keys instead of
// query rows: up to 4 rows on every core, up to 7 on AVX-512).
constexpr int64_t kDecodeQueryLens[] = {1, 2, 3, 4, 5, 7};
constexpr int64_t kDecodeKeyLens[] = {1, 2, 15, 16, 17, 100, 1025};

TEST(FusedAttentionTest, DecodeWithCausalOffsetAndPerKeyMaskMatchesTheReference) {
  // A KV-cache step: the queries are the last S of T positions; the padding
  // mask is per key; grouped-query heads share the K and V reads.
  for (int64_t s : kDecodeQueryLens) {
    for (int64_t t : kDecodeKeyLens) {
      for (float fill : {kLowestFill, -10000.0f}) {
        Problem p;
        p.batch = 2, p.heads = 4, p.kv_heads = 2, p.q_len = s, p.kv_len = t;
        p.mask = MaskShape::kB11T, p.causal = true, p.fill = fill, p.scale = 0.125f;
        p.seed = static_cast<uint32_t>(s * 10000 + t);
        CheckOnEveryCore(p);
      }
    }
  }
}

TEST(FusedAttentionTest, DecodeWithEveryMaskMatchesTheReference) {
  for (int64_t s : kDecodeQueryLens) {
    for (int64_t t : kDecodeKeyLens) {
      for (MaskShape mask :
           {MaskShape::kNone, MaskShape::kB1ST, MaskShape::kBHST, MaskShape::kBHS1, MaskShape::k1111}) {
        Problem p;
        p.batch = 2, p.heads = 3, p.q_len = s, p.kv_len = t, p.mask = mask;
        p.causal = (s + t) % 2 == 0, p.fill = kLowestFill, p.scale = 0.3f;
        p.mask_row_pad = t % 2 == 1 ? 3 : 0;
        p.seed = static_cast<uint32_t>(s * 10000 + t * 10 + static_cast<int>(mask));
        CheckOnEveryCore(p);
      }
    }
  }
}

TEST(FusedAttentionTest, DecodeWithWindowMatchesTheReference) {
  for (int64_t s : kDecodeQueryLens) {
    for (int64_t t : kDecodeKeyLens) {
      for (int64_t window : {1, 5, 64}) {
        Problem p;
        p.heads = 2, p.q_len = s, p.kv_len = t, p.causal = true, p.window = window;
        p.fill = window == 5 ? -10000.0f : kLowestFill;
        p.mask = MaskShape::kB1ST, p.scale = 0.25f;
        p.seed = static_cast<uint32_t>(s * 10000 + t * 100 + window);
        CheckOnEveryCore(p);
      }
    }
  }
}

TEST(FusedAttentionTest, DecodeHeadDimsAndGroupsMatchTheReference) {
  // Head dims with and without a partial vector, up to and past the
  // unrolled dot kernels; groups of 1..8 query heads per KV head.
  for (auto [d, dv] : std::initializer_list<std::pair<int64_t, int64_t>>{
           {64, 64}, {128, 128}, {80, 80}, {40, 24}, {3, 5}, {1, 1}, {96, 200}, {144, 16}, {160, 33}, {256, 64}}) {
    for (auto [heads, kv_heads] : {std::pair<int64_t, int64_t>{8, 1}, {6, 3}, {2, 2}}) {
      Problem p;
      p.batch = 2, p.heads = heads, p.kv_heads = kv_heads, p.q_len = 1 + d % 4, p.kv_len = 77;
      p.head_dim = d, p.v_head_dim = dv;
      p.mask = MaskShape::kB11T, p.causal = true, p.fill = kLowestFill;
      p.scale = 1.0f / std::sqrt(static_cast<float>(d));
      p.seed = static_cast<uint32_t>(d * 1000 + dv + heads);
      CheckOnEveryCore(p);
    }
  }
}

TEST(FusedAttentionTest, DecodeReadsAKvCacheThroughItsCapacity) {
  // K and V in a buffer of `capacity` rows per head (head_stride =
  // capacity·d), the rows past kv_len NaN: never read. Both layouts.
  for (int64_t s : kDecodeQueryLens) {
    for (int64_t t : kDecodeKeyLens) {
      for (Layout layout : {Layout::kBHSD, Layout::kBSHD}) {
        Problem p;
        p.batch = 2, p.heads = 6, p.kv_heads = 2, p.q_len = s, p.kv_len = t, p.layout = layout;
        p.kv_capacity = t + 1 + t / 2;
        p.mask = MaskShape::kB11T, p.causal = true, p.fill = kLowestFill, p.scale = 0.125f;
        p.seed = static_cast<uint32_t>(s * 10000 + t * 2 + (layout == Layout::kBSHD));
        CheckOnEveryCore(p);
      }
    }
  }
  // The prefill path honours the capacity too.
  Problem p;
  p.heads = 2, p.q_len = 65, p.kv_len = 130, p.kv_capacity = 200, p.causal = true, p.fill = kLowestFill;
  CheckOnEveryCore(p);
}

TEST(FusedAttentionTest, DecodeDegenerateRowsAreNaNOrZero) {
  // Causal: key 50 is allowed for row 1 of 3 (j <= i + T - S = 98).
  CheckDegenerateRows(3, 100, 1, 50);
  CheckDegenerateRows(1, 17, 0, 16);
}

TEST(FusedAttentionTest, DecodeNaNKeyAndInfiniteValueOutsideTheWindowGiveNaN) {
  // A NaN key makes every row NaN; an inf value at a key outside the
  // window has p = 0, and 0·inf is NaN in the graph's P·V: the decode path
  // must not skip it.
  for (int64_t s : {1, 4}) {
    Problem p;
    p.heads = 2, p.kv_heads = 2, p.q_len = s, p.kv_len = 100, p.causal = true, p.window = 5, p.fill = kLowestFill;
    Buffers buffers(p);
    buffers.k.at(0, 1, 60, 3) = kNaN;
    buffers.v.at(0, 0, 10, 3) = kInf;
    CheckOnEveryCore(buffers, p.Describe());
    for (int64_t i = 0; i < s; ++i) {
      EXPECT_TRUE(std::isnan(buffers.out.at(0, 0, i, 3)));
      EXPECT_TRUE(std::isfinite(buffers.out.at(0, 0, i, 2)));
      EXPECT_TRUE(std::isnan(buffers.out.at(0, 1, i, 0)));
    }
  }
}

TEST(FusedAttentionTest, DecodeResultDoesNotDependOnTheThreadCount) {
  // Large enough to run parallel; with one (batch, KV head) the team splits
  // the group's query heads (1 × 4 of one KV head), otherwise not.
  struct Shape {
    int64_t batch, heads, kv_heads, q_len, kv_len;
  };
  for (Shape shape : {Shape{1, 4, 1, 1, 1025}, Shape{1, 4, 1, 4, 1025}, Shape{2, 3, 3, 2, 1025},
                      Shape{1, 12, 12, 1, 2000}, Shape{3, 8, 2, 3, 600}, Shape{1, 4, 1, 7, 1025}}) {
    Problem p;
    p.batch = shape.batch, p.heads = shape.heads, p.kv_heads = shape.kv_heads;
    p.q_len = shape.q_len, p.kv_len = shape.kv_len;
    p.mask = MaskShape::kB11T, p.causal = true, p.fill = kLowestFill, p.scale = 0.125f;
    Buffers buffers(p);
    CheckOnEveryCore(buffers, p.Describe());
    for (AttentionIsa isa : Cores()) {
      SCOPED_TRACE(absl::StrCat(p.Describe(), " ", AttentionIsaName(isa)));
      ExpectSameBitsOnOneAndTwoThreads(isa, buffers);
    }
  }
}

// Empty sizes mean what they mean in the graph: no batch or no query rows,
// nothing is read or written (the operands may be null); no keys, every
// output row is 0 (P·V sums over nothing) and K and V are not read.
TEST(FusedAttentionTest, EmptySizesAreTheGraphsEmptyResults) {
  Problem p;
  p.batch = 2, p.heads = 4, p.kv_heads = 2, p.q_len = 5, p.kv_len = 6, p.mask = MaskShape::kB11T;
  Buffers buffers(p);
  for (AttentionIsa isa : Cores()) {
    SCOPED_TRACE(AttentionIsaName(isa));
    for (auto spoil : {+[](AttentionArgs& a) { a.batch = 0; }, +[](AttentionArgs& a) { a.q_len = 0; }}) {
      AttentionArgs args = buffers.args;
      spoil(args);
      args.q.data = args.k.data = args.v.data = args.out.data = args.mask.data = nullptr;
      EXPECT_TRUE(RunFusedAttentionOn(isa, args).ok());
    }
    AttentionArgs args = buffers.args;
    args.kv_len = 0;
    args.k.data = args.v.data = args.mask.data = nullptr;
    const int64_t outputs = p.batch * p.heads * p.q_len * args.v_head_dim;
    std::fill(args.out.data, args.out.data + outputs, std::numeric_limits<float>::quiet_NaN());
    ASSERT_TRUE(RunFusedAttentionOn(isa, args).ok());
    for (int64_t i = 0; i < outputs; ++i) ASSERT_EQ(args.out.data[i], 0.0f) << i;
  }
}

TEST(FusedAttentionTest, InvalidArgumentsNameTheField) {
  Problem p;
  p.batch = 2, p.heads = 4, p.kv_heads = 2, p.q_len = 5, p.kv_len = 6, p.mask = MaskShape::kB11T;
  Buffers buffers(p);
  struct Bad {
    std::string field;
    std::function<void(AttentionArgs&)> spoil;
  };
  const std::vector<Bad> cases = {
      {"batch = -1 is not non-negative", [](AttentionArgs& a) { a.batch = -1; }},
      {"heads", [](AttentionArgs& a) { a.heads = -1; }},
      {"kv_heads", [](AttentionArgs& a) { a.kv_heads = 0; }},
      {"q_len", [](AttentionArgs& a) { a.q_len = -2; }},
      {"kv_len", [](AttentionArgs& a) { a.kv_len = -3; }},
      {"head_dim", [](AttentionArgs& a) { a.head_dim = 0; }},
      {"v_head_dim", [](AttentionArgs& a) { a.v_head_dim = 0; }},
      {"kv_heads = 3 does not divide heads = 4", [](AttentionArgs& a) { a.kv_heads = 3; }},
      {"q.data", [](AttentionArgs& a) { a.q.data = nullptr; }},
      {"k.data", [](AttentionArgs& a) { a.k.data = nullptr; }},
      {"v.data", [](AttentionArgs& a) { a.v.data = nullptr; }},
      {"out.data", [](AttentionArgs& a) { a.out.data = nullptr; }},
      {"k.row_stride", [](AttentionArgs& a) { a.k.row_stride = -64; }},
      {"mask.batch_stride", [](AttentionArgs& a) { a.mask.batch_stride = -1; }},
      {"out.head_stride", [](AttentionArgs& a) { a.out.head_stride = 0; }},
      {"mask_col_stride", [](AttentionArgs& a) { a.mask_col_stride = 2; }},
      {"window", [](AttentionArgs& a) { a.window = -1; }},
      {"window", [](AttentionArgs& a) { a.window = 4; }},  // without causal
  };
  for (const Bad& bad : cases) {
    for (AttentionIsa isa : Cores()) {
      AttentionArgs args = buffers.args;
      bad.spoil(args);
      absl::Status s = RunFusedAttentionOn(isa, args);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad.field << ": " << s;
      EXPECT_THAT(std::string(s.message()), HasSubstr(bad.field));
    }
    AttentionArgs args = buffers.args;
    bad.spoil(args);
    EXPECT_EQ(RunFusedAttention(args).code(), absl::StatusCode::kInvalidArgument) << bad.field;
  }
  // Broadcast inputs (stride 0) are fine, and a missing mask is no error.
  AttentionArgs args = buffers.args;
  args.q.batch_stride = 0;
  args.mask.data = nullptr;
  EXPECT_TRUE(RunFusedAttention(args).ok());
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
