// Hostile inputs to the reference interpreter: tensors of the wrong rank,
// dtype or size, dims outside the declared ranges, and shape tensors that
// ask ConstantOfShape/Expand/Range/Reshape for outputs that would need
// terabytes (or whose element count overflows int64). Each must be refused
// with an error naming the input or node — before anything is allocated.
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/interpreter.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using testing::OnnxTestModel;

constexpr int64_t kTwoTo20 = int64_t{1} << 20;
constexpr int64_t kTwoTo32 = int64_t{1} << 32;
constexpr int64_t kTwoTo40 = int64_t{1} << 40;

Tensor I64(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  return Tensor::FromVector<int64_t>(DType::kI64, std::move(shape), values);
}

Tensor F32(std::vector<int64_t> shape) { return Tensor::Zeros(DType::kF32, std::move(shape)).value(); }

ImportedModel Import(OnnxTestModel& m, const ImportOptions& options = {}) {
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes(), options);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

std::string InterpretError(const ImportedModel& model, const std::vector<Tensor>& inputs) {
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*model.graph, inputs);
  EXPECT_FALSE(out.ok()) << "interpreted without error";
  return out.ok() ? "" : std::string(out.status().message());
}

TEST(InterpreterHostileTest, ConstantOfShapeNeedingTerabytes) {
  OnnxTestModel m(17);
  m.Input("shape", onnx::TensorProto::INT64, {"3"});
  m.Node("ConstantOfShape", {"shape"}, {"y"}, "fill");
  m.Output("y", onnx::TensorProto::FLOAT, {"", "", ""});
  ImportedModel model = Import(m);
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{
           {kTwoTo20, kTwoTo20, kTwoTo20}, {kTwoTo32, kTwoTo32, 1}, {kTwoTo40, 1, 1}}) {
    std::string error = InterpretError(model, {I64({3}, dims)});
    EXPECT_THAT(error, HasSubstr("fill")) << dims[0];
  }
}

TEST(InterpreterHostileTest, NegativeShapeForConstantOfShape) {
  OnnxTestModel m(17);
  m.Input("shape", onnx::TensorProto::INT64, {"2"});
  m.Node("ConstantOfShape", {"shape"}, {"y"}, "fill");
  m.Output("y", onnx::TensorProto::FLOAT, {"", ""});
  ImportedModel model = Import(m);
  EXPECT_THAT(InterpretError(model, {I64({2}, {4, -3})}), HasSubstr("fill"));
}

TEST(InterpreterHostileTest, ExpandNeedingTerabytes) {
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"1"});
  m.Input("shape", onnx::TensorProto::INT64, {"2"});
  m.Node("Expand", {"x", "shape"}, {"y"}, "expand");
  m.Output("y", onnx::TensorProto::FLOAT, {"", ""});
  ImportedModel model = Import(m);
  EXPECT_THAT(InterpretError(model, {F32({1}), I64({2}, {kTwoTo20, kTwoTo20})}), HasSubstr("expand"));
  EXPECT_THAT(InterpretError(model, {F32({1}), I64({2}, {kTwoTo32, kTwoTo32})}), HasSubstr("expand"));
}

TEST(InterpreterHostileTest, RangeNeedingTerabytes) {
  OnnxTestModel m(17);
  m.Input("start", onnx::TensorProto::INT64, {});
  m.Input("limit", onnx::TensorProto::INT64, {});
  m.Input("delta", onnx::TensorProto::INT64, {});
  m.Node("Range", {"start", "limit", "delta"}, {"y"}, "range");
  m.Output("y", onnx::TensorProto::INT64, {""});
  ImportedModel model = Import(m);
  EXPECT_THAT(InterpretError(model, {I64({}, {0}), I64({}, {kTwoTo40}), I64({}, {1})}),
              HasSubstr("range"));
  EXPECT_THAT(InterpretError(model, {I64({}, {INT64_MIN}), I64({}, {INT64_MAX}), I64({}, {1})}),
              HasSubstr("range"));
  EXPECT_THAT(InterpretError(model, {I64({}, {0}), I64({}, {10}), I64({}, {0})}), HasSubstr("range"));
}

TEST(InterpreterHostileTest, ReshapeToAnOverflowingTarget) {
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"4"});
  m.Input("target", onnx::TensorProto::INT64, {"2"});
  m.Node("Reshape", {"x", "target"}, {"y"}, "reshape");
  m.Output("y", onnx::TensorProto::FLOAT, {"", ""});
  ImportedModel model = Import(m);
  EXPECT_THAT(InterpretError(model, {F32({4}), I64({2}, {kTwoTo32, kTwoTo32})}), HasSubstr("reshape"));
  EXPECT_THAT(InterpretError(model, {F32({4}), I64({2}, {kTwoTo40, kTwoTo40})}), HasSubstr("reshape"));
  EXPECT_THAT(InterpretError(model, {F32({4}), I64({2}, {-1, -1})}), HasSubstr("reshape"));
  EXPECT_THAT(InterpretError(model, {F32({4}), I64({2}, {3, -1})}), HasSubstr("reshape"));
}

TEST(InterpreterHostileTest, WrongRankDtypeSizeAndCount) {
  OnnxTestModel m(17);
  m.Input("ids", onnx::TensorProto::INT64, {"batch", "seq"});
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", "seq", "8"});
  m.Node("Relu", {"x"}, {"y"}, "relu");
  m.Output("y", onnx::TensorProto::FLOAT, {"batch", "seq", "8"});
  m.Output("ids", onnx::TensorProto::INT64, {"batch", "seq"});
  ImportedModel model = Import(m);
  const Tensor ids = I64({2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_THAT(InterpretError(model, {}), HasSubstr("expected 2 inputs"));
  EXPECT_THAT(InterpretError(model, {ids, F32({2, 3})}), HasSubstr("input 'x' has rank 2"));
  EXPECT_THAT(InterpretError(model, {F32({2, 3}), F32({2, 3, 8})}), HasSubstr("input 'ids' has dtype f32"));
  EXPECT_THAT(InterpretError(model, {ids, F32({2, 3, 9})}), HasSubstr("input 'x' dim 2 is 9"));
  EXPECT_THAT(InterpretError(model, {ids, F32({2, 4, 8})}), HasSubstr("input 'x' dim 1 is 4"));
}

}  // namespace
}  // namespace shapeshift
