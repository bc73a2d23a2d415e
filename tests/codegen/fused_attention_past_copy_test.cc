// FusedAttention with a PastCopy (codegen/cpu/fused_attention.h): the KV
// concat's copy of the past made by the attention. The contract is exact:
// the output has the same bits as the attention run on K and V that already
// hold the past, and afterwards K's and V's rows below the copy's rows are
// the past's bits (rows from there on untouched). Checked on every core, on
// the decode path (which copies block by block while reading the past) and
// on the tile path (which copies first), at past lengths around the decode
// path's 64-key blocks, with grouped-query heads split over the team, on one
// and two threads. (The attention itself is checked against the reference
// in fused_attention_test.cc.)
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/fused_attention.h"
#include "codegen/cpu/parallel_run.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::testing::HasSubstr;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<AttentionIsa> Cores() {
  std::vector<AttentionIsa> cores = {AttentionIsa::kPortable};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) cores.push_back(AttentionIsa::kAvx2);
  if (SelectedAttentionIsa() == AttentionIsa::kAvx512) cores.push_back(AttentionIsa::kAvx512);
  return cores;
}

struct Shape {
  int64_t batch = 1, heads = 1, kv_heads = 1, q_len = 1, past = 0, head_dim = 64, v_head_dim = 64;
  std::string Describe() const {
    return absl::StrCat("b=", batch, " h=", heads, " kvh=", kv_heads, " S=", q_len, " past=", past, " d=", head_dim,
                        " dv=", v_head_dim);
  }
};

// A decoder step's attention: Q [b, h, S, d]; K and V the present
// [b, kvh, past + S, d] (dense); the past [b, kvh, past, d] (dense, its own
// buffer, as a graph input is); a causal band over the present and a
// padding mask per key.
struct Step {
  explicit Step(const Shape& s) : shape(s), kv_len(s.past + s.q_len) {
    std::mt19937 rng(static_cast<uint32_t>(s.batch * 7919 + s.heads * 131 + s.q_len * 17 + s.past));
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    auto fill = [&](std::vector<float>& x, size_t n) {
      x.resize(n);
      for (float& f : x) f = uniform(rng);
    };
    fill(q, s.batch * s.heads * s.q_len * s.head_dim);
    fill(k, s.batch * s.kv_heads * kv_len * s.head_dim);
    fill(v, s.batch * s.kv_heads * kv_len * s.v_head_dim);
    fill(mask, s.batch * kv_len);
    out.assign(s.batch * s.heads * s.q_len * s.v_head_dim, -12345.0f);
    args.batch = s.batch, args.heads = s.heads, args.kv_heads = s.kv_heads;
    args.q_len = s.q_len, args.kv_len = kv_len;
    args.head_dim = s.head_dim, args.v_head_dim = s.v_head_dim;
    args.q = {q.data(), s.heads * s.q_len * s.head_dim, s.q_len * s.head_dim, s.head_dim};
    args.k = {k.data(), s.kv_heads * kv_len * s.head_dim, kv_len * s.head_dim, s.head_dim};
    args.v = {v.data(), s.kv_heads * kv_len * s.v_head_dim, kv_len * s.v_head_dim, s.v_head_dim};
    args.out = {out.data(), s.heads * s.q_len * s.v_head_dim, s.q_len * s.v_head_dim, s.v_head_dim};
    args.mask = {mask.data(), kv_len, 0, 0};
    args.causal = true, args.fill = -3.4028235e38f, args.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
    // The past: the present's first rows, copied out.
    past_k = PastOf(k, s.head_dim), past_v = PastOf(v, s.v_head_dim);
    copy.rows = s.past;
    copy.k = {past_k.data(), s.kv_heads * s.past * s.head_dim, s.past * s.head_dim, s.head_dim};
    copy.v = {past_v.data(), s.kv_heads * s.past * s.v_head_dim, s.past * s.v_head_dim, s.v_head_dim};
  }

  std::vector<float> PastOf(const std::vector<float>& present, int64_t d) const {
    std::vector<float> past;
    for (int64_t bh = 0; bh < shape.batch * shape.kv_heads; ++bh) {
      const float* head = present.data() + bh * kv_len * d;
      past.insert(past.end(), head, head + shape.past * d);
    }
    return past;
  }

  // Sets the present's past rows (or those of one of K and V) to NaN: what
  // a fresh output holds is anything, and none of it may be read.
  void SpoilPastRows(std::vector<float>& present, int64_t d) const {
    for (int64_t bh = 0; bh < shape.batch * shape.kv_heads; ++bh) {
      std::fill_n(present.data() + bh * kv_len * d, shape.past * d, kNaN);
    }
  }

  const Shape shape;
  const int64_t kv_len;
  std::vector<float> q, k, v, mask, out, past_k, past_v;
  AttentionArgs args;
  PastCopy copy;
};

void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t n = 0; n < got.size(); ++n) {
    ASSERT_EQ(std::bit_cast<uint32_t>(got[n]), std::bit_cast<uint32_t>(want[n])) << what << " at " << n;
  }
}

// Runs `shape` with the past already in K and V, then again from spoiled
// past rows with a PastCopy of K, V or both, on every core and on one and
// two threads: the same bits out, and K and V hold the present again.
void CheckExact(const Shape& shape) {
  for (AttentionIsa isa : Cores()) {
    for (int threads : {1, 2}) {
      for (int which : {0, 1, 2}) {  // both, K only, V only
        SCOPED_TRACE(absl::StrCat(shape.Describe(), " core=", AttentionIsaName(isa), " threads=", threads,
                                  " copy=", which == 0 ? "kv" : which == 1 ? "k" : "v"));
        ScopedOmpThreads team(threads);
        Step step(shape);
        ASSERT_TRUE(RunFusedAttentionOn(isa, step.args).ok());
        const std::vector<float> want = step.out, k = step.k, v = step.v;
        std::fill(step.out.begin(), step.out.end(), -12345.0f);
        if (which != 2) step.SpoilPastRows(step.k, shape.head_dim);
        if (which != 1) step.SpoilPastRows(step.v, shape.v_head_dim);
        PastCopy copy = step.copy;
        if (which == 1) copy.v.data = nullptr;
        if (which == 2) copy.k.data = nullptr;
        absl::Status run = RunFusedAttentionOn(isa, step.args, &copy);
        ASSERT_TRUE(run.ok()) << run;
        ExpectSameBits(step.out, want, "output");
        ExpectSameBits(step.k, k, "K");
        ExpectSameBits(step.v, v, "V");
      }
    }
  }
}

// Past lengths below, at and around the decode path's 64-key blocks (a
// block straddling the past's end is gathered from both sources).
constexpr int64_t kPastLengths[] = {0, 1, 17, 63, 64, 65, 100, 128, 130, 513};

TEST(FusedAttentionPastCopyTest, DecodeGivesTheBitsOfACopyMadeFirst) {
  for (int64_t past : kPastLengths) {
    for (int64_t q_len : {1, 3}) {
      Shape s;
      s.batch = 2, s.heads = 4, s.kv_heads = 4, s.q_len = q_len, s.past = past;
      CheckExact(s);
    }
  }
}

TEST(FusedAttentionPastCopyTest, GroupedHeadsSplitOverTheTeamReadThePastWhileOneItemCopiesIt) {
  // One (batch, KV head) and four query heads: on two threads each item
  // runs one query head, and only the first copies.
  for (int64_t past : {63, 64, 200, 1024}) {
    Shape s;
    s.heads = 4, s.kv_heads = 1, s.q_len = 1, s.past = past;
    CheckExact(s);
  }
  Shape s;
  s.batch = 3, s.heads = 8, s.kv_heads = 2, s.q_len = 2, s.past = 150;
  CheckExact(s);
}

TEST(FusedAttentionPastCopyTest, OddHeadDimsAndUnalignedRowsCopyExactly) {
  // Rows of 40, 24 or 3 floats: the streaming stores' vectors fall at other
  // offsets in each row, the floats around them are stored plainly.
  for (auto [d, dv] : {std::pair<int64_t, int64_t>{40, 24}, {3, 5}, {80, 80}, {128, 96}}) {
    Shape s;
    s.batch = 2, s.heads = 2, s.kv_heads = 2, s.q_len = 1, s.past = 70, s.head_dim = d, s.v_head_dim = dv;
    CheckExact(s);
  }
}

TEST(FusedAttentionPastCopyTest, LongPastsCopyExactly) {
  // 2 x 4 KV heads x 2100 rows: 33 blocks, the last straddling the past's end.
  Shape s;
  s.batch = 2, s.heads = 8, s.kv_heads = 4, s.q_len = 1, s.past = 2100;
  CheckExact(s);
}

TEST(FusedAttentionPastCopyTest, TilePathCopiesFirst) {
  // More query rows than the decode path takes: a prefill with a past.
  for (int64_t q_len : {9, 40}) {
    Shape s;
    s.batch = 2, s.heads = 2, s.kv_heads = 1, s.q_len = q_len, s.past = 65;
    CheckExact(s);
  }
}

TEST(FusedAttentionPastCopyTest, NoQueryRowsStillCopiesThePast) {
  // A step with no new positions: the present is the past, copied, and no
  // attention row is computed.
  for (AttentionIsa isa : Cores()) {
    Shape s;
    s.batch = 2, s.heads = 2, s.kv_heads = 2, s.q_len = 1, s.past = 30;
    Step step(s);
    const std::vector<float> k = step.k;
    step.args.q_len = 0, step.args.kv_len = s.past;
    step.args.k.head_stride = step.args.kv_len * s.head_dim;
    step.args.k.batch_stride = s.kv_heads * step.args.k.head_stride;
    step.args.v.head_stride = step.args.kv_len * s.v_head_dim;
    step.args.v.batch_stride = s.kv_heads * step.args.v.head_stride;
    std::fill(step.k.begin(), step.k.end(), kNaN);
    ASSERT_TRUE(RunFusedAttentionOn(isa, step.args, &step.copy).ok()) << AttentionIsaName(isa);
    ExpectSameBits(std::vector<float>(step.k.begin(), step.k.begin() + s.batch * s.kv_heads * s.past * s.head_dim),
                   step.past_k, "K");
  }
}

TEST(FusedAttentionPastCopyTest, BadCopiesAreInvalidArgumentsNamingTheField) {
  Shape s;
  s.batch = 2, s.heads = 2, s.kv_heads = 2, s.q_len = 1, s.past = 10;
  Step step(s);
  struct Bad {
    std::string field;
    void (*spoil)(AttentionArgs&, PastCopy&);
  };
  const Bad cases[] = {
      {"rows = 12 is outside [0, kv_len = 11]", [](AttentionArgs&, PastCopy& c) { c.rows = 12; }},
      {"rows = -1", [](AttentionArgs&, PastCopy& c) { c.rows = -1; }},
      {"k has a negative stride", [](AttentionArgs&, PastCopy& c) { c.k.row_stride = -64; }},
      {"v is written, but its v broadcasts", [](AttentionArgs& a, PastCopy&) { a.v.head_stride = 0; }},
  };
  for (const Bad& bad : cases) {
    AttentionArgs args = step.args;
    PastCopy copy = step.copy;
    bad.spoil(args, copy);
    absl::Status status = RunFusedAttention(args, &copy);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad.field << ": " << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(bad.field));
  }
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
