// Program::Compile with a persistent object store: the second compile of a
// model against the same cache directory (fresh backend, fresh cache
// object, as in a second process) runs no LLVM compile and computes
// bit-identical outputs; a damaged object file costs one recompile.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/persist/artifact_cache.h"
#include "runtime/persist/artifact_object_store.h"
#include "runtime/program.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime::persist {
namespace {

using ::testing::HasSubstr;
using runtime::testing::BuiltModel;
using runtime::testing::MiniEncoder;
using runtime::testing::TokenInputs;

// Everything one "process" owns: its cache handle, store, model and program.
struct CompiledWithCache {
  std::ostringstream warnings;
  std::unique_ptr<ArtifactCache> cache;
  std::unique_ptr<ArtifactObjectStore> store;
  BuiltModel model;
  std::unique_ptr<Program> program;
};

std::unique_ptr<CompiledWithCache> CompileWithCache(const std::string& dir, int vector_width = 0) {
  auto c = std::make_unique<CompiledWithCache>();
  ArtifactCacheOptions cache_options;
  cache_options.warnings = &c->warnings;
  auto cache = ArtifactCache::Open(dir, cache_options);
  EXPECT_TRUE(cache.ok()) << cache.status();
  if (!cache.ok()) return nullptr;
  c->cache = *std::move(cache);
  c->store = std::make_unique<ArtifactObjectStore>(c->cache.get());
  c->model = MiniEncoder();
  CompileOptions options;
  options.object_store = c->store.get();
  options.vector_width = vector_width;
  auto program = Program::Compile(*c->model.graph, *c->model.env, options);
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok()) return nullptr;
  c->program = *std::move(program);
  return c;
}

std::vector<float> RunModel(const Program& program, int64_t batch, int64_t seq) {
  std::vector<Tensor> inputs = TokenInputs(batch, seq, 50, 11);
  TensorView views[] = {TensorView::Of(inputs[0]), TensorView::Of(inputs[1])};
  ExecutionContext context;
  absl::StatusOr<std::vector<Tensor>> out = program.Run(absl::MakeConstSpan(views), context);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  const Tensor& y = (*out)[0];
  return std::vector<float>(y.data<float>(), y.data<float>() + y.num_elements());
}

class ProgramObjectCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/shapeshift_program_cache_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_", getpid());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ProgramObjectCacheTest, SecondCompileWithTheSameDirectoryRunsNoLlvmCompile) {
  auto cold = CompileWithCache(dir_);
  ASSERT_NE(cold, nullptr);
  const ProgramStats& first = cold->program->stats();
  ASSERT_GT(first.kernels, 0);
  EXPECT_EQ(first.llvm_compiles, first.kernels);
  EXPECT_EQ(first.kernels_from_store, 0);
  EXPECT_EQ(cold->cache->stats().writes, first.kernels);

  auto warm = CompileWithCache(dir_);
  ASSERT_NE(warm, nullptr);
  const ProgramStats& second = warm->program->stats();
  EXPECT_EQ(second.kernels, first.kernels);
  EXPECT_EQ(second.llvm_compiles, 0);
  EXPECT_EQ(second.kernels_from_store, first.kernels);
  EXPECT_EQ(second.store_rejects, 0);
  EXPECT_EQ(warm->cache->stats().hits, first.kernels);
  EXPECT_TRUE(warm->warnings.str().empty()) << warm->warnings.str();

  for (auto [batch, seq] : {std::pair<int64_t, int64_t>{2, 37}, {1, 300}, {4, 1}}) {
    std::vector<float> expected = RunModel(*cold->program, batch, seq);
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(RunModel(*warm->program, batch, seq), expected) << "batch " << batch << " seq " << seq;
  }
}

TEST_F(ProgramObjectCacheTest, DamagedObjectFileIsReportedRecompiledAndReplaced) {
  auto cold = CompileWithCache(dir_);
  ASSERT_NE(cold, nullptr);
  const int64_t kernels = cold->program->stats().kernels;
  std::filesystem::path damaged;
  for (const auto& entry : std::filesystem::directory_iterator(dir_ + "/objects")) damaged = entry.path();
  ASSERT_FALSE(damaged.empty());
  {
    std::fstream file(damaged, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-100, std::ios::end);
    file.put('\x5a');
  }

  auto warm = CompileWithCache(dir_);
  ASSERT_NE(warm, nullptr);
  EXPECT_EQ(warm->program->stats().llvm_compiles, 1);
  EXPECT_EQ(warm->program->stats().kernels_from_store, kernels - 1);
  EXPECT_EQ(warm->cache->stats().rejected, 1);
  EXPECT_THAT(warm->warnings.str(), HasSubstr(damaged.string()));
  EXPECT_THAT(warm->warnings.str(), HasSubstr("checksum mismatch"));
  EXPECT_EQ(RunModel(*warm->program, 2, 37), RunModel(*cold->program, 2, 37));

  auto rebuilt = CompileWithCache(dir_);
  ASSERT_NE(rebuilt, nullptr);
  EXPECT_EQ(rebuilt->program->stats().llvm_compiles, 0);
  EXPECT_EQ(rebuilt->cache->stats().rejected, 0);
}

TEST_F(ProgramObjectCacheTest, OtherCodegenOptionsDoNotShareObjects) {
  auto host_width = CompileWithCache(dir_);
  ASSERT_NE(host_width, nullptr);
  auto scalar = CompileWithCache(dir_, 1);  // host width is at least 4
  ASSERT_NE(scalar, nullptr);
  EXPECT_EQ(scalar->program->stats().kernels_from_store, 0);
  EXPECT_EQ(scalar->program->stats().llvm_compiles, scalar->program->stats().kernels);
}

}  // namespace
}  // namespace shapeshift::runtime::persist
