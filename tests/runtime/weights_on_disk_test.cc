// SessionOptions::weights_dir: the model's large constants live in an
// unlinked file (graph/constant_spill.h), the GEMMs serve every request from
// their packed copy, and the plain weights' pages are given back once packed
// — with the results of the same session holding its weights in memory, bit
// for bit, and of the interpreter. A directory that cannot take the file
// keeps the weights in memory and says why.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/onednn_matmul.h"
#include "codegen/cpu/skinny_matmul.h"
#include "examples/models/bert.h"
#include "graph/constant_spill.h"
#include "graph/onnx/exporter.h"
#include "gtest/gtest.h"
#include "tests/support/host_long_rows.h"
#include "runtime/session.h"
#include "tests/runtime/e2e_util.h"
#include "tests/support/mapped_pages.h"

namespace shapeshift::examples {
namespace {

using ::shapeshift::codegen::cpu::SkinnyMatmul;
using ::shapeshift::testing::CompiledMatchesInterpreter;

// Under the build tree: on a disk, where /tmp may be tmpfs.
std::string DiskDir(const std::string& name) {
  std::filesystem::path dir = std::filesystem::current_path() / absl::StrCat("weights_on_disk_", name, "_", getpid());
  std::filesystem::remove_all(dir);
  return dir.string();
}

std::unique_ptr<runtime::Session> Compile(const BertConfig& config, const std::string& weights_dir) {
  absl::StatusOr<ImportedModel> model = BuildBert(config);
  EXPECT_TRUE(model.ok()) << model.status();
  runtime::SessionOptions options;
  options.policy = runtime::SpecializationPolicy::kPolymorphic;
  options.weights_dir = weights_dir;
  options.compile.long_rows_on_panels = true;  // what weights_dir turns on, for the in-memory twin
  absl::StatusOr<std::unique_ptr<runtime::Session>> session = runtime::Session::Create(
      runtime::ModelSource::Built(std::move(model->graph), std::move(model->env)), options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? *std::move(session) : nullptr;
}

TEST(WeightsOnDiskTest, PackedCopiesServeEveryRequestAndThePlainPagesAreGivenBack) {
  // Long requests read the skinny core's panels (oneDNN's blocked GEMM on an
  // AVX-512 host, the skinny GEMM itself on an AVX2 one: host_long_rows.h),
  // so the plain pages go back.
  const bool given_back = shapeshift::testing::HostGivesPlainWeightsBack();
  BertConfig config;
  const std::string dir = DiskDir("bert");
  std::unique_ptr<runtime::Session> spilled = Compile(config, dir);
  std::unique_ptr<runtime::Session> in_memory = Compile(config, "");
  ASSERT_NE(spilled, nullptr);
  ASSERT_NE(in_memory, nullptr);

  const runtime::WeightsPlacement& w = spilled->weights();
  EXPECT_EQ(w.dir, dir);
  EXPECT_TRUE(w.note.empty()) << w.note;
  // The 1 MiB FFN matrices of every layer and the 8 MiB embedding table.
  EXPECT_GE(w.constants, 2 * config.layers + 1);
  EXPECT_GE(w.bytes, (2 * config.layers * config.hidden * config.intermediate + config.vocab * config.hidden) * 4);
  EXPECT_TRUE(in_memory->weights().dir.empty());
  EXPECT_EQ(in_memory->weights().constants, 0);

  const runtime::ProgramStats& stats = spilled->stats().program;
  // Every FFN weight's pages, but its last partial page, went back.
  if (given_back) {
    EXPECT_GE(stats.released_weight_bytes, 2 * config.layers * (config.hidden * config.intermediate * 4 - 4096));
  } else {
    EXPECT_EQ(stats.released_weight_bytes, 0);
  }
  EXPECT_EQ(in_memory->stats().program.released_weight_bytes, 0);
  // The embedding table's rows are read from the file (pread), not mapped.
  EXPECT_EQ(stats.file_gather_tables, 1);
  EXPECT_EQ(in_memory->stats().program.file_gather_tables, 0);
  ASSERT_NE(spilled->program(), nullptr);
  for (const runtime::ShortRequestGemm& g : spilled->program()->short_request_gemms()) {
    EXPECT_EQ(g.long_engine, shapeshift::testing::HostLongEngineOnPanelsRequest())
        << codegen::cpu::DescribeConfig(g.config);
  }

  absl::StatusOr<ImportedModel> reference = BuildBert(config);
  ASSERT_TRUE(reference.ok());
  uint64_t seed = 3;
  // Short (skinny), a tail only, chunks and a tail, many chunks.
  for (auto [batch, seq] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 7}, {1, 33}, {2, 70}, {1, 300}}) {
    const uint64_t request_seed = seed++;  // one read of seed per argument list
    std::vector<Tensor> inputs = MakeBertInputs(config, batch, seq, request_seed, /*padded=*/request_seed % 2 == 0);
    EXPECT_TRUE(CompiledMatchesInterpreter(*spilled, *reference->graph, inputs, 1e-3, 1e-4))
        << "batch " << batch << ", seq " << seq;
    absl::StatusOr<std::vector<Tensor>> a = spilled->Run(inputs);
    absl::StatusOr<std::vector<Tensor>> b = in_memory->Run(inputs);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_EQ(a->size(), b->size());
    for (size_t i = 0; i < a->size(); ++i) {
      ASSERT_EQ((*a)[i].byte_size(), (*b)[i].byte_size());
      EXPECT_EQ(std::memcmp((*a)[i].raw(), (*b)[i].raw(), (*a)[i].byte_size()), 0)
          << "output " << i << " at batch " << batch << ", seq " << seq;
    }
  }
  // The session's model reads the spilled bytes (the interpreter's view of
  // the weights is the file's), and the file is unlinked.
  bool any_spilled = false;
  for (const Value* c : spilled->graph().constants()) {
    any_spilled = any_spilled || IsSpilled(c->constant()->raw(), c->constant()->byte_size());
  }
  EXPECT_TRUE(any_spilled);
  // Five requests and the interpreter's reads later, the compiled program
  // has mapped no page of the embedding table: the interpreter read it
  // through the mapping, so it is given back first.
  int tables = 0;
  for (const Value* c : spilled->graph().constants()) {
    const Tensor& t = *c->constant();
    if (t.shape() != std::vector<int64_t>{config.vocab, config.hidden}) continue;
    ++tables;
    ReleaseResidentPages(t.raw(), t.byte_size());
    ASSERT_EQ(::shapeshift::testing::MappedPages(t.raw(), t.byte_size()), 0);
    std::vector<Tensor> inputs = MakeBertInputs(config, 2, 40, 99);
    ASSERT_TRUE(spilled->Run(inputs).ok());
    EXPECT_EQ(::shapeshift::testing::MappedPages(t.raw(), t.byte_size()), 0) << "the embedding table's pages after a request";
  }
  EXPECT_EQ(tables, 1);
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  spilled.reset();
  std::filesystem::remove_all(dir);
}

TEST(WeightsOnDiskTest, AnOnnxSourceIsImportedStraightIntoTheFile) {
  BertConfig config;
  absl::StatusOr<ImportedModel> built = BuildBert(config);
  ASSERT_TRUE(built.ok()) << built.status();
  absl::StatusOr<std::string> bytes = ExportOnnxBytes(*built->graph, *built->env);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const std::string dir = DiskDir("onnx_source");
  runtime::SessionOptions options;
  options.policy = runtime::SpecializationPolicy::kPolymorphic;
  options.weights_dir = dir;
  absl::StatusOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::Create(runtime::ModelSource::OnnxBytes(*bytes, "bert.onnx"), options);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ((*session)->weights().dir, dir);
  EXPECT_GE((*session)->weights().constants, 2 * config.layers + 1);
  EXPECT_EQ((*session)->stats().program.released_weight_bytes > 0, shapeshift::testing::HostGivesPlainWeightsBack());
  std::vector<Tensor> inputs = MakeBertInputs(config, 2, 45, 9, /*padded=*/true);
  EXPECT_TRUE(CompiledMatchesInterpreter(**session, *built->graph, inputs, 1e-3, 1e-4));
  session->reset();
  std::filesystem::remove_all(dir);
}

TEST(WeightsOnDiskTest, ADirectoryThatCannotTakeTheFileKeepsTheWeightsInMemoryAndSaysWhy) {
  const std::string file = DiskDir("not_a_dir");
  { std::FILE* f = std::fopen(file.c_str(), "w"); ASSERT_NE(f, nullptr); std::fclose(f); }
  BertConfig config;
  config.layers = 1;
  std::unique_ptr<runtime::Session> session = Compile(config, file);
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(session->weights().dir.empty());
  EXPECT_NE(session->weights().note.find("kept in memory"), std::string::npos) << session->weights().note;
  EXPECT_NE(session->weights().note.find(file), std::string::npos) << session->weights().note;
  EXPECT_EQ(session->stats().program.released_weight_bytes, 0);
  std::vector<Tensor> inputs = MakeBertInputs(config, 1, 9, 5, /*padded=*/false);
  absl::StatusOr<ImportedModel> reference = BuildBert(config);
  ASSERT_TRUE(reference.ok());
  EXPECT_TRUE(CompiledMatchesInterpreter(*session, *reference->graph, inputs, 1e-3, 1e-4));
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace shapeshift::examples
