// PanelRowsMatmul: long requests of a constant-weight GEMM over the skinny
// GEMM's panels (oneDNN's blocked static-M GEMM in chunks, the skinny GEMM
// for the tail; or, where oneDNN has no blocked kernel for the layout, the
// skinny GEMM for every row) must compute the OnednnMatmul contract
// (tests/codegen/matmul_reference.h) at every decomposition of m into chunks
// and tail, with every epilogue, with k and n off the layout's blocks.
#include "codegen/cpu/panel_rows_matmul.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/codegen/matmul_reference.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen::cpu {
namespace {

using ::shapeshift::codegen::testing::Close;
using ::shapeshift::codegen::testing::MatmulReference;
using ::shapeshift::codegen::testing::RandomFloats;
using Isa = SkinnyMatmul::Isa;

struct Made {
  std::unique_ptr<SkinnyMatmul> skinny;
  std::unique_ptr<PanelRowsMatmul> panels;
};

// The host's widest core: AVX-512, whose layout (BA16a32b) oneDNN's
// brg:avx512_core reads in chunks, or AVX2, whose layout (BA16a16b) oneDNN
// 2.6 reads only with its reference kernel, so every row runs on the skinny
// GEMM. TheAvx2CoresPanelsRunOnABlockedKernelOrTheSkinnyGemm checks the
// AVX2 core on every host.
Isa HostIsaOrDie() {
  std::optional<Isa> isa = SkinnyMatmul::HostIsa();
  EXPECT_TRUE(isa.has_value()) << "no skinny GEMM core on this CPU";
  return isa.value_or(Isa::kAvx2);
}

// What runs the rows on `isa`'s panels.
void ExpectEngineFor(const PanelRowsMatmul& panels, Isa isa) {
  if (isa == Isa::kAvx512) {
    EXPECT_EQ(panels.engine(), PanelRowsMatmul::kOnednnPanelsEngine);
    EXPECT_TRUE(absl::StartsWith(panels.implementation(), "brg")) << panels.implementation();
  } else if (panels.engine() != PanelRowsMatmul::kOnednnPanelsEngine) {  // a later oneDNN may have the kernel
    EXPECT_EQ(panels.engine(), "skinny-avx2");
    EXPECT_EQ(panels.implementation(), "skinny-avx2");
  }
}

Made MakeOrDie(const MatmulConfig& cfg, Isa isa = HostIsaOrDie()) {
  Made made;
  absl::StatusOr<std::unique_ptr<SkinnyMatmul>> skinny = SkinnyMatmul::Create(cfg, isa);
  EXPECT_TRUE(skinny.ok()) << skinny.status();
  if (!skinny.ok()) return made;
  made.skinny = *std::move(skinny);
  absl::StatusOr<std::unique_ptr<PanelRowsMatmul>> panels = PanelRowsMatmul::Create(*made.skinny);
  EXPECT_TRUE(panels.ok()) << panels.status();
  if (panels.ok()) made.panels = *std::move(panels);
  return made;
}

void CheckRows(const Made& made, int64_t m, uint32_t seed, bool residual_in_place = false) {
  const MatmulConfig& cfg = made.skinny->config();
  MatmulShape s{1, m, cfg.k, cfg.n};
  SCOPED_TRACE(DescribeConfig(cfg) + " m=" + std::to_string(m) + (residual_in_place ? " residual in place" : ""));
  std::vector<float> a = RandomFloats(m * s.k, seed), b = RandomFloats(s.k * s.n, seed + 1);
  std::vector<float> bias = RandomFloats(s.n, seed + 2), residual = RandomFloats(m * s.n, seed + 3);
  std::vector<double> want = MatmulReference(cfg, s, a, b, bias, residual);
  absl::StatusOr<PackedWeights> packed = made.skinny->PackB(b.data());
  ASSERT_TRUE(packed.ok()) << packed.status();
  std::vector<float> c = residual_in_place ? residual : std::vector<float>(m * s.n, NAN);
  MatmulOperands ops{a.data(), packed->data(), cfg.bias ? bias.data() : nullptr,
                     cfg.residual ? (residual_in_place ? c.data() : residual.data()) : nullptr, c.data()};
  absl::Status run = made.panels->Execute(s, ops);
  ASSERT_TRUE(run.ok()) << run;
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(Close(c[i], want[i], 1e-5, 1e-5 * std::sqrt(double(s.k))))
        << "row " << i / s.n << " col " << i % s.n << ": " << c[i] << " vs " << want[i];
  }
}

MatmulConfig WeightGemm(int64_t k, int64_t n) {
  MatmulConfig cfg;
  cfg.k = k;
  cfg.n = n;
  return cfg;
}

TEST(PanelRowsMatmulTest, EveryChunkAndTailDecompositionMatchesTheReference) {
  // k = 100 and n = 80: neither a multiple of the layout's 16-row and
  // 32-column blocks, so the padding is read (and must be zero).
  MatmulConfig cfg = WeightGemm(100, 80);
  cfg.bias = true;
  cfg.activation = MatmulActivation::kGeluErf;
  Made made = MakeOrDie(cfg);
  ASSERT_NE(made.panels, nullptr);
  ExpectEngineFor(*made.panels, made.skinny->isa());
  // Tail only, one small chunk, small chunks and a tail, one large chunk,
  // large and small chunks and a tail.
  for (int64_t m : {1, 31, 32, 33, 64, 127, 128, 129, 160, 161, 300}) {
    CheckRows(made, m, static_cast<uint32_t>(10 + m));
  }
}

TEST(PanelRowsMatmulTest, EveryEpilogueMatchesTheReference) {
  struct Case {
    float scale;
    bool bias;
    MatmulActivation activation;
    bool residual;
    bool transpose_b;
    bool in_place;
  };
  for (const Case& c : std::vector<Case>{{1.0f, false, MatmulActivation::kNone, false, false, false},
                                         {0.125f, true, MatmulActivation::kNone, false, true, false},
                                         {1.0f, true, MatmulActivation::kGeluTanh, false, false, false},
                                         {1.0f, true, MatmulActivation::kNone, true, false, false},
                                         {1.0f, true, MatmulActivation::kNone, true, false, true},
                                         {0.5f, true, MatmulActivation::kGeluErf, true, true, true}}) {
    MatmulConfig cfg = WeightGemm(64, 96);
    cfg.scale = c.scale, cfg.bias = c.bias, cfg.activation = c.activation, cfg.residual = c.residual;
    cfg.transpose_b = c.transpose_b;
    Made made = MakeOrDie(cfg);
    ASSERT_NE(made.panels, nullptr);
    for (int64_t m : {45, 200}) CheckRows(made, m, static_cast<uint32_t>(m), c.in_place);
  }
}

TEST(PanelRowsMatmulTest, TheChunksReadTheSkinnyPanelsAsOneDnnLaysThemOut) {
  // The layout contract: the skinny GEMM's panels equal oneDNN's reorder of
  // the plain B into BA16a32b (the AVX-512 core) or BA16a16b (AVX2), padding
  // included, so the same copy serves both.
  MatmulConfig cfg = WeightGemm(40, 50);
  Made made = MakeOrDie(cfg);
  ASSERT_NE(made.skinny, nullptr);
  MatmulConfig blocked = cfg;
  blocked.m = 32;
  blocked.pack_b = true;
  blocked.b_panel_width = made.skinny->panel_width();
  absl::StatusOr<std::unique_ptr<OnednnMatmul>> onednn = OnednnMatmul::Create(blocked);
  ASSERT_TRUE(onednn.ok()) << onednn.status();
  std::vector<float> b = RandomFloats(cfg.k * cfg.n, 5);
  absl::StatusOr<PackedWeights> ours = made.skinny->PackB(b.data());
  absl::StatusOr<PackedWeights> theirs = (*onednn)->PackB(b.data());
  ASSERT_TRUE(ours.ok()) << ours.status();
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  ASSERT_EQ(ours->bytes(), theirs->bytes());
  const int64_t floats = ours->bytes() / static_cast<int64_t>(sizeof(float));
  for (int64_t i = 0; i < floats; ++i) ASSERT_EQ(ours->data()[i], theirs->data()[i]) << "at " << i;
}

TEST(PanelRowsMatmulTest, TheAvx2CoresPanelsRunOnABlockedKernelOrTheSkinnyGemm) {
  // The AVX2 core's 16-column panels: oneDNN's blocked GEMM may or may not
  // read them on this CPU (2.6 does not); either it does or every row runs
  // on the skinny GEMM, never a reference-kernel path, and either way the
  // contract holds.
  ASSERT_TRUE(SkinnyMatmul::Supported(Isa::kAvx2));
  Made made = MakeOrDie(WeightGemm(48, 40), Isa::kAvx2);
  ASSERT_NE(made.panels, nullptr);
  ExpectEngineFor(*made.panels, Isa::kAvx2);
  EXPECT_FALSE(absl::StartsWith(made.panels->implementation(), "ref")) << made.panels->implementation();
  for (int64_t m : {1, 33, 130}) CheckRows(made, m, static_cast<uint32_t>(m));
}

TEST(PanelRowsMatmulTest, AShapeOtherThanTheConfigurationsIsAnError) {
  Made made = MakeOrDie(WeightGemm(32, 32));
  ASSERT_NE(made.panels, nullptr);
  std::vector<float> a(64 * 32), b(32 * 32), c(64 * 32);
  MatmulOperands ops{a.data(), b.data(), nullptr, nullptr, c.data()};
  EXPECT_EQ(made.panels->Execute(MatmulShape{1, 64, 16, 32}, ops).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(made.panels->Execute(MatmulShape{1, 0, 32, 32}, ops).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shapeshift::codegen::cpu
