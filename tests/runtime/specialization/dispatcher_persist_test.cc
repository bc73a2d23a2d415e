// Dispatcher with a persistent cache: a second Dispatcher on the same
// directory re-creates every entry with no LLVM compile and no compile
// event, and serves the same outputs; a corrupted manifest is reported,
// counted, ignored and rebuilt.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "runtime/persist/artifact_cache.h"
#include "runtime/specialization/dispatcher.h"
#include "runtime/specialization/manifest.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/dispatcher_persist_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

std::unique_ptr<Dispatcher> Make(SpecializationPolicy policy, const std::string& dir, std::ostream* warnings) {
  testing::BuiltModel model = testing::MiniEncoder(/*max_seq=*/64);
  DispatcherOptions options;
  options.policy = policy;
  options.cache_dir = dir;
  options.cache_warnings = warnings;
  absl::StatusOr<std::unique_ptr<Dispatcher>> d =
      Dispatcher::Create(std::move(model.graph), std::move(model.env), options);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *std::move(d) : nullptr;
}

std::vector<Tensor> Serve(Dispatcher& d, int64_t seq) {
  std::vector<Tensor> in = testing::TokenInputs(1, seq, 50, static_cast<uint32_t>(seq));
  std::vector<TensorView> views;
  for (const Tensor& t : in) views.push_back(TensorView::Of(t));
  ExecutionContext ctx;
  absl::StatusOr<std::vector<Tensor>> out = d.Run(views, ctx);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : std::vector<Tensor>{};
}

int64_t LlvmCompiles(const Dispatcher& d) {
  int64_t n = 0;
  for (const auto& e : d.cache().entries()) n += e->artifact->program->stats().llvm_compiles;
  return n;
}

TEST(DispatcherPersistTest, ASecondDispatcherLoadsEveryEntryWithoutCompiling) {
  const std::string dir = FreshDir("static");
  std::ostringstream warnings;
  std::vector<std::vector<Tensor>> first_outputs;
  {
    std::unique_ptr<Dispatcher> first = Make(SpecializationPolicy::kStatic, dir, &warnings);
    ASSERT_NE(first, nullptr);
    for (int64_t seq : {5, 9, 17}) first_outputs.push_back(Serve(*first, seq));
    EXPECT_EQ(first->stats().compiles, 3);
    EXPECT_GT(LlvmCompiles(*first), 0);
  }
  std::unique_ptr<Dispatcher> second = Make(SpecializationPolicy::kStatic, dir, &warnings);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->cache().size(), 3u);
  EXPECT_EQ(LlvmCompiles(*second), 0) << "every kernel came from the object store";
  int i = 0;
  for (int64_t seq : {5, 9, 17}) {
    std::vector<Tensor> out = Serve(*second, seq);
    ASSERT_EQ(out.size(), first_outputs[i].size());
    EXPECT_EQ(testing::MaxAbsDiff(out[0], first_outputs[i][0]), 0.0) << "seq=" << seq;
    ++i;
  }
  DispatcherStats s = second->stats();
  EXPECT_EQ(s.compiles, 0);
  EXPECT_EQ(s.cache_loads, 3);
  EXPECT_TRUE(second->events().empty());
  SpecializationMetrics m = second->Metrics();
  EXPECT_EQ(m.cache_loads, 3);
  EXPECT_EQ(m.compiles, 0);
  EXPECT_EQ(m.cache_errors, 0);
  EXPECT_EQ(warnings.str(), "");
  // A new shape is a miss (the model's first compile was in the first process).
  Serve(*second, 30);
  EXPECT_EQ(second->events().back().trigger, RecompileTrigger::kMiss);
}

TEST(DispatcherPersistTest, AutoPolicyLoadsThePolymorphicEntryInsteadOfCompilingIt) {
  const std::string dir = FreshDir("auto");
  std::ostringstream warnings;
  std::vector<Tensor> want;
  {
    std::unique_ptr<Dispatcher> first = Make(SpecializationPolicy::kAuto, dir, &warnings);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->stats().compiles, 1);
    want = Serve(*first, 11);
  }
  std::unique_ptr<Dispatcher> second = Make(SpecializationPolicy::kAuto, dir, &warnings);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->stats().compiles, 0);
  EXPECT_EQ(second->stats().cache_loads, 1);
  EXPECT_TRUE(second->events().empty());
  EXPECT_EQ(LlvmCompiles(*second), 0);
  EXPECT_EQ(testing::MaxAbsDiff(Serve(*second, 11)[0], want[0]), 0.0);
}

TEST(DispatcherPersistTest, EachDeviceHasItsOwnManifest) {
  testing::BuiltModel model = testing::MiniEncoder(64);
  CompileOptions cuda;
  cuda.device = Device::kCuda;
  const std::string cpu_key = ManifestKey(*model.graph, *model.env, {}, SpecializationPolicy::kAuto, {});
  EXPECT_NE(ManifestKey(*model.graph, *model.env, cuda, SpecializationPolicy::kAuto, {}), cpu_key);
  CompileOptions cpu;
  cpu.device = Device::kCpu;
  EXPECT_EQ(ManifestKey(*model.graph, *model.env, cpu, SpecializationPolicy::kAuto, {}), cpu_key);
}

// The key reads every byte of every constant: one flipped bit anywhere in
// the largest weight — in each of the hash's interleaved lanes, in the
// words past its last whole block, in the bytes past its last word —
// gives another key; the same bytes give the same key.
TEST(DispatcherPersistTest, TheKeyChangesWithAnyByteOfAnyConstant) {
  testing::BuiltModel model = testing::MiniEncoder(64);
  const std::string key = ManifestKey(*model.graph, *model.env, {}, SpecializationPolicy::kAuto, {});
  EXPECT_EQ(ManifestKey(*model.graph, *model.env, {}, SpecializationPolicy::kAuto, {}), key);
  Value* largest = nullptr;
  for (Value* c : model.graph->constants()) {
    if (largest == nullptr || c->constant()->byte_size() > largest->constant()->byte_size()) largest = c;
  }
  ASSERT_NE(largest, nullptr);
  const size_t size = largest->constant()->byte_size();
  ASSERT_GT(size, 64u);
  for (size_t at : {size_t{0}, size_t{9}, size_t{18}, size_t{27}, size / 2, size - 9, size - 1}) {
    SCOPED_TRACE(at);
    Tensor changed = largest->constant()->Clone();
    static_cast<unsigned char*>(changed.mutable_raw())[at] ^= 0x10;
    Tensor original = *largest->constant();
    ASSERT_TRUE(model.graph->ReplaceConstant(largest, std::move(changed)).ok());
    EXPECT_NE(ManifestKey(*model.graph, *model.env, {}, SpecializationPolicy::kAuto, {}), key);
    ASSERT_TRUE(model.graph->ReplaceConstant(largest, std::move(original)).ok());
    EXPECT_EQ(ManifestKey(*model.graph, *model.env, {}, SpecializationPolicy::kAuto, {}), key);
  }
}

TEST(DispatcherPersistTest, ACorruptedManifestIsReportedIgnoredAndRebuilt) {
  const std::string dir = FreshDir("corrupt");
  std::ostringstream warnings;
  std::string key;
  {
    std::unique_ptr<Dispatcher> first = Make(SpecializationPolicy::kStatic, dir, &warnings);
    ASSERT_NE(first, nullptr);
    Serve(*first, 5);
    key = ManifestKey(*testing::MiniEncoder(64).graph, first->env(), {}, SpecializationPolicy::kStatic, {});
  }
  // A well-formed cache file whose payload is not a manifest.
  absl::StatusOr<std::unique_ptr<persist::ArtifactCache>> disk = persist::ArtifactCache::Open(dir);
  ASSERT_TRUE(disk.ok()) << disk.status();
  ASSERT_TRUE((*disk)->Put(kManifestNamespace, key, "{\"format\": 1, \"entries\": [tru").ok());
  {
    std::unique_ptr<Dispatcher> second = Make(SpecializationPolicy::kStatic, dir, &warnings);
    ASSERT_NE(second, nullptr);
    EXPECT_EQ(second->cache().size(), 0u);
    EXPECT_EQ(second->Metrics().cache_errors, 1);
    EXPECT_NE(warnings.str().find("is corrupted"), std::string::npos) << warnings.str();
    Serve(*second, 5);  // compiled again; the manifest is rewritten
    EXPECT_EQ(second->stats().compiles, 1);
  }
  // Damage to the file itself (a flipped byte): the cache rejects it.
  const std::string path = (*disk)->PathOf(kManifestNamespace, key);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('#');
  }
  warnings.str("");
  {
    std::unique_ptr<Dispatcher> third = Make(SpecializationPolicy::kStatic, dir, &warnings);
    ASSERT_NE(third, nullptr);
    EXPECT_EQ(third->cache().size(), 0u);
    EXPECT_GE(third->Metrics().cache_errors, 1);
    EXPECT_NE(warnings.str().find(path), std::string::npos) << warnings.str();
    Serve(*third, 5);
  }
  std::unique_ptr<Dispatcher> fourth = Make(SpecializationPolicy::kStatic, dir, &warnings);
  ASSERT_NE(fourth, nullptr);
  EXPECT_EQ(fourth->stats().cache_loads, 1) << "rebuilt by the third";
}

}  // namespace
}  // namespace shapeshift::runtime
