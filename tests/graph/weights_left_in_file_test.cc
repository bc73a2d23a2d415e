// A model file's weights stay in the file (graph/onnx/weights_left_in_file.h):
// the rewritten message means the same model, the weights are read from the
// file they are in, and bytes the rewrite does not understand are left to
// the parser.
#include "graph/onnx/weights_left_in_file.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/constant_spill.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/graph/onnx_test_model.h"
#include "tests/support/temp_path.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using testing::OnnxTestModel;

constexpr size_t kMin = 64;  // bytes: w (512) and v (128) of RawWeightsModel are left in the file, b (32) is not

TEST(WeightsLeftInFileTest, LargeRawWeightsBecomeExternalDataNamingTheirBytesInTheFile) {
  OnnxTestModel m = testing::RawWeightsModel();
  const std::string file = m.Bytes();
  std::optional<ModelWithoutWeights> lean = LeaveWeightsInFile(file, "model.onnx", kMin);
  ASSERT_TRUE(lean.has_value());
  ASSERT_EQ(lean->weights.size(), 2u);
  EXPECT_EQ(lean->weights[0].index, 0);
  EXPECT_EQ(lean->weights[0].name, "w");
  EXPECT_EQ(lean->weights[1].index, 3);
  EXPECT_EQ(lean->weights[1].name, "v");
  for (const WeightInFile& w : lean->weights) {
    const onnx::TensorProto& original = m.model().graph().initializer(w.index);
    ASSERT_EQ(static_cast<size_t>(w.size), original.raw_data().size());
    EXPECT_EQ(file.substr(static_cast<size_t>(w.offset), static_cast<size_t>(w.size)), original.raw_data()) << w.name;
  }
  EXPECT_LT(lean->message.size(), file.size() - 16 * 8 * 4 - 8 * 4 * 4 + 200);
  // Put back, the weights make the model the file holds: nothing else moved.
  onnx::ModelProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(lean->message));
  for (const WeightInFile& w : lean->weights) {
    onnx::TensorProto* t = parsed.mutable_graph()->mutable_initializer(w.index);
    EXPECT_EQ(t->data_location(), onnx::TensorProto::EXTERNAL);
    ASSERT_EQ(t->external_data_size(), 3);
    EXPECT_EQ(t->external_data(0).value(), "model.onnx");
    EXPECT_EQ(t->external_data(1).value(), std::to_string(w.offset));
    EXPECT_EQ(t->external_data(2).value(), std::to_string(w.size));
    t->clear_external_data();
    t->clear_data_location();
    t->set_raw_data(file.substr(static_cast<size_t>(w.offset), static_cast<size_t>(w.size)));
  }
  EXPECT_EQ(parsed.SerializeAsString(), m.model().SerializeAsString());
}

TEST(WeightsLeftInFileTest, DeclinesWhatItDoesNotUnderstandOrNeedNotDo) {
  OnnxTestModel m = testing::RawWeightsModel();
  const std::string file = m.Bytes();
  // Nothing large enough.
  EXPECT_FALSE(LeaveWeightsInFile(file, "m.onnx", size_t{1} << 20).has_value());
  // Every truncation: a field runs past the end.
  for (size_t n = 0; n < file.size(); n += 7) {
    std::optional<ModelWithoutWeights> lean = LeaveWeightsInFile(file.substr(0, n), "m.onnx", kMin);
    if (lean.has_value()) {  // a cut between two top-level fields is a shorter message
      onnx::ModelProto whole;
      EXPECT_TRUE(whole.ParseFromString(file.substr(0, n))) << n;
    }
  }
  // A second `graph` field (they would merge).
  onnx::ModelProto graph_only;
  *graph_only.mutable_graph() = m.model().graph();
  EXPECT_FALSE(LeaveWeightsInFile(file + graph_only.SerializeAsString(), "m.onnx", kMin).has_value());
  // A group (wire type 3) at the top level.
  EXPECT_FALSE(LeaveWeightsInFile(std::string("\x0b") + file, "m.onnx", kMin).has_value());
  // A tensor that also says its data are elsewhere is copied as it is.
  OnnxTestModel odd = testing::RawWeightsModel();
  odd.model().mutable_graph()->mutable_initializer(0)->set_data_location(onnx::TensorProto::DEFAULT);
  std::optional<ModelWithoutWeights> lean = LeaveWeightsInFile(odd.Bytes(), "m.onnx", kMin);
  ASSERT_TRUE(lean.has_value());
  ASSERT_EQ(lean->weights.size(), 1u);
  EXPECT_EQ(lean->weights[0].name, "v");
}

class ModelFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(testing::ProcessTempPath("weights_left_in_file"));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // x[n, 512] · w[512, 1024] (2 MiB: at least kSpillMinBytes) + b.
  static OnnxTestModel LargeModel() {
    OnnxTestModel m(17);
    m.Input("x", onnx::TensorProto::FLOAT, {"n", "512"});
    m.RawFloatInitializer("w", 512, 1024, -3.0f).RawFloatInitializer("b", 1, 1024, 1.0f);
    m.Node("MatMul", {"x", "w"}, {"xw"});
    m.Node("Add", {"xw", "b"}, {"y"});
    m.Output("y", onnx::TensorProto::FLOAT, {"n", "1024"});
    return m;
  }

  std::string Write(const std::filesystem::path& path, const std::string& bytes) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
  }

  std::filesystem::path dir_;
};

TEST_F(ModelFileTest, ParseLeavesTheWeightInTheFileAndImportReadsItFromThere) {
  OnnxTestModel m = LargeModel();
  const std::string path = Write(dir_ / "model.onnx", m.Bytes());
  absl::StatusOr<OnnxFile> file = ParseOnnxFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(file->weights.size(), 1u);
  EXPECT_EQ(file->weights[0].name, "w");
  const onnx::TensorProto& w = file->model->graph().initializer(0);
  EXPECT_EQ(w.data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_TRUE(w.raw_data().empty());
  EXPECT_EQ(file->model->graph().initializer(1).raw_data().size(), 1024u * 4);  // the bias stays inline

  const std::string& expected = m.model().graph().initializer(0).raw_data();
  for (bool spilled : {false, true}) {
    std::unique_ptr<ConstantSpill> spill;
    ImportOptions options;
    if (spilled) {
      absl::StatusOr<std::unique_ptr<ConstantSpill>> opened = ConstantSpill::Open((dir_ / "spill").string());
      ASSERT_TRUE(opened.ok()) << opened.status();
      spill = *std::move(opened);
      options.spill = spill.get();
    }
    absl::StatusOr<ImportedModel> model = ImportOnnxFile(path, options);
    ASSERT_TRUE(model.ok()) << model.status();
    const Tensor* t = model->graph->FindValue("w")->constant();
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->byte_size(), expected.size());
    EXPECT_EQ(std::string(static_cast<const char*>(t->raw()), t->byte_size()), expected);
    EXPECT_EQ(IsSpilled(t->raw(), t->byte_size()), spilled);
    if (spilled) EXPECT_EQ(spill->bytes_written(), static_cast<int64_t>(expected.size()));
  }
}

// A Hugging Face cache keeps model files as symlinks into a blobs folder:
// the weights are read through the file the parser opened, not by resolving
// the external data's location (which would lead outside the model's folder).
TEST_F(ModelFileTest, ASymlinkedModelFileImports) {
  OnnxTestModel m = LargeModel();
  Write(dir_ / "blobs" / "0123abcd", m.Bytes());
  std::filesystem::create_directories(dir_ / "snapshots" / "main");
  std::filesystem::create_symlink("../../blobs/0123abcd", dir_ / "snapshots" / "main" / "model.onnx");
  absl::StatusOr<ImportedModel> model = ImportOnnxFile((dir_ / "snapshots" / "main" / "model.onnx").string());
  ASSERT_TRUE(model.ok()) << model.status();
  const Tensor* t = model->graph->FindValue("w")->constant();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(std::string(static_cast<const char*>(t->raw()), t->byte_size()),
            m.model().graph().initializer(0).raw_data());
}

// The checker still sees every tensor: a weight whose bytes do not match its
// shape is rejected naming it, as when the whole file was parsed.
TEST_F(ModelFileTest, AWeightOfTheWrongSizeIsStillRejected) {
  OnnxTestModel m = LargeModel();
  m.model().mutable_graph()->mutable_initializer(0)->set_dims(1, 1023);
  const std::string path = Write(dir_ / "model.onnx", m.Bytes());
  absl::StatusOr<OnnxFile> file = ParseOnnxFile(path);
  ASSERT_TRUE(file.ok());
  ASSERT_EQ(file->weights.size(), 1u);
  for (bool checker : {true, false}) {
    ImportOptions options;
    options.run_checker = checker;
    absl::StatusOr<ImportedModel> model = ImportOnnxFile(path, options);
    ASSERT_FALSE(model.ok());
    EXPECT_THAT(std::string(model.status().message()), HasSubstr("initializer 'w'"));
    EXPECT_THAT(std::string(model.status().message()), HasSubstr("bytes"));
  }
}

TEST_F(ModelFileTest, ATruncatedFileIsStillNotAModel) {
  const std::string bytes = LargeModel().Bytes();
  const std::string path = Write(dir_ / "model.onnx", bytes.substr(0, bytes.size() - 1000));
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(path);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("not a valid ONNX model"));
}

}  // namespace
}  // namespace shapeshift
