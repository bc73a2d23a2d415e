// Hostile ONNX bytes at the importer's door: each must come back as an error
// that names the problem — never a crash, a hang or an allocation sized by
// the attacker. Where the ONNX checker would catch a problem first, the
// importer is also run with the checker off, since nothing else stands
// between a caller that disables it and the bytes.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::OnnxTestModel;

constexpr int64_t kTwoTo40 = int64_t{1} << 40;

ImportOptions NoChecker() {
  ImportOptions options;
  options.run_checker = false;
  options.base_dir = "/nonexistent/shapeshift-hostile";
  return options;
}

// The importer's error for `bytes`, under both checker settings; the test
// fails if either accepts the model. Returns the checker-off message (the
// importer's own), checking the checker-on one contains `checker_on_part`.
std::string ImportErrors(const std::string& bytes, const std::string& checker_on_part = "") {
  absl::StatusOr<ImportedModel> checked = ImportOnnxBytes(bytes, {}, "hostile.onnx");
  EXPECT_FALSE(checked.ok()) << "accepted with the checker on";
  if (!checked.ok()) {
    EXPECT_THAT(std::string(checked.status().message()), HasSubstr(checker_on_part));
  }
  absl::StatusOr<ImportedModel> unchecked = ImportOnnxBytes(bytes, NoChecker(), "hostile.onnx");
  EXPECT_FALSE(unchecked.ok()) << "accepted with the checker off";
  return unchecked.ok() ? "" : std::string(unchecked.status().message());
}

OnnxTestModel ReluModel(const std::vector<std::string>& dims) {
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, dims);
  m.Node("Relu", {"x"}, {"y"}, "relu");
  m.Output("y", onnx::TensorProto::FLOAT, dims);
  return m;
}

TEST(OnnxHostileTest, EmptyBytes) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes("", {}, "empty.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("empty.onnx"));
  EXPECT_FALSE(ImportOnnxBytes("", NoChecker(), "empty.onnx").ok());
}

TEST(OnnxHostileTest, RandomGarbage) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes(1 + rng() % 512, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    for (const ImportOptions& options : {ImportOptions{}, NoChecker()}) {
      absl::StatusOr<ImportedModel> model = ImportOnnxBytes(bytes, options, "garbage.onnx");
      ASSERT_FALSE(model.ok()) << "trial " << trial;
      EXPECT_THAT(std::string(model.status().message()), HasSubstr("garbage.onnx"));
    }
  }
}

TEST(OnnxHostileTest, EveryTruncationIsRejectedOrImportsWhole) {
  const std::string bytes = ReluModel({"batch", "8"}).Bytes();
  ASSERT_TRUE(ImportOnnxBytes(bytes).ok());
  int rejected = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    absl::StatusOr<ImportedModel> model = ImportOnnxBytes(bytes.substr(0, len), {}, "cut.onnx");
    if (model.ok()) continue;  // a prefix can be a complete, smaller proto
    ++rejected;
    EXPECT_THAT(std::string(model.status().message()), HasSubstr("cut.onnx")) << "length " << len;
  }
  EXPECT_GT(rejected, static_cast<int>(bytes.size()) / 2);
}

TEST(OnnxHostileTest, NegativeInputDim) {
  OnnxTestModel m = ReluModel({"4"});
  m.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()
      ->mutable_shape()->mutable_dim(0)->set_dim_value(-3);
  std::string error = ImportErrors(m.Bytes());
  EXPECT_THAT(error, HasSubstr("-3"));
  EXPECT_THAT(error, HasSubstr("'x'"));
}

TEST(OnnxHostileTest, InitializerWithNegativeDim) {
  OnnxTestModel m = ReluModel({"4"});
  m.FloatInitializer("w", {-2}, {});
  m.Node("Add", {"y", "w"}, {"z"}, "add");
  std::string error = ImportErrors(m.Bytes());
  EXPECT_THAT(error, HasSubstr("'w'"));
}

TEST(OnnxHostileTest, EnormousInitializerWithoutDataIsRefusedUnallocated) {
  // Each of these would need terabytes (or wraps int64) if taken at face value.
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{
           {kTwoTo40}, {int64_t{1} << 20, int64_t{1} << 20, int64_t{1} << 20},
           {int64_t{1} << 32, int64_t{1} << 32}, {INT64_MAX, 2}}) {
    OnnxTestModel m = ReluModel({"4"});
    m.FloatInitializer("w", dims, {1.0f});
    m.Node("Add", {"y", "w"}, {"z"}, "add");
    std::string error = ImportErrors(m.Bytes());
    EXPECT_THAT(error, HasSubstr("'w'")) << "dims[0] = " << dims[0];
  }
}

TEST(OnnxHostileTest, RawDataShorterThanDims) {
  OnnxTestModel m = ReluModel({"4"});
  onnx::TensorProto* t = m.model().mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_raw_data(std::string(8, '\0'));  // 2 floats for 4 elements
  m.Node("Add", {"y", "w"}, {"z"}, "add");
  std::string error = ImportErrors(m.Bytes());
  EXPECT_THAT(error, HasSubstr("'w'"));
}

TEST(OnnxHostileTest, NodeCycle) {
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"4"});
  m.Node("Add", {"x", "b"}, {"a"}, "first");
  m.Node("Relu", {"a"}, {"b"}, "second");
  m.Output("b", onnx::TensorProto::FLOAT, {"4"});
  std::string error = ImportErrors(m.Bytes());
  EXPECT_THAT(error, AnyOf(HasSubstr("'first'"), HasSubstr("'b'")));
}

TEST(OnnxHostileTest, UndefinedInputIsNamed) {
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"4"});
  m.Node("Add", {"x", "missing_weight"}, {"y"}, "add");
  m.Output("y", onnx::TensorProto::FLOAT, {"4"});
  std::string error = ImportErrors(m.Bytes());
  EXPECT_THAT(error, HasSubstr("missing_weight"));
}

TEST(OnnxHostileTest, MismatchedDtypesAreNamed) {
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"4"});
  m.Input("i", onnx::TensorProto::INT64, {"4"});
  m.Node("Add", {"x", "i"}, {"y"}, "mixed_add");
  m.Output("y", onnx::TensorProto::FLOAT, {"4"});
  std::string error = ImportErrors(m.Bytes());
  EXPECT_THAT(error, HasSubstr("mixed_add"));
}

TEST(OnnxHostileTest, UnsupportedElementTypeIsNamed) {
  for (int elem_type : {int{onnx::TensorProto::STRING}, int{onnx::TensorProto::COMPLEX64}, 0, 999}) {
    OnnxTestModel m(17);
    m.Input("x", elem_type, {"4"});
    m.Node("Identity", {"x"}, {"y"}, "id");
    m.Output("y", elem_type, {"4"});
    absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes(), NoChecker(), "types.onnx");
    ASSERT_FALSE(model.ok()) << "elem_type " << elem_type;
    EXPECT_THAT(std::string(model.status().message()), HasSubstr("'x'")) << "elem_type " << elem_type;
  }
}

}  // namespace
}  // namespace shapeshift
