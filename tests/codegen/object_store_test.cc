// The object store: record format, key material, and CpuBackend linking
// stored objects instead of compiling (and refusing records it cannot trust).
#include "codegen/cpu/object_store.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cpu/cpu_backend.h"
#include "codegen/cpu/kernel_cache.h"
#include "codegen/cpu/parallel_run.h"
#include "codegen/kernel_library.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::testing::HasSubstr;
using testing::RandomFloats;

TEST(ObjectRecordTest, RoundTrips) {
  ObjectRecord record{"material\nwith lines", "shapeshift_kabc_softmax", std::string("\x7f" "ELF\0\1", 6)};
  absl::StatusOr<ObjectRecord> decoded = DecodeObjectRecord(EncodeObjectRecord(record));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->key_material, record.key_material);
  EXPECT_EQ(decoded->symbol, record.symbol);
  EXPECT_EQ(decoded->object, record.object);
}

TEST(ObjectRecordTest, EveryTruncationAndTrailingBytesAreErrors) {
  std::string bytes = EncodeObjectRecord({"m", "s", "object"});
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(DecodeObjectRecord(bytes.substr(0, n)).status().code(), absl::StatusCode::kDataLoss) << n;
  }
  EXPECT_EQ(DecodeObjectRecord(bytes + "x").status().code(), absl::StatusCode::kDataLoss);
}

TEST(ObjectRecordTest, EnormousLengthFieldIsAnErrorNotAnAllocation) {
  std::string bytes = EncodeObjectRecord({"m", "s", "object"});
  size_t length_at = bytes.find('m') - 8;  // the key material's length field
  std::memset(&bytes[length_at], 0xff, 8);
  absl::StatusOr<ObjectRecord> decoded = DecodeObjectRecord(bytes);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(decoded.status().message()), HasSubstr("past the end"));
}

TEST(ObjectKeyTest, DigestIsSha1Hex) {
  EXPECT_EQ(ObjectKeyDigest("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST(ObjectKeyTest, CompilerIdentityNamesVersionAndSourceDigest) {
  EXPECT_THAT(CompilerIdentity(), ::testing::MatchesRegex("shapeshift [0-9.]+ source [0-9a-f]{24}"));
}

// A GEMM tuning is keyed by a digest over the engines' and the tuner's
// sources alone: a subset of the compiler's, so a different digest.
TEST(ObjectKeyTest, GemmEngineIdentityIsADigestOfFewerSources) {
  EXPECT_THAT(GemmEngineIdentity(), ::testing::MatchesRegex("shapeshift [0-9.]+ gemm engines [0-9a-f]{24}"));
  const std::string whole = CompilerIdentity().substr(CompilerIdentity().rfind(' ') + 1);
  const std::string gemm = GemmEngineIdentity().substr(GemmEngineIdentity().rfind(' ') + 1);
  EXPECT_NE(whole, gemm);
  // The digest of no files at all: the list of GEMM engine files matched none.
  EXPECT_NE(gemm, "e3b0c44298fc1c149afbf4c8");
}

TEST(ObjectKeyTest, MaterialIgnoresNamesButNotConstantsOrWidth) {
  auto backend = CpuBackend::Create();
  auto narrow = CpuBackend::Create(CpuBackendOptions{.vector_width = 4});
  ASSERT_TRUE(backend.ok() && narrow.ok());
  Kernel softmax = SoftmaxKernel(0.125f);
  Kernel renamed = softmax;
  renamed.name = "other_name";
  renamed.buffers[0].name = "other_buffer";
  EXPECT_EQ((*backend)->KeyMaterial(softmax), (*backend)->KeyMaterial(renamed));
  // Prints like 0.125 but is another kernel.
  Kernel nearby = SoftmaxKernel(std::nextafter(0.125f, 1.0f));
  EXPECT_NE((*backend)->KeyMaterial(softmax), (*backend)->KeyMaterial(nearby));
  EXPECT_NE((*backend)->KeyMaterial(softmax), (*narrow)->KeyMaterial(softmax));
  EXPECT_THAT((*backend)->KeyMaterial(softmax), HasSubstr(CompilerIdentity()));
}

// The remainder option changes code only where masked tails exist (AVX-512).
TEST(ObjectKeyTest, MaterialFollowsTheRemainderThatIsGenerated) {
  auto best = CpuBackend::Create();
  auto scalar = CpuBackend::Create(CpuBackendOptions{.remainder = RemainderKind::kScalarLoop});
  ASSERT_TRUE(best.ok() && scalar.ok());
  Kernel kernel = BiasResidualKernel();
  bool masked_tails = (*best)->vector_width() == 16;
  EXPECT_EQ((*best)->KeyMaterial(kernel) != (*scalar)->KeyMaterial(kernel), masked_tails);
}

constexpr int64_t kRows = 3, kCols = 37;

// y = x + bias + residual on a kRows x kCols input, as bits.
std::vector<float> RunBiasResidual(const CompiledKernel& kernel) {
  std::vector<float> x = RandomFloats(kRows * kCols, 1), bias = RandomFloats(kCols, 2);
  std::vector<float> res = RandomFloats(kRows * kCols, 3), y(kRows * kCols);
  void* buffers[] = {x.data(), bias.data(), res.data(), y.data()};
  int64_t dims[] = {kRows, kCols};
  RunParallel(kernel, buffers, dims);
  return y;
}

std::vector<float> ReferenceBiasResidual() {
  std::vector<float> x = RandomFloats(kRows * kCols, 1), bias = RandomFloats(kCols, 2);
  std::vector<float> res = RandomFloats(kRows * kCols, 3), y(kRows * kCols);
  for (int64_t i = 0; i < kRows * kCols; ++i) y[i] = x[i] + bias[i % kCols] + res[i];
  return y;
}

std::unique_ptr<CpuBackend> BackendWith(ObjectStore* store) {
  auto backend = CpuBackend::Create(CpuBackendOptions{.object_store = store});
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? *std::move(backend) : nullptr;
}

TEST(CpuBackendStoreTest, FreshBackendLinksStoredObjectsWithoutCompiling) {
  InMemoryObjectStore store;
  auto first = BackendWith(&store);
  ASSERT_NE(first, nullptr);
  auto compiled = first->Compile(BiasResidualKernel());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_TRUE(first->Compile(LayerNormKernel(1e-5f)).ok());
  EXPECT_FALSE((*compiled)->loaded_from_store);
  EXPECT_EQ(first->stats().llvm_compiles, 2);
  EXPECT_EQ(first->stats().store_misses, 2);

  auto second = BackendWith(&store);
  ASSERT_NE(second, nullptr);
  auto loaded = second->Compile(BiasResidualKernel());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(second->Compile(LayerNormKernel(1e-5f)).ok());
  EXPECT_TRUE((*loaded)->loaded_from_store);
  EXPECT_EQ(second->stats().llvm_compiles, 0);
  EXPECT_EQ(second->stats().store_hits, 2);
  EXPECT_EQ(second->stats().store_rejects, 0);
  EXPECT_EQ(RunBiasResidual(**loaded), ReferenceBiasResidual());
  EXPECT_EQ(RunBiasResidual(**compiled), ReferenceBiasResidual());
}

TEST(CpuBackendStoreTest, SameKernelTwiceInOneBackendLinksTwice) {
  InMemoryObjectStore store;
  auto backend = BackendWith(&store);
  ASSERT_NE(backend, nullptr);
  auto a = backend->Compile(BiasResidualKernel());
  auto b = backend->Compile(BiasResidualKernel());  // same symbols, own JITDylib
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << " " << b.status();
  EXPECT_TRUE((*b)->loaded_from_store);
  EXPECT_EQ(RunBiasResidual(**a), ReferenceBiasResidual());
  EXPECT_EQ(RunBiasResidual(**b), ReferenceBiasResidual());
}

// Each way a stored entry can be wrong: not used, counted with the reason,
// compiled instead, and replaced by a good record.
TEST(CpuBackendStoreTest, UntrustworthyRecordsAreRejectedAndRebuilt) {
  Kernel kernel = BiasResidualKernel();
  InMemoryObjectStore reference_store;
  auto reference = BackendWith(&reference_store);
  ASSERT_NE(reference, nullptr);
  ASSERT_TRUE(reference->Compile(kernel).ok());
  std::string material = reference->KeyMaterial(kernel);
  std::string key = ObjectKeyDigest(material);
  ObjectRecord good = DecodeObjectRecord(*reference_store.Get(key)).value();

  struct Case {
    std::string what, bytes, reason;
  };
  std::vector<Case> cases = {
      {"garbage", "not a record", "magic"},
      {"other key material", EncodeObjectRecord({material + " ", good.symbol, good.object}), "other key material"},
      {"not an object file", EncodeObjectRecord({material, good.symbol, "not an object file"}), "rejected the object"},
      {"missing symbol", EncodeObjectRecord({material, "no_such_symbol", good.object}), "no_such_symbol"},
  };
  for (const Case& c : cases) {
    InMemoryObjectStore store;
    ASSERT_TRUE(store.Put(key, c.bytes).ok());
    auto backend = BackendWith(&store);
    ASSERT_NE(backend, nullptr);
    auto compiled = backend->Compile(kernel);
    ASSERT_TRUE(compiled.ok()) << c.what << ": " << compiled.status();
    EXPECT_FALSE((*compiled)->loaded_from_store) << c.what;
    CpuBackendStats stats = backend->stats();
    EXPECT_EQ(stats.store_rejects, 1) << c.what;
    EXPECT_EQ(stats.llvm_compiles, 1) << c.what;
    EXPECT_THAT(stats.last_store_problem, HasSubstr(c.reason)) << c.what;
    EXPECT_THAT(stats.last_store_problem, HasSubstr("kernel 'bias_residual")) << c.what;
    EXPECT_EQ(RunBiasResidual(**compiled), ReferenceBiasResidual()) << c.what;
    absl::StatusOr<ObjectRecord> rebuilt = DecodeObjectRecord(store.Get(key).value_or(""));
    ASSERT_TRUE(rebuilt.ok()) << c.what << ": " << rebuilt.status();
    EXPECT_EQ(rebuilt->key_material, material) << c.what;
  }
}

class FailingStore : public ObjectStore {
 public:
  std::optional<std::string> Get(const std::string&) override { return std::nullopt; }
  absl::Status Put(const std::string&, absl::string_view) override {
    return absl::UnavailableError("disk full (test)");
  }
};

TEST(CpuBackendStoreTest, FailedPutIsCountedAndTheKernelStillWorks) {
  FailingStore store;
  auto backend = BackendWith(&store);
  ASSERT_NE(backend, nullptr);
  auto compiled = backend->Compile(BiasResidualKernel());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_EQ(backend->stats().store_put_errors, 1);
  EXPECT_THAT(backend->stats().last_store_problem, HasSubstr("disk full (test)"));
  EXPECT_EQ(RunBiasResidual(**compiled), ReferenceBiasResidual());
}

TEST(KernelCacheStoreTest, CountsKernelsLoadedFromTheStore) {
  InMemoryObjectStore store;
  auto first = BackendWith(&store);
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(first->Compile(SoftmaxKernel(0.5f)).ok());
  auto second = BackendWith(&store);
  ASSERT_NE(second, nullptr);
  KernelCache cache(second.get());
  ASSERT_TRUE(cache.GetOrCompile(SoftmaxKernel(0.5f)).ok());
  ASSERT_TRUE(cache.GetOrCompile(LayerNormKernel(1e-5f)).ok());
  ASSERT_TRUE(cache.GetOrCompile(SoftmaxKernel(0.5f)).ok());
  EXPECT_EQ(cache.compiles(), 2);
  EXPECT_EQ(cache.loaded_from_store(), 1);
  EXPECT_EQ(cache.hits(), 1);
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
