// The OpenMP team every parallel region forks (parallel_run.h's TeamFor): the
// whole team or one thread, never a narrower team, because libgomp ends the
// pool's surplus workers when a region forks fewer threads than the one before
// and starts them again for the next wider one. These tests watch the
// process's thread count (/proc/self/task) across regions of varying width.
#include "codegen/cpu/parallel_run.h"

#include <omp.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "codegen/cpu/skinny_matmul.h"
#include "gtest/gtest.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::shapeshift::codegen::testing::RandomFloats;

int ProcessThreads() {
  int count = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++count;
  return count;
}

// Records the team size and which items ran, for RunParallel's KernelFn.
std::atomic<int> seen_team{0};
std::vector<std::atomic<int>>* seen_items = nullptr;

void RecordingKernel(int64_t begin, int64_t end, void* const*, const int64_t*) {
  seen_team.store(omp_get_num_threads());
  for (int64_t i = begin; i < end; ++i) (*seen_items)[i].fetch_add(1);
}

TEST(ParallelRunTest, TheTeamIsTheWholePoolOrOneThread) {
  ScopedOmpThreads four(4);
  EXPECT_EQ(TeamFor(0), 1);
  EXPECT_EQ(TeamFor(1), 1);
  EXPECT_EQ(TeamFor(2), 4);  // fewer pieces than threads: still the whole team
  EXPECT_EQ(TeamFor(1000), 4);
  int inside = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    inside = TeamFor(1000);
  }
  EXPECT_EQ(inside, 1) << "a region inside a region runs on its calling thread";
}

TEST(ParallelRunTest, NarrowWorkRunsEveryItemOnceAndKeepsThePool) {
  ScopedOmpThreads four(4);
  std::vector<std::atomic<int>> items(1000);
  seen_items = &items;
  RunParallel(RecordingKernel, 1000, nullptr, nullptr);  // the pool now has 4 threads
  const int pool = ProcessThreads();
  for (int64_t total : {2, 3, 1000, 2}) {
    for (auto& item : items) item.store(0);
    RunParallel(RecordingKernel, total, nullptr, nullptr);
    EXPECT_EQ(seen_team.load(), 4) << "total " << total;
    for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(items[i].load(), i < total ? 1 : 0) << "item " << i;
    EXPECT_EQ(ProcessThreads(), pool) << "after a region over " << total << " items";
  }
  seen_items = nullptr;
}

TEST(ParallelRunTest, ASkinnyGemmWithFewerPanelsThanThreadsKeepsThePool) {
  std::optional<SkinnyMatmul::Isa> isa = SkinnyMatmul::HostIsa();
  ASSERT_TRUE(isa.has_value()) << "the test machine has AVX2 at least";
  ScopedOmpThreads four(4);
  MatmulConfig cfg;
  cfg.k = 256, cfg.n = 64;  // two 32-wide panels (AVX-512) or four 16-wide (AVX2)
  absl::StatusOr<std::unique_ptr<SkinnyMatmul>> skinny = SkinnyMatmul::Create(cfg, *isa);
  ASSERT_TRUE(skinny.ok()) << skinny.status();
  std::vector<float> a = RandomFloats(16 * cfg.k, 1), b = RandomFloats(cfg.k * cfg.n, 2);
  std::vector<float> c(16 * cfg.n);
  absl::StatusOr<PackedWeights> packed = (*skinny)->PackB(b.data());
  ASSERT_TRUE(packed.ok()) << packed.status();
  std::vector<std::atomic<int>> items(1000);
  seen_items = &items;
  RunParallel(RecordingKernel, 1000, nullptr, nullptr);
  const int pool = ProcessThreads();
  for (int round = 0; round < 3; ++round) {
    // 16 x 256 x 64 multiply-adds: above the serial threshold, so it forks.
    ASSERT_GE(int64_t{16} * cfg.k * cfg.n, kSerialGemmMacs);
    ASSERT_TRUE((*skinny)->Execute({1, 16, cfg.k, cfg.n}, {a.data(), packed->data(), nullptr, nullptr, c.data()}).ok());
    EXPECT_EQ(ProcessThreads(), pool) << "after the skinny GEMM, round " << round;
    RunParallel(RecordingKernel, 1000, nullptr, nullptr);
    EXPECT_EQ(ProcessThreads(), pool) << "after a full-width kernel, round " << round;
  }
  seen_items = nullptr;
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
