// runtime/import_to_compile.h: an ONNX file imported for a CPU compile
// reserves the pages its packed weights will take — about the bytes of the
// weights left in the file, embedding tables (read only by a Gather) left
// out — while it imports; the compile's copies take them and its end gives
// back the rest; an import that fails, or a compile that packs nothing,
// holds none; and the session computes what the interpreter does.
#include "runtime/import_to_compile.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/packed_weights.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/graph/onnx_test_model.h"
#include "tests/runtime/e2e_util.h"

namespace shapeshift::runtime {
namespace {

using ::shapeshift::codegen::cpu::PackedPagesClaimed;
using ::shapeshift::codegen::cpu::PackedWeights;
using ::shapeshift::codegen::cpu::ReleaseUnclaimedPackedPages;
using ::shapeshift::testing::CompiledMatchesInterpreter;
using ::shapeshift::testing::OnnxTestModel;

constexpr int64_t kMiB = int64_t{1} << 20;

class ImportToCompileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ReleaseUnclaimedPackedPages();  // whatever an earlier test left
    dir_ = std::filesystem::current_path() / absl::StrCat("import_to_compile_", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    ReleaseUnclaimedPackedPages();
    std::filesystem::remove_all(dir_);
  }

  // ids[n] → Gather(table[1024, 512]) → · w[512, 1024] → y[n, 1024]: two 2 MiB
  // weights left in the file, the table only gathered. With `w_columns`
  // other than 1024, w's dims do not match its bytes (an import error found
  // after the file parsed).
  std::string WriteModel(const std::string& name, int64_t w_columns = 1024) {
    OnnxTestModel m(17);
    m.Input("ids", onnx::TensorProto::INT64, {"n"});
    m.RawFloatInitializer("table", 1024, 512, 0.001f).RawFloatInitializer("w", 512, 1024, -0.5f);
    m.model().mutable_graph()->mutable_initializer(1)->set_dims(1, w_columns);
    m.Node("Gather", {"table", "ids"}, {"rows"});
    m.Node("MatMul", {"rows", "w"}, {"y"});
    m.Output("y", onnx::TensorProto::FLOAT, {"n", absl::StrCat(w_columns)});
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << m.Bytes();
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(ImportToCompileTest, TheWeightsPagesAreReservedWhileImportingAndTheCompileTakesThem) {
  const std::string path = WriteModel("model.onnx");
  ImportOptions import;
  import.dim_ranges["n"] = {1, 64};
  absl::StatusOr<ImportedModel> model = ImportOnnxFileToCompile(path, import, /*packs=*/true);
  ASSERT_TRUE(model.ok()) << model.status();
  // w's 2 MiB, its padding's 1% and a page, in whole 2 MiB pages; not the
  // table's (that would be 6 MiB).
  const auto [claimed, reserved] = PackedPagesClaimed();
  EXPECT_EQ(claimed, 0);
  EXPECT_EQ(reserved, 4 * kMiB);

  absl::StatusOr<ImportedModel> reference = ImportOnnxFile(path, import);
  ASSERT_TRUE(reference.ok()) << reference.status();
  SessionOptions options;
  options.policy = SpecializationPolicy::kPolymorphic;
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::Built(std::move(model->graph), std::move(model->env)), options);
  ASSERT_TRUE(session.ok()) << session.status();
  // The compile's end gave back what its copies did not take.
  EXPECT_EQ(PackedPagesClaimed(), std::make_pair(int64_t{0}, int64_t{0}));
  for (int64_t n : {1, 7, 64}) {
    SCOPED_TRACE(n);
    std::vector<int64_t> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = (i * 37) % 1024;
    const Tensor ids = Tensor::FromVector(DType::kI64, {n}, values);
    EXPECT_TRUE(CompiledMatchesInterpreter(**session, *reference->graph, {ids}, 1e-4, 1e-4));
  }
}

TEST_F(ImportToCompileTest, NoPackingOrAFailedImportHoldsNothing) {
  const std::string path = WriteModel("model.onnx");
  absl::StatusOr<ImportedModel> model = ImportOnnxFileToCompile(path, {}, /*packs=*/false);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(PackedPagesClaimed().second, 0);
  // The file parses (its weights are found) but the import fails: w's
  // dims do not match its bytes. The reservation made meanwhile goes back.
  const std::string bad = WriteModel("bad.onnx", /*w_columns=*/1000);
  absl::StatusOr<OnnxFile> parsed = ParseOnnxFile(bad);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->weights.size(), 2u);
  absl::StatusOr<ImportedModel> failed = ImportOnnxFileToCompile(bad, {}, /*packs=*/true);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(std::string(failed.status().message()).find("'w'"), std::string::npos) << failed.status();
  EXPECT_EQ(PackedPagesClaimed().second, 0);

  CompileOptions cuda;
  cuda.device = Device::kCuda;
  EXPECT_FALSE(CompilePacksWeights(cuda));
  CompileOptions no_packs;
  no_packs.pack_small_row_gemms = false;
  EXPECT_FALSE(CompilePacksWeights(no_packs));
  EXPECT_TRUE(CompilePacksWeights(CompileOptions{}));
}

}  // namespace
}  // namespace shapeshift::runtime
