// The packed short-request GEMM path inside a compiled model — shapeshift's
// skinny GEMM (codegen/cpu/skinny_matmul.h) where the CPU has AVX2 or
// AVX-512, oneDNN's small-rows primitives (codegen/cpu/small_rows_matmul.h)
// elsewhere: requests whose rows (batch x seq) fall inside and just outside
// its range match the interpreter, every constant-weight GEMM has the path,
// and CompileOptions::pack_small_row_gemms = false compiles without it.
// With CompileOptions::long_rows_on_panels, longer requests read the same
// packed copy where oneDNN has a blocked kernel for it
// (codegen/cpu/panel_rows_matmul.h), with the plain path's results.
#include <utility>
#include <vector>

#include "codegen/cpu/skinny_matmul.h"
#include "codegen/cpu/small_rows_matmul.h"
#include "examples/models/bert.h"
#include "gtest/gtest.h"
#include "tests/support/host_long_rows.h"
#include "runtime/session.h"
#include "tests/runtime/e2e_util.h"

namespace shapeshift::examples {
namespace {

using ::shapeshift::codegen::cpu::SkinnyMatmul;
using ::shapeshift::codegen::cpu::SkinnyOptions;
using ::shapeshift::codegen::cpu::SmallRowsMatmul;
using ::shapeshift::testing::CompiledMatchesInterpreter;

std::unique_ptr<runtime::Session> CompileBert(const BertConfig& config, bool pack, bool panels = false) {
  absl::StatusOr<ImportedModel> model = BuildBert(config);
  EXPECT_TRUE(model.ok()) << model.status();
  runtime::CompileOptions options;
  options.pack_small_row_gemms = pack;
  options.long_rows_on_panels = panels;
  absl::StatusOr<std::unique_ptr<runtime::Session>> session = runtime::Session::Create(
      runtime::ModelSource::Built(std::move(model->graph), std::move(model->env)), options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? *std::move(session) : nullptr;
}

TEST(SmallRowsGemmTest, RowCountsAroundTheRangeMatchTheInterpreter) {
  BertConfig config;
  std::unique_ptr<runtime::Session> session = CompileBert(config, /*pack=*/true);
  ASSERT_NE(session, nullptr);
  absl::StatusOr<ImportedModel> reference = BuildBert(config);
  ASSERT_TRUE(reference.ok());
  const bool skinny = SkinnyMatmul::HostIsa().has_value();
  const int64_t lo = skinny ? 1 : SmallRowsMatmul::kMinRows;
  const int64_t hi = skinny ? SkinnyOptions().max_rows : SmallRowsMatmul::kMaxRows;
  // (batch, seq): rows lo-1 (none for the skinny path), lo, a middle value,
  // hi, hi+1, and hi reached by batch.
  std::vector<std::pair<int64_t, int64_t>> shapes = {{1, lo}, {1, 17}, {1, hi}, {1, hi + 1}, {4, hi / 4}, {3, 11}};
  if (lo > 1) shapes.push_back({1, lo - 1});
  uint64_t seed = 7;
  for (auto [batch, seq] : shapes) {
    const uint64_t request_seed = seed++;  // one read of seed per argument list
    std::vector<Tensor> inputs = MakeBertInputs(config, batch, seq, request_seed, /*padded=*/request_seed % 2 == 0);
    EXPECT_TRUE(CompiledMatchesInterpreter(*session, *reference->graph, inputs, 1e-3, 1e-4))
        << "batch " << batch << ", seq " << seq;
  }
  EXPECT_EQ(session->stats().compiles, 1);
  const runtime::ProgramStats& program = session->stats().program;
  EXPECT_GT(program.small_row_gemms, 0);
  EXPECT_GT(program.packed_weight_bytes, 0);
  EXPECT_LE(program.small_row_gemms, program.gemm_calls);  // attention GEMMs (no constant B) keep one path
  EXPECT_EQ(program.skinny_gemms, skinny ? program.small_row_gemms : 0);
}

TEST(SmallRowsGemmTest, TurnedOffThereIsNoPackedCopyAndTheSameResult) {
  BertConfig config;
  std::unique_ptr<runtime::Session> packed = CompileBert(config, /*pack=*/true);
  std::unique_ptr<runtime::Session> plain = CompileBert(config, /*pack=*/false);
  ASSERT_NE(packed, nullptr);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->stats().program.small_row_gemms, 0);
  EXPECT_EQ(plain->stats().program.packed_weight_bytes, 0);
  EXPECT_EQ(plain->stats().program.skinny_gemms, 0);
  std::vector<Tensor> inputs = MakeBertInputs(config, 2, 9, 3, /*padded=*/true);
  absl::StatusOr<std::vector<Tensor>> a = packed->Run(inputs);
  absl::StatusOr<std::vector<Tensor>> b = plain->Run(inputs);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) EXPECT_LE(shapeshift::testing::MaxAbsDifference((*a)[i], (*b)[i]), 1e-4) << "output " << i;
}

TEST(SmallRowsGemmTest, LongRequestsReadThePackedCopyAndMatchThePlainPath) {
  BertConfig config;
  std::unique_ptr<runtime::Session> panels = CompileBert(config, /*pack=*/true, /*panels=*/true);
  std::unique_ptr<runtime::Session> plain = CompileBert(config, /*pack=*/true);
  ASSERT_NE(panels, nullptr);
  ASSERT_NE(plain, nullptr);
  // The AVX-512 core's panels are oneDNN's BA16a32b, which its blocked GEMM
  // reads; an AVX2 host has no such kernel and runs the long rows on the
  // skinny GEMM over its panels (tests/support/host_long_rows.h). Either way
  // both sessions must agree with the interpreter and each other.
  const std::optional<SkinnyMatmul::Isa> isa = SkinnyMatmul::HostIsa();
  ASSERT_TRUE(isa.has_value()) << "no skinny GEMM core on this CPU";
  ASSERT_NE(panels->program(), nullptr);
  ASSERT_NE(plain->program(), nullptr);
  ASSERT_FALSE(panels->program()->short_request_gemms().empty());
  for (const runtime::ShortRequestGemm& g : panels->program()->short_request_gemms()) {
    EXPECT_EQ(g.engine, std::string("skinny-") + codegen::cpu::IsaName(*isa)) << codegen::cpu::DescribeConfig(g.config);
    EXPECT_EQ(g.long_engine, shapeshift::testing::HostLongEngineOnPanelsRequest())
        << codegen::cpu::DescribeConfig(g.config);
  }
  for (const runtime::ShortRequestGemm& g : plain->program()->short_request_gemms()) {
    EXPECT_EQ(g.long_engine, "onednn") << codegen::cpu::DescribeConfig(g.config);
  }
  absl::StatusOr<ImportedModel> reference = BuildBert(config);
  ASSERT_TRUE(reference.ok());
  // rows past the skinny GEMM's 32: a tail only, a chunk and a tail, chunks.
  uint64_t seed = 11;
  for (auto [batch, seq] : std::vector<std::pair<int64_t, int64_t>>{{1, 33}, {1, 70}, {2, 64}, {3, 61}}) {
    const uint64_t request_seed = seed++;  // one read of seed per argument list
    std::vector<Tensor> inputs = MakeBertInputs(config, batch, seq, request_seed, /*padded=*/request_seed % 2 == 0);
    EXPECT_TRUE(CompiledMatchesInterpreter(*panels, *reference->graph, inputs, 1e-3, 1e-4))
        << "batch " << batch << ", seq " << seq;
    absl::StatusOr<std::vector<Tensor>> a = panels->Run(inputs);
    absl::StatusOr<std::vector<Tensor>> b = plain->Run(inputs);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    for (size_t i = 0; i < a->size(); ++i) {
      EXPECT_LE(shapeshift::testing::MaxAbsDifference((*a)[i], (*b)[i]), 1e-4) << "output " << i;
    }
  }
}

}  // namespace
}  // namespace shapeshift::examples
