// External data is the one place a model file makes the importer open other
// files: a location must stay inside the model's directory, name a file that
// exists, and describe a byte range inside it — each refused with the
// offending location or range in the message.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using testing::OnnxTestModel;
namespace fs = std::filesystem;

class ExternalDataHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("shapeshift_hostile_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "model");
    std::ofstream(dir_ / "model" / "weights.bin", std::ios::binary) << std::string(16, '\0');
    std::ofstream(dir_ / "secret.bin", std::ios::binary) << std::string(16, '\0');
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A model whose initializer `w` f32[4] lives in external data described
  // by `entries` (key, value); written next to weights.bin.
  std::string WriteModel(const std::vector<std::pair<std::string, std::string>>& entries) {
    OnnxTestModel m(17);
    m.Input("x", onnx::TensorProto::FLOAT, {"4"});
    onnx::TensorProto* t = m.model().mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(4);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [key, value] : entries) {
      onnx::StringStringEntryProto* e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
    m.Node("Add", {"x", "w"}, {"y"}, "add");
    m.Output("y", onnx::TensorProto::FLOAT, {"4"});
    const fs::path path = dir_ / "model" / "model.onnx";
    std::ofstream(path, std::ios::binary) << m.Bytes();
    return path.string();
  }

  // The importer's error with and without the ONNX checker.
  std::vector<std::string> Errors(const std::string& path) {
    std::vector<std::string> errors;
    for (bool checker : {true, false}) {
      ImportOptions options;
      options.run_checker = checker;
      absl::StatusOr<ImportedModel> model = ImportOnnxFile(path, options);
      EXPECT_FALSE(model.ok()) << (checker ? "checker on" : "checker off");
      errors.push_back(model.ok() ? "" : std::string(model.status().message()));
    }
    return errors;
  }

  fs::path dir_;
};

TEST_F(ExternalDataHostileTest, ValidExternalDataImports) {
  absl::StatusOr<ImportedModel> model = ImportOnnxFile(WriteModel({{"location", "weights.bin"}}));
  EXPECT_TRUE(model.ok()) << model.status();
}

TEST_F(ExternalDataHostileTest, LocationOutsideTheModelDirectory) {
  for (const std::string& location : {std::string("../secret.bin"), (dir_ / "secret.bin").string(),
                                      std::string("sub/../../secret.bin")}) {
    std::vector<std::string> errors = Errors(WriteModel({{"location", location}}));
    EXPECT_THAT(errors[1], HasSubstr("is outside")) << location;
    EXPECT_THAT(errors[1], HasSubstr(location)) << location;
  }
}

TEST_F(ExternalDataHostileTest, MissingFileIsNamed) {
  std::vector<std::string> errors = Errors(WriteModel({{"location", "no_such_weights.bin"}}));
  for (const std::string& e : errors) EXPECT_THAT(e, HasSubstr("no_such_weights.bin"));
}

TEST_F(ExternalDataHostileTest, RangeOutsideTheFileIsRefusedUnallocated) {
  for (const auto& [offset, length] : std::vector<std::pair<std::string, std::string>>{
           {"0", "1099511627776"}, {"1099511627776", "16"}, {"8", "16"},
           {"9223372036854775807", "1"}}) {
    std::vector<std::string> errors =
        Errors(WriteModel({{"location", "weights.bin"}, {"offset", offset}, {"length", length}}));
    EXPECT_THAT(errors[1], HasSubstr("exceeds file")) << offset << " +" << length;
  }
}

TEST_F(ExternalDataHostileTest, MalformedOffsetOrLength) {
  for (const char* bad : {"-4", "abc", "99999999999999999999999", ""}) {
    std::vector<std::string> errors =
        Errors(WriteModel({{"location", "weights.bin"}, {"offset", bad}}));
    EXPECT_THAT(errors[1], HasSubstr("bad external data offset")) << "'" << bad << "'";
  }
}

// A FIFO or a directory named as the data file is refused naming it; a
// FIFO is not waited on (nobody will ever write to it).
TEST_F(ExternalDataHostileTest, AFifoOrADirectoryIsNotAFile) {
  ASSERT_EQ(mkfifo((dir_ / "model" / "fifo.bin").c_str(), 0600), 0);
  fs::create_directories(dir_ / "model" / "dir.bin");
  for (const char* location : {"fifo.bin", "dir.bin"}) {
    ImportOptions options;
    options.run_checker = false;
    absl::StatusOr<ImportedModel> model = ImportOnnxFile(WriteModel({{"location", location}}), options);
    ASSERT_FALSE(model.ok()) << location;
    EXPECT_THAT(model.status().message(), HasSubstr("cannot open external data file")) << location;
    EXPECT_THAT(model.status().message(), HasSubstr(location));
  }
}

TEST_F(ExternalDataHostileTest, LengthThatDoesNotMatchTheDims) {
  std::vector<std::string> errors =
      Errors(WriteModel({{"location", "weights.bin"}, {"offset", "0"}, {"length", "8"}}));
  EXPECT_THAT(errors[1], HasSubstr("'w'"));
}

}  // namespace
}  // namespace shapeshift
