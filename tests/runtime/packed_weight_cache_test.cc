// PackedWeightCache (runtime/packed_weight_cache.h): one packed copy per
// (weight, packing) across the Programs of a Dispatcher. A hit must be the
// same bytes packed the same way (never another tensor that happens to have
// the shape, or a packing for another kernel), a failed pack is not kept,
// and concurrent compiles pack once. A bucketed session holds
// one set of packed copies however many entries it compiles, and every
// entry still agrees with the interpreter.
#include "runtime/packed_weight_cache.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "codegen/cpu/skinny_matmul.h"
#include "codegen/cpu/small_rows_matmul.h"
#include "examples/models/bert.h"
#include "graph/interpreter.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/runtime/e2e_util.h"

namespace shapeshift::runtime {
namespace {

namespace cpu = codegen::cpu;

// A real packed copy, from the skinny GEMM where this CPU has one, else
// oneDNN's small-rows packing.
absl::StatusOr<cpu::PackedWeights> PackFor(const cpu::MatmulConfig& config, const Tensor& w) {
  if (std::optional<cpu::SkinnyMatmul::Isa> isa = cpu::SkinnyMatmul::HostIsa()) {
    absl::StatusOr<std::unique_ptr<cpu::SkinnyMatmul>> skinny = cpu::SkinnyMatmul::Create(config, *isa, {});
    if (!skinny.ok()) return skinny.status();
    return (*skinny)->PackB(w.data<float>());
  }
  absl::StatusOr<std::unique_ptr<cpu::SmallRowsMatmul>> small = cpu::SmallRowsMatmul::Create(config);
  if (!small.ok()) return small.status();
  return (*small)->PackB(w.data<float>());
}

Tensor Weights(int64_t k, int64_t n, float base) {
  std::vector<float> v(static_cast<size_t>(k * n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = base + static_cast<float>(i % 97) * 0.01f;
  return Tensor::FromVector(DType::kF32, {k, n}, v);
}

TEST(PackedWeightCacheTest, OneCopyPerWeightAndPacking) {
  cpu::MatmulConfig config;
  config.k = 64, config.n = 96;
  const Tensor w = Weights(64, 96, 1.0f);
  const Tensor same_shape = Weights(64, 96, 2.0f);
  const Tensor alias = w;  // the same storage
  PackedWeightCache cache;
  int packs = 0;
  auto pack = [&](const Tensor& t) {
    return [&, t]() -> absl::StatusOr<cpu::PackedWeights> {
      ++packs;
      return PackFor(config, t);
    };
  };
  bool shared = true;
  absl::StatusOr<cpu::PackedWeights> first = cache.GetOrPack(w, "skinny k64 n96", pack(w), &shared);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(shared);
  absl::StatusOr<cpu::PackedWeights> again = cache.GetOrPack(alias, "skinny k64 n96", pack(alias), &shared);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(shared);
  EXPECT_EQ(again->data(), first->data());
  EXPECT_EQ(packs, 1);

  // Other bytes of the same shape, or the same bytes packed for another
  // kernel: their own copies.
  absl::StatusOr<cpu::PackedWeights> other = cache.GetOrPack(same_shape, "skinny k64 n96", pack(same_shape), &shared);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(shared);
  EXPECT_NE(other->data(), first->data());
  absl::StatusOr<cpu::PackedWeights> other_packing = cache.GetOrPack(w, "small-rows k64 n96", pack(w), &shared);
  ASSERT_TRUE(other_packing.ok());
  EXPECT_FALSE(shared);
  EXPECT_EQ(packs, 3);
  EXPECT_EQ(cache.copies(), 3);
  EXPECT_EQ(cache.bytes(), first->bytes() + other->bytes() + other_packing->bytes());

  // A failed pack is returned and not kept: the next call packs again.
  absl::StatusOr<cpu::PackedWeights> failed = cache.GetOrPack(
      Weights(8, 8, 0.0f), "skinny k8 n8", [] { return absl::StatusOr<cpu::PackedWeights>(absl::InternalError("no")); },
      &shared);
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(cache.copies(), 3);
}

// The entry keeps the weights alive: their address cannot come back as
// other bytes while the cache could answer for it.
TEST(PackedWeightCacheTest, AnEntryKeepsItsWeightsAlive) {
  cpu::MatmulConfig config;
  config.k = 32, config.n = 64;
  PackedWeightCache cache;
  const void* address = nullptr;
  {
    Tensor w = Weights(32, 64, 3.0f);
    address = w.raw();
    bool shared = false;
    ASSERT_TRUE(cache.GetOrPack(w, "p", [&] { return PackFor(config, w); }, &shared).ok());
  }
  // A new tensor of the same size is allocated elsewhere.
  Tensor next = Weights(32, 64, 4.0f);
  EXPECT_NE(next.raw(), address);
  bool shared = true;
  ASSERT_TRUE(cache.GetOrPack(next, "p", [&] { return PackFor(config, next); }, &shared).ok());
  EXPECT_FALSE(shared);
}

TEST(PackedWeightCacheTest, ConcurrentCompilesPackOnce) {
  cpu::MatmulConfig config;
  config.k = 128, config.n = 256;
  const Tensor w = Weights(128, 256, 0.5f);
  PackedWeightCache cache;
  std::atomic<int> packs{0};
  std::vector<const float*> data(8, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      bool shared = false;
      absl::StatusOr<cpu::PackedWeights> p = cache.GetOrPack(
          w, "skinny",
          [&] {
            ++packs;
            return PackFor(config, w);
          },
          &shared);
      if (p.ok()) data[t] = p->data();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(packs.load(), 1);
  for (const float* d : data) EXPECT_EQ(d, data[0]);
  EXPECT_NE(data[0], nullptr);
}

// A bucketed session's entries (one per bucket with traffic) hold one set of
// packed copies, as one Program would, and every entry's answer is the
// interpreter's.
TEST(PackedWeightCacheTest, EveryEntryOfASessionSharesOneSetOfCopies) {
  const examples::BertConfig config = testing::SmallBertConfig();
  absl::StatusOr<ImportedModel> reference = examples::BuildBert(config);
  ASSERT_TRUE(reference.ok()) << reference.status();
  // What one Program of the model packs.
  absl::StatusOr<ImportedModel> alone = examples::BuildBert(config);
  ASSERT_TRUE(alone.ok()) << alone.status();
  absl::StatusOr<std::unique_ptr<Program>> program = Program::Compile(*alone->graph, *alone->env, CompileOptions{});
  ASSERT_TRUE(program.ok()) << program.status();
  const ProgramStats one = (*program)->stats();
  ASSERT_GT(one.packed_weight_bytes, 0);
  // (Static entries have a fixed row count, so no short-request path: they
  // pack nothing.)
  {
    const SpecializationPolicy policy = SpecializationPolicy::kBucketed;
    absl::StatusOr<ImportedModel> model = examples::BuildBert(config);
    ASSERT_TRUE(model.ok()) << model.status();
    SessionOptions options;
    options.policy = policy;
    options.recompile_limit = 16;
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(ModelSource::Built(std::move(model->graph), std::move(model->env)), options);
    ASSERT_TRUE(session.ok()) << session.status();
    uint64_t seed = 1;
    for (int64_t seq : {3, 9, 17, 40, 100}) {
      std::vector<Tensor> inputs = examples::MakeBertInputs(config, 1, seq, seed++);
      EXPECT_TRUE(testing::CompiledMatchesInterpreter(**session, *reference->graph, inputs, 1e-3, 1e-4))
          << "seq " << seq;
    }
    const SessionStats stats = (*session)->stats();
    EXPECT_GE(stats.entries, 4u);
    // One set, as one Program of the model packs.
    EXPECT_EQ(stats.dispatcher.packed_weight_copies, one.small_row_gemms);
    EXPECT_EQ(stats.dispatcher.packed_weight_bytes, one.packed_weight_bytes);
  }
}

}  // namespace
}  // namespace shapeshift::runtime
