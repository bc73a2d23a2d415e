#include "codegen/cpu/onednn_matmul.h"

#include <cmath>
#include <string>
#include <memory>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/codegen/matmul_reference.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::shapeshift::codegen::testing::Close;
using ::shapeshift::codegen::testing::MatmulReference;
using ::shapeshift::codegen::testing::RandomFloats;
using ::testing::HasSubstr;

// One Execute() of `mm` on fresh operands (from `seed`), against Reference.
void RunAndCheck(const OnednnMatmul& mm, const MatmulShape& s, uint32_t seed = 21, bool residual_in_place = false) {
  const MatmulConfig& cfg = mm.config();
  SCOPED_TRACE(DescribeConfig(cfg) + " at batch=" + std::to_string(s.batch) + " m=" + std::to_string(s.m) +
               " k=" + std::to_string(s.k) + " n=" + std::to_string(s.n) + " seed=" + std::to_string(seed));
  int64_t batch = cfg.batch == 0 ? 1 : s.batch;
  std::vector<float> a = RandomFloats(batch * s.m * s.k, seed), b = RandomFloats(batch * s.k * s.n, seed + 1);
  std::vector<float> bias = RandomFloats(s.n, seed + 2), residual = RandomFloats(batch * s.m * s.n, seed + 3);
  std::vector<double> want = MatmulReference(cfg, s, a, b, bias, residual);
  std::vector<float> c = residual_in_place ? residual : std::vector<float>(batch * s.m * s.n, NAN);
  MatmulOperands ops{a.data(), b.data(), bias.data(), residual_in_place ? c.data() : residual.data(), c.data()};
  PackedWeights packed;
  if (cfg.pack_b) {
    auto made = mm.PackB(b.data());
    ASSERT_TRUE(made.ok()) << made.status();
    packed = *made;
    ops.b = packed.data();
  }
  ASSERT_TRUE(mm.Execute(s, ops).ok());
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(Close(c[i], want[i], 1e-4, 1e-4 * std::sqrt(double(s.k)))) << "at " << i << ": " << c[i] << " vs " << want[i];
  }
}

void CheckAgainstReference(const MatmulConfig& cfg, const MatmulShape& s, bool residual_in_place = false) {
  auto mm = OnednnMatmul::Create(cfg);
  ASSERT_TRUE(mm.ok()) << DescribeConfig(cfg) << ": " << mm.status();
  RunAndCheck(**mm, s, 21, residual_in_place);
}

TEST(OnednnMatmulTest, RuntimeDimsAtAwkwardSizes) {
  MatmulConfig cfg;  // m, k, n all runtime: one primitive serves every size
  for (int64_t m : {1, 7, 33})
    for (int64_t k : {1, 17, 64})
      for (int64_t n : {1, 5, 31}) CheckAgainstReference(cfg, {1, m, k, n});
}

TEST(OnednnMatmulTest, StaticDimsAtAwkwardSizes) {
  for (int64_t m : {1, 13})
    for (int64_t n : {3, 33}) {
      MatmulConfig cfg{.m = m, .k = 19, .n = n};
      CheckAgainstReference(cfg, {1, m, 19, n});
    }
}

TEST(OnednnMatmulTest, EpiloguesBiasScaleGeluResidual) {
  for (MatmulActivation act : {MatmulActivation::kNone, MatmulActivation::kGeluErf, MatmulActivation::kGeluTanh}) {
    for (bool runtime_m : {true, false}) {
      MatmulConfig cfg{.m = runtime_m ? kRuntimeDim : 9, .k = 24, .n = 20, .bias = true, .scale = 0.5f,
                       .activation = act, .residual = act == MatmulActivation::kNone};
      CheckAgainstReference(cfg, {1, 9, 24, 20});
    }
  }
  MatmulConfig residual_only{.k = 8, .n = 8, .residual = true};
  CheckAgainstReference(residual_only, {1, 5, 8, 8}, /*residual_in_place=*/true);
}

TEST(OnednnMatmulTest, BatchedAttentionShapes) {
  // Q·Kᵀ: [BH, S, D] x [BH, S, D]ᵀ scaled; P·V: [BH, S, S] x [BH, S, D].
  MatmulConfig scores{.batch = kRuntimeDim, .m = kRuntimeDim, .k = 16, .n = kRuntimeDim, .transpose_b = true,
                      .scale = 0.25f};
  MatmulConfig context{.batch = kRuntimeDim, .m = kRuntimeDim, .k = kRuntimeDim, .n = 16};
  for (int64_t seq : {1, 7, 37}) {
    CheckAgainstReference(scores, {6, seq, 16, seq});
    CheckAgainstReference(context, {6, seq, seq, 16});
  }
  MatmulConfig fixed_batch{.batch = 2, .m = 3, .k = 4, .n = 5, .transpose_b = true};
  CheckAgainstReference(fixed_batch, {2, 3, 4, 5});
}

TEST(OnednnMatmulTest, ShapeMismatchAndMissingOperandsAreErrors) {
  auto mm = OnednnMatmul::Create(MatmulConfig{.k = 768, .n = 768, .bias = true});
  ASSERT_TRUE(mm.ok()) << mm.status();
  std::vector<float> x(16 * 768);
  absl::Status wrong_k = (*mm)->Execute({1, 1, 512, 768}, {x.data(), x.data(), x.data(), nullptr, x.data()});
  EXPECT_EQ(wrong_k.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong_k.message()), HasSubstr("matmul[m=?, k=768, n=768, bias]"));
  absl::Status zero_m = (*mm)->Execute({1, 0, 768, 768}, {x.data(), x.data(), x.data(), nullptr, x.data()});
  EXPECT_EQ(zero_m.code(), absl::StatusCode::kInvalidArgument);
  absl::Status no_bias = (*mm)->Execute({1, 1, 768, 768}, {x.data(), x.data(), nullptr, nullptr, x.data()});
  EXPECT_THAT(std::string(no_bias.message()), HasSubstr("missing operand"));
  auto bad = OnednnMatmul::Create(MatmulConfig{.k = 0, .n = 4});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OnednnMatmulTest, PackedWeightsRuntimeAndStaticM) {
  for (bool transpose_b : {false, true}) {
    for (int64_t m : {kRuntimeDim, int64_t{13}}) {
      MatmulConfig cfg{.m = m, .k = 96, .n = 80, .transpose_b = transpose_b, .bias = true,
                       .activation = MatmulActivation::kGeluTanh, .pack_b = true};
      CheckAgainstReference(cfg, {1, 13, 96, 80});
    }
  }
  MatmulConfig runtime_k{.k = kRuntimeDim, .n = 8, .pack_b = true};
  EXPECT_EQ(OnednnMatmul::Create(runtime_k).status().code(), absl::StatusCode::kInvalidArgument);
  auto plain = OnednnMatmul::Create(MatmulConfig{.k = 8, .n = 8});
  ASSERT_TRUE(plain.ok());
  std::vector<float> b(64);
  EXPECT_EQ((*plain)->PackB(b.data()).status().code(), absl::StatusCode::kFailedPrecondition);
}

// Execute() keeps the last call's oneDNN memory objects and re-points them:
// the same shape with other operands, a new shape, and the old shape again
// must each compute their own product. The sizes also cross the single-thread
// GEMM (2^17 multiply-adds) and serial residual copy (16384 floats) limits.
TEST(OnednnMatmulTest, OnePrimitiveServesChangingShapesAndOperands) {
  auto mm = OnednnMatmul::Create(MatmulConfig{.bias = true, .residual = true});
  ASSERT_TRUE(mm.ok()) << mm.status();
  RunAndCheck(**mm, {1, 3, 5, 7}, 1);
  RunAndCheck(**mm, {1, 3, 5, 7}, 2);
  RunAndCheck(**mm, {1, 130, 4, 130}, 3);   // 67600 MACs: one thread; 16900-float residual: parallel copy
  RunAndCheck(**mm, {1, 64, 64, 64}, 4);    // 262144 MACs: all threads
  RunAndCheck(**mm, {1, 3, 5, 7}, 5);
  RunAndCheck(**mm, {1, 3, 5, 7}, 6, /*residual_in_place=*/true);
  auto packed = OnednnMatmul::Create(MatmulConfig{.k = 96, .n = 80, .bias = true, .pack_b = true});
  ASSERT_TRUE(packed.ok()) << packed.status();
  for (uint32_t seed : {7, 8}) RunAndCheck(**packed, {1, 13, 96, 80}, seed);  // other packed weights each time
  auto batched = OnednnMatmul::Create(MatmulConfig{.batch = kRuntimeDim, .k = 16, .n = kRuntimeDim,
                                                   .transpose_b = true, .scale = 0.25f});
  ASSERT_TRUE(batched.ok()) << batched.status();
  for (int64_t seq : {5, 5, 9, 5}) RunAndCheck(**batched, {3, seq, 16, seq}, static_cast<uint32_t>(seq) * 10);
  RunAndCheck(**batched, {4, 5, 16, 5}, 11);  // only the batch changed
}

// Threads share one primitive: one of them uses the cached arguments, the
// others build their own; every result must be its own.
TEST(OnednnMatmulTest, ConcurrentCallsOnOnePrimitive) {
  auto mm = OnednnMatmul::Create(MatmulConfig{.k = 24, .bias = true});
  ASSERT_TRUE(mm.ok()) << mm.status();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) RunAndCheck(**mm, {1, 1 + (t + i) % 5, 24, 3 + t}, static_cast<uint32_t>(100 * t + i));
    });
  }
  for (std::thread& thread : threads) thread.join();
}

// Fully static primitives (brg:avx512_core) need a scratchpad: its batch
// descriptors hold the operand pointers, and a K split keeps partial sums
// there. With oneDNN's library-managed scratchpad, every primitive created on
// one thread shares that thread's buffer, so threads running them at once
// read each other's operands (wrong products, or a crash: seen on
// 1x4096x4096). Each call must use the calling thread's own. Where oneDNN
// picks another implementation (gemm:jit on an AVX2 host) there may be no
// scratchpad to share; the products must be right all the same.
TEST(OnednnMatmulTest, ConcurrentCallsOnStaticPrimitivesEachUseTheirOwnScratchpad) {
  std::vector<std::unique_ptr<OnednnMatmul>> mms;
  for (MatmulConfig cfg : {MatmulConfig{.m = 8, .k = 768, .n = 768}, MatmulConfig{.m = 16, .k = 1024, .n = 1024}}) {
    auto mm = OnednnMatmul::Create(cfg);
    ASSERT_TRUE(mm.ok()) << mm.status();
    if (absl::StartsWith((*mm)->implementation(), "brg")) {
      EXPECT_GT((*mm)->scratchpad_bytes(), 0) << DescribeConfig(cfg) << " (" << (*mm)->implementation() << ")";
    }
    mms.push_back(*std::move(mm));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 6; ++i) {
        const OnednnMatmul& mm = *mms[(t + i) % 2];
        const MatmulConfig& cfg = mm.config();
        RunAndCheck(mm, {1, cfg.m, cfg.k, cfg.n}, static_cast<uint32_t>(1000 + 100 * t + i));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
}

TEST(OnednnMatmulTest, ImplementationNameIsReported) {
  auto mm = OnednnMatmul::Create(MatmulConfig{.m = 128, .k = 768, .n = 768});
  ASSERT_TRUE(mm.ok()) << mm.status();
  EXPECT_FALSE((*mm)->implementation().empty());
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
