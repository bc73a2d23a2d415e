// LoadAt and StoreAt: loads and stores at indices computed from data (the
// gathers and scatters of codegen/lower/lower_indexing.cc), at the host's
// vector width (masked and scalar remainders), 4 lanes and scalar code, at
// every remainder length; and Verify's rules for them.
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/cpu_backend.h"
#include "codegen/cpu/parallel_run.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/kernel_ir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codegen/backend_variants.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::shapeshift::codegen::testing::RandomFloats;
using ::testing::HasSubstr;

const std::vector<int64_t> kLengths = {0, 1, 2, 7, 15, 16, 17, 31, 33, 97, 511, 512, 513};

// y[p, j] = table[ids[p, j], j % 3] and back[ids2[p], j] = y-like rows:
// a gather with an i32 index (cast) and a bool table, a scatter of rows.
Kernel GatherKernel() {
  Kernel k;
  k.name = "gather_at";
  BufferRef table = k.AddInput("table");
  BufferRef ids = k.AddInput("ids", ScalarType::kI32);
  BufferRef flags = k.AddInput("flags", ScalarType::kBool);
  BufferRef y = k.AddOutput("y");
  BufferRef f = k.AddOutput("f", ScalarType::kBool);
  SymExpr rows = k.AddDim("rows");
  SymExpr n = k.AddDim("n");
  SymExpr p = k.ParallelVar(), j = SymExpr::Symbol("j");
  k.parallel_extent = rows;
  Value id = Cast(ScalarType::kI64, Load(ids, p * n + j));
  Value at = id * I64(3) + IndexValue(Mod(j, 3));
  k.body = {Loop("j", 0, n, {Store(y, p * n + j, LoadAt(table, at)), Store(f, p * n + j, LoadAt(flags, id))})};
  return k;
}

// out[perm[u] * n + j] = x[u * n + j]: rows written to data-chosen places.
Kernel ScatterKernel() {
  Kernel k;
  k.name = "scatter_at";
  BufferRef x = k.AddInput("x");
  BufferRef perm = k.AddInput("perm", ScalarType::kI64);
  BufferRef out = k.AddOutput("out");
  SymExpr rows = k.AddDim("rows");
  SymExpr n = k.AddDim("n");
  SymExpr u = SymExpr::Symbol("u"), j = SymExpr::Symbol("j");
  k.parallel_extent = 1;
  Value at = Load(perm, u) * IndexValue(n) + IndexValue(j);
  k.body = {Loop("u", 0, rows, {Loop("j", 0, n, {StoreAt(out, at, Load(x, u * n + j))})})};
  return k;
}

class DataIndexedAccessTest : public ::testing::TestWithParam<CpuBackendOptions> {};

TEST_P(DataIndexedAccessTest, GathersReadTheIndexedElementsAtEveryLength) {
  absl::StatusOr<std::unique_ptr<CpuBackend>> backend = CpuBackend::Create(GetParam());
  ASSERT_TRUE(backend.ok()) << backend.status();
  absl::StatusOr<std::shared_ptr<const CompiledKernel>> kernel = (*backend)->Compile(GatherKernel());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const int64_t table_rows = 37;
  std::vector<float> table = RandomFloats(table_rows * 3, 5);
  std::vector<uint8_t> flags(table_rows);
  for (int64_t i = 0; i < table_rows; ++i) flags[i] = i % 3 == 0;
  for (int64_t n : kLengths) {
    const int64_t rows = 3;
    std::vector<int32_t> ids(rows * n);
    for (int64_t i = 0; i < rows * n; ++i) ids[i] = static_cast<int32_t>((i * 7919 + 3) % table_rows);
    std::vector<float> y(rows * n, -1.0f);
    std::vector<uint8_t> f(rows * n, 9);
    void* buffers[] = {table.data(), ids.data(), flags.data(), y.data(), f.data()};
    int64_t dims[] = {rows, n};
    RunParallel(**kernel, buffers, dims);
    for (int64_t i = 0; i < rows * n; ++i) {
      const int64_t j = i % n;
      ASSERT_EQ(y[i], table[ids[i] * 3 + j % 3]) << "n=" << n << " i=" << i;
      ASSERT_EQ(f[i], flags[ids[i]]) << "n=" << n << " i=" << i;
    }
  }
}

TEST_P(DataIndexedAccessTest, ScattersWriteRowsWhereTheDataSays) {
  absl::StatusOr<std::unique_ptr<CpuBackend>> backend = CpuBackend::Create(GetParam());
  ASSERT_TRUE(backend.ok()) << backend.status();
  absl::StatusOr<std::shared_ptr<const CompiledKernel>> kernel = (*backend)->Compile(ScatterKernel());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  for (int64_t n : kLengths) {
    const int64_t rows = 5;
    std::vector<float> x = RandomFloats(rows * n, 9);
    std::vector<int64_t> perm = {3, 0, 4, 1, 2};
    std::vector<float> out(rows * n, -7.0f);
    void* buffers[] = {x.data(), perm.data(), out.data()};
    int64_t dims[] = {rows, n};
    RunParallel(**kernel, buffers, dims);
    for (int64_t u = 0; u < rows; ++u) {
      for (int64_t j = 0; j < n; ++j) ASSERT_EQ(out[perm[u] * n + j], x[u * n + j]) << "n=" << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Widths, DataIndexedAccessTest, BackendVariants(), BackendVariantName);

TEST(DataIndexedAccessVerifyTest, PrintAndCudaShowTheDataIndex) {
  EXPECT_TRUE(Verify(GatherKernel()).ok());
  EXPECT_TRUE(Verify(ScatterKernel()).ok());
  EXPECT_THAT(Print(GatherKernel()), HasSubstr("table[at "));
  EXPECT_THAT(Print(ScatterKernel()), HasSubstr("out[at "));
  absl::StatusOr<std::string> cuda = cuda::EmitCudaSource(ScatterKernel(), "scatter_at");
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_THAT(*cuda, HasSubstr("buf2[")) << *cuda;
}

TEST(DataIndexedAccessVerifyTest, VerifyRejectsMisusedDataIndices) {
  Kernel k = GatherKernel();
  BufferRef y{3, ScalarType::kF32};
  SymExpr p = k.ParallelVar();
  // Reading an output through a data index could read what another iteration writes.
  k.body = {Store(y, p, LoadAt(y, I64(0)))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("reads an input buffer"));
  k.body = {Store(y, p, LoadAt(BufferRef{0, ScalarType::kF32}, F32(1)))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("data-dependent index is i64"));
  k.body = {StoreAt(BufferRef{0, ScalarType::kF32}, I64(0), F32(1))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("'table' is an input"));
  k.body = {StoreAt(y, Cast(ScalarType::kI32, I64(0)), F32(1))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("data-dependent store index is i64"));
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
