// The CUDA fused attention kernel (codegen/cuda/attention_kernel.h) under
// the host emulation, against a double-precision reference written from the
// semantics in codegen/attention_args.h: plain and grouped-query heads,
// seq-major K and V, every mask form (per key, per row, full, broadcast over
// batch), the causal band with a past, a window and a finite or -inf fill,
// NaN-to-zero, and the rows the graph makes NaN. Every block size, thread
// order and grid size gives the same bits (each output is one thread's
// fixed-order sums). With the CUDA toolkit the kernel also compiles to
// cubins for sm_80 and sm_90 without spills.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <iostream>
#include <tuple>
#include <limits>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cuda/attention_kernel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codegen/test_util.h"
#include "tests/support/cuda/host_module.h"

#ifdef SHAPESHIFT_HAVE_CUDA
#include "codegen/cuda/nvrtc_compiler.h"
#endif

namespace shapeshift::codegen::cuda::testing {
namespace {

using ::shapeshift::codegen::testing::Close;
using ::testing::HasSubstr;

constexpr float kInf = std::numeric_limits<float>::infinity();

enum class MaskForm { kNone, kPerKey, kPerRow, kFull, kBatchBroadcast };

struct Case {
  std::string name;
  int64_t batch = 2, heads = 2, kv_heads = 2, q_len = 7, kv_len = 7, d = 16, dv = 16;
  bool kv_seq_major = false;  // K and V stored [b, T, h, d]
  MaskForm mask = MaskForm::kNone;
  bool causal = false;
  int64_t window = 0;
  float fill = 0.0f;
  float scale = 0.25f;
  bool nan_to_zero = false;
  bool specials = false;  // a NaN in Q, a row masked to -inf throughout, a +inf mask entry
};

// One attention's operands on the host, laid out as the case says; args'
// data pointers point into the vectors (moving an Operands keeps them).
struct Operands {
  std::vector<float> q, k, v, mask, out;
  AttentionArgs args;
};

Operands Make(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto fill = [&](int64_t n) {
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    return x;
  };
  Operands o;
  AttentionArgs& a = o.args;
  a.batch = c.batch, a.heads = c.heads, a.kv_heads = c.kv_heads, a.q_len = c.q_len, a.kv_len = c.kv_len;
  a.head_dim = c.d, a.v_head_dim = c.dv;
  o.q = fill(c.batch * c.heads * c.q_len * c.d);
  o.k = fill(c.batch * c.kv_heads * c.kv_len * c.d);
  o.v = fill(c.batch * c.kv_heads * c.kv_len * c.dv);
  o.out.assign(c.batch * c.heads * c.q_len * c.dv, -7.0f);
  auto strides = [](AttentionOperand& op, int64_t b, int64_t h, int64_t r) {
    op.batch_stride = b, op.head_stride = h, op.row_stride = r;
  };
  strides(a.q, c.heads * c.q_len * c.d, c.q_len * c.d, c.d);
  strides(a.out, c.heads * c.q_len * c.dv, c.q_len * c.dv, c.dv);
  if (c.kv_seq_major) {
    strides(a.k, c.kv_len * c.kv_heads * c.d, c.d, c.kv_heads * c.d);
    strides(a.v, c.kv_len * c.kv_heads * c.dv, c.dv, c.kv_heads * c.dv);
  } else {
    strides(a.k, c.kv_heads * c.kv_len * c.d, c.kv_len * c.d, c.d);
    strides(a.v, c.kv_heads * c.kv_len * c.dv, c.kv_len * c.dv, c.dv);
  }
  const int64_t S = c.q_len, T = c.kv_len;
  switch (c.mask) {
    case MaskForm::kNone: break;
    case MaskForm::kPerKey: o.mask = fill(c.batch * T), strides(a.mask, T, 0, 0); break;
    case MaskForm::kPerRow: o.mask = fill(c.batch * S), strides(a.mask, S, 0, 1), a.mask_col_stride = 0; break;
    case MaskForm::kFull: o.mask = fill(c.batch * c.heads * S * T), strides(a.mask, c.heads * S * T, S * T, T); break;
    case MaskForm::kBatchBroadcast: o.mask = fill(S * T), strides(a.mask, 0, 0, T); break;
  }
  // Padding-style masks: some keys far below the rest (not per row: a row's
  // constant changes no probability, and x - 10000 in f32 keeps 3 digits).
  if (c.mask != MaskForm::kPerRow) {
    for (size_t i = 0; i < o.mask.size(); i += 5) o.mask[i] = -10000.0f;
  }
  if (c.specials) {
    o.q[3 * c.d + 1] = std::numeric_limits<float>::quiet_NaN();  // (b 0, h 0, row 3)
    if (c.mask == MaskForm::kFull) {
      for (int64_t j = 0; j < T; ++j) o.mask[1 * T + j] = -kInf;  // (b 0, h 0, row 1): every score -inf
      o.mask[(S + 2) * T + T / 2] = kInf;                           // (b 0, h 1, row 2): a +inf score
    }
  }
  a.q.data = o.q.data(), a.k.data = o.k.data(), a.v.data = o.v.data(), a.out.data = o.out.data();
  a.mask.data = c.mask == MaskForm::kNone ? nullptr : o.mask.data();
  a.causal = c.causal, a.window = c.window, a.fill = c.fill, a.scale = c.scale, a.nan_to_zero = c.nan_to_zero;
  return o;
}

// The graph's meaning, in double.
std::vector<double> Reference(const Operands& o) {
  const AttentionArgs& a = o.args;
  auto at = [](const AttentionOperand& op, int64_t b, int64_t h, int64_t r) {
    return b * op.batch_stride + h * op.head_stride + r * op.row_stride;
  };
  std::vector<double> out(o.out.size());
  const int64_t group = a.heads / a.kv_heads, offset = a.kv_len - a.q_len;
  std::vector<double> y(a.kv_len);
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t kvh = h / group;
      for (int64_t i = 0; i < a.q_len; ++i) {
        bool nan_row = false;
        double top = -INFINITY;
        for (int64_t j = 0; j < a.kv_len; ++j) {
          double x = 0;
          for (int64_t e = 0; e < a.head_dim; ++e) {
            x += double(o.q[at(a.q, b, h, i) + e]) * o.k[at(a.k, b, kvh, j) + e];
          }
          x *= a.scale;
          const bool allowed = !a.causal || (j - offset <= i && (a.window == 0 || j - offset > i - a.window));
          double add = 0;
          if (!allowed) {
            add = a.fill;
          } else if (a.mask.data != nullptr) {
            add = o.mask[at(a.mask, b, h, i) + j * a.mask_col_stride];
          }
          y[j] = x + add;
          if (std::isnan(y[j]) || y[j] == INFINITY) nan_row = true;
          if (y[j] > top) top = y[j];
        }
        if (top == -INFINITY) nan_row = true;
        double* row = &out[at(a.out, b, h, i)];
        if (a.kv_len == 0) {  // P·V over no keys
          for (int64_t e = 0; e < a.v_head_dim; ++e) row[e] = 0.0;
          continue;
        }
        if (nan_row) {
          for (int64_t e = 0; e < a.v_head_dim; ++e) row[e] = a.nan_to_zero ? 0.0 : NAN;
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < a.kv_len; ++j) sum += std::exp(y[j] - top);
        for (int64_t e = 0; e < a.v_head_dim; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < a.kv_len; ++j) acc += std::exp(y[j] - top) / sum * o.v[at(a.v, b, kvh, j) + e];
          row[e] = acc;
        }
      }
    }
  }
  return out;
}

std::shared_ptr<const HostModule> Module() {
  static auto* module = [] {
    absl::StatusOr<std::shared_ptr<const HostModule>> m = HostModule::Compile(CudaPrelude() + AttentionKernel().function);
    EXPECT_TRUE(m.ok()) << m.status();
    return new std::shared_ptr<const HostModule>(m.ok() ? *m : nullptr);
  }();
  return *module;
}

// Runs the kernel on `o` (its out overwritten) with `shape`.
void Launch(Operands& o, LaunchShape shape, bool reverse) {
  std::shared_ptr<const HostModule> module = Module();
  ASSERT_NE(module, nullptr);
  absl::StatusOr<void*> entry = module->Entry(kAttentionEntry);
  ASSERT_TRUE(entry.ok()) << entry.status();
  std::array<float*, 5> buffers = AttentionBuffers(o.args);
  std::array<long long, kAttentionDimWords> words = AttentionDimWords(o.args);
  ASSERT_TRUE(module->Launch(*entry, shape, reverse, reinterpret_cast<void* const*>(buffers.data()), words.data()).ok());
}

void ExpectMatchesReference(const Case& c) {
  SCOPED_TRACE(c.name);
  Operands o = Make(c, 17);
  ASSERT_TRUE(CheckCudaAttention(o.args).ok()) << CheckCudaAttention(o.args);
  const std::vector<double> want = Reference(o);
  const LaunchShape launch = ChooseLaunch(ThreadMapping::kBlockPerRow, AttentionItems(o.args), kAttentionThreads);
  EXPECT_EQ(launch.block, static_cast<uint32_t>(kAttentionThreads));
  Launch(o, launch, /*reverse=*/false);
  const std::vector<float> first = o.out;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(first[i])) << "element " << i << ": " << first[i] << " where the graph has NaN";
    } else {
      ASSERT_TRUE(Close(first[i], want[i], 2e-5, 2e-6)) << "element " << i << ": " << first[i] << " vs " << want[i];
    }
  }
  // Any block size, thread and block order, and a grid smaller than the
  // items (grid-stride): the same bits.
  for (auto [block, grid, reverse] : {std::tuple{32u, 0u, true}, {64u, 0u, false}, {256u, 3u, true}, {128u, 1u, false}}) {
    SCOPED_TRACE(absl::StrCat("block ", block, " grid ", grid, reverse ? " reversed" : ""));
    LaunchShape shape = launch;
    shape.block = block;
    if (grid > 0) shape.grid = grid;
    std::fill(o.out.begin(), o.out.end(), -7.0f);
    Launch(o, shape, reverse);
    ASSERT_EQ(std::memcmp(o.out.data(), first.data(), first.size() * sizeof(float)), 0);
  }
}

TEST(CudaAttentionKernelTest, MatchesTheGraphsMeaningAtOddLengths) {
  for (int64_t len : {1, 2, 15, 16, 17, 33, 97}) {
    ExpectMatchesReference({.name = absl::StrCat("plain S=T=", len), .q_len = len, .kv_len = len, .d = 64, .dv = 64,
                            .scale = 0.125f});
  }
  // Decode and short queries over a longer cache.
  for (int64_t s : {1, 3}) {
    ExpectMatchesReference(
        {.name = absl::StrCat("S=", s, " T=130"), .batch = 1, .heads = 3, .kv_heads = 3, .q_len = s, .kv_len = 130});
  }
}

TEST(CudaAttentionKernelTest, GroupedQueryHeadsSeqMajorKeysAndValuesAndOtherValueWidths) {
  ExpectMatchesReference({.name = "4 heads over 2", .heads = 4, .kv_heads = 2, .q_len = 19, .kv_len = 19});
  ExpectMatchesReference({.name = "multi-query", .heads = 4, .kv_heads = 1, .q_len = 5, .kv_len = 40});
  ExpectMatchesReference({.name = "seq-major K, V", .heads = 3, .kv_heads = 3, .q_len = 9, .kv_len = 35,
                          .kv_seq_major = true});
  ExpectMatchesReference({.name = "dv != d", .q_len = 6, .kv_len = 33, .d = 8, .dv = 24});
  ExpectMatchesReference({.name = "largest head dims", .batch = 1, .heads = 1, .kv_heads = 1, .q_len = 17,
                          .kv_len = 20, .d = kAttentionMaxHeadDim, .dv = kAttentionMaxHeadDim, .scale = 0.0625f});
}

TEST(CudaAttentionKernelTest, EveryMaskForm) {
  for (auto [form, name] : {std::pair{MaskForm::kPerKey, "per key"}, {MaskForm::kPerRow, "per row"},
                            {MaskForm::kFull, "full"}, {MaskForm::kBatchBroadcast, "broadcast over batch"}}) {
    ExpectMatchesReference({.name = name, .q_len = 18, .kv_len = 37, .mask = form});
  }
}

TEST(CudaAttentionKernelTest, TheCausalBandWithAPastAWindowAndAFill) {
  const float lowest = std::numeric_limits<float>::lowest();
  ExpectMatchesReference({.name = "causal prefill, -inf fill", .q_len = 21, .kv_len = 21, .causal = true, .fill = -kInf});
  ExpectMatchesReference({.name = "causal after a past, finite fill", .q_len = 5, .kv_len = 44, .causal = true,
                          .fill = lowest});
  ExpectMatchesReference({.name = "causal with a padding mask", .q_len = 17, .kv_len = 40, .mask = MaskForm::kPerKey,
                          .causal = true, .fill = -kInf});
  ExpectMatchesReference({.name = "sliding window 8", .q_len = 33, .kv_len = 33, .causal = true, .window = 8,
                          .fill = -kInf});
  ExpectMatchesReference({.name = "decode, window 4", .q_len = 1, .kv_len = 50, .causal = true, .window = 4,
                          .fill = -kInf});
}

TEST(CudaAttentionKernelTest, RowsTheGraphMakesNaNAreNaNOrZeroWithNanToZero) {
  for (bool nan_to_zero : {false, true}) {
    ExpectMatchesReference({.name = nan_to_zero ? "specials, nan_to_zero" : "specials", .q_len = 6, .kv_len = 35,
                            .mask = MaskForm::kFull, .nan_to_zero = nan_to_zero, .specials = true});
  }
  // Rows above the diagonal when the fill is -inf and there is no past:
  // none (row i sees key 0..i); a window of 1 leaves only the diagonal.
  ExpectMatchesReference({.name = "window 1", .q_len = 9, .kv_len = 9, .causal = true, .window = 1, .fill = -kInf});
}

// As on the CPU: no query rows, nothing is written; no keys, zeros.
TEST(CudaAttentionKernelTest, EmptySizesAreTheGraphsEmptyResults) {
  ExpectMatchesReference({.name = "no keys", .q_len = 5, .kv_len = 0});
  Operands o = Make({.name = "no rows", .q_len = 0, .kv_len = 9}, 1);
  ASSERT_TRUE(CheckCudaAttention(o.args).ok());
  EXPECT_EQ(AttentionItems(o.args), 0);
  o.out.assign(4, -7.0f);  // a canary: nothing may be written
  o.args.out.data = o.out.data();
  Launch(o, ChooseLaunch(ThreadMapping::kBlockPerRow, 0, kAttentionThreads), false);
  EXPECT_THAT(o.out, ::testing::Each(-7.0f));
}

TEST(CudaAttentionKernelTest, BadSizesAreRefusedNamingTheField) {
  Case c{.name = "base"};
  auto check = [&](void (*edit)(AttentionArgs&), const char* what) {
    Operands o = Make(c, 1);
    edit(o.args);
    absl::Status s = CheckCudaAttention(o.args);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << what;
    EXPECT_THAT(std::string(s.message()), HasSubstr(what));
  };
  check([](AttentionArgs& a) { a.kv_heads = 3, a.heads = 4; }, "CUDA fused attention: kv_heads = 3 does not divide");
  check([](AttentionArgs& a) { a.q_len = -1; }, "q_len = -1 is not non-negative");
  check([](AttentionArgs& a) { a.heads = 0; }, "heads = 0 is not positive");
  check([](AttentionArgs& a) { a.head_dim = kAttentionMaxHeadDim + 1; }, "exceed the kernel's 256");
  check([](AttentionArgs& a) { a.k.row_stride = -1; }, "k.row_stride = -1 is negative");
  check([](AttentionArgs& a) { a.out.head_stride = 0; }, "out.head_stride is 0 for an output dimension of 2");
  check([](AttentionArgs& a) { a.v.data = nullptr; }, "v.data is null");
  check([](AttentionArgs& a) { a.window = 3; }, "window = 3 without causal");
  check([](AttentionArgs& a) { a.mask_col_stride = 2; }, "mask_col_stride = 2");
  EXPECT_EQ(AttentionItems(Make({.batch = 2, .heads = 3, .q_len = 33}, 1).args), 2 * 3 * 3);
  EXPECT_EQ(AttentionItems(Make({.batch = 1, .heads = 1, .q_len = 5}, 1).args), 1);
}

TEST(CudaAttentionKernelTest, CompilesToCubinsWithoutSpills) {
#ifdef SHAPESHIFT_HAVE_CUDA
  for (const char* arch : {"sm_80", "sm_90"}) {
    absl::StatusOr<Cubin> cubin = CompileToCubin(CudaPrelude() + AttentionKernel().function, "attention", arch);
    ASSERT_TRUE(cubin.ok()) << cubin.status();
    ASSERT_EQ(cubin->reports.size(), 1u) << cubin->log;
    const PtxasReport& r = cubin->reports[0];
    std::cout << "  " << r.ToString() << "\n";
    EXPECT_EQ(r.entry, kAttentionEntry);
    EXPECT_EQ(r.spill_store_bytes, 0) << r.ToString();
    EXPECT_EQ(r.spill_load_bytes, 0) << r.ToString();
    EXPECT_LE(r.shared_bytes, 48 * 1024) << r.ToString();
    EXPECT_LE(r.registers, 255) << r.ToString();
  }
#else
  GTEST_SKIP() << "no CUDA toolkit in this build: NVRTC compilation not checked";
#endif
}

}  // namespace
}  // namespace shapeshift::codegen::cuda::testing
