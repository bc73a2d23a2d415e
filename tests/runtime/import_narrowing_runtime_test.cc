// Model-implied dim ranges through the runtime API: the tiny BERT export
// opened without any declared range gets `sequence` in 1..512 (its position
// table) at import. Inside that range it reproduces torch's outputs; a
// request past it (sequence 600) is refused by the existing domain checks
// with an error naming the dim — before any compile, never a crash or a
// wrong result — through both Session and the Dispatcher behind
// Session.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/tensor_proto.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

using ::testing::HasSubstr;

const std::string kDir = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/bert-base-torchscript/";

// input_K.pb / output_K.pb of test_data_set_0 (batch 1, sequence 5).
std::vector<Tensor> DataSet0(const std::string& prefix, int count) {
  std::vector<Tensor> tensors;
  for (int k = 0; k < count; ++k) {
    absl::StatusOr<Tensor> t = ReadTensorProtoFile(kDir + "test_data_set_0/" + prefix + "_" + std::to_string(k) + ".pb");
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) tensors.push_back(*std::move(t));
  }
  return tensors;
}

// Token ids, mask and token types (all ones) of shape [1, sequence], in the
// dtypes of the stored inputs.
std::vector<Tensor> Tokens(const std::vector<Tensor>& like, int64_t sequence) {
  std::vector<Tensor> out;
  for (const Tensor& t : like) {
    out.push_back(Tensor::FromVector<int64_t>(t.dtype(), {1, sequence}, std::vector<int64_t>(sequence, 1)));
  }
  return out;
}

TEST(ImportNarrowingRuntimeTest, SessionServesTheImpliedRangeAndRefusesBeyondIt) {
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(ModelSource::OnnxFile(kDir + "model.onnx"));
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> inputs = DataSet0("input", 3);
  std::vector<Tensor> expected = DataSet0("output", 1);
  ASSERT_EQ(inputs.size(), 3u);
  ASSERT_FALSE(expected.empty());

  absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), expected[0].shape());
  EXPECT_LE(testing::MaxAbsDiff((*out)[0], expected[0]), 1e-3);

  absl::StatusOr<std::vector<Tensor>> beyond = (*session)->Run(Tokens(inputs, 600));
  ASSERT_FALSE(beyond.ok());
  EXPECT_THAT(beyond.status().message(), HasSubstr("(sequence) = 600 is outside the declared range 1..512"));
  absl::StatusOr<std::vector<Tensor>> at_limit = (*session)->Run(Tokens(inputs, 512));
  EXPECT_TRUE(at_limit.ok()) << at_limit.status();
  EXPECT_EQ((*session)->stats().compiles, 1);
  EXPECT_EQ((*session)->stats().requests, 2);
}

TEST(ImportNarrowingRuntimeTest, DispatcherRefusesBeyondTheImpliedRangeBeforeAnyCompile) {
  SessionOptions options;
  options.policy = SpecializationPolicy::kStatic;  // compiles on the first request it serves
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::OnnxFile(kDir + "model.onnx"), options);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> inputs = DataSet0("input", 3);
  ASSERT_EQ(inputs.size(), 3u);

  absl::StatusOr<std::vector<Tensor>> beyond = (*session)->Run(Tokens(inputs, 600));
  ASSERT_FALSE(beyond.ok());
  EXPECT_THAT(beyond.status().message(), HasSubstr("(sequence) = 600 is outside the declared range 1..512"));
  EXPECT_EQ((*session)->stats().dispatcher.compiles, 0);
  EXPECT_EQ((*session)->stats().requests, 0);

  absl::StatusOr<std::vector<Tensor>> within = (*session)->Run(inputs);
  ASSERT_TRUE(within.ok()) << within.status();
  EXPECT_EQ((*session)->stats().dispatcher.compiles, 1);
}

}  // namespace
}  // namespace shapeshift::runtime
