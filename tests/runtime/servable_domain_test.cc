// A request past the domain a model can serve (graph/README.md,
// "Model-implied dim ranges": GPT-2's positions index a 1024-row table, so
// sequence is 1..1024) is refused before anything runs — by Program::Run
// (Session) and by the Dispatcher (Session) — with a message
// naming the dim, the bound and the Gather that implies it; it is never
// served with an out-of-bounds read. The last position the table holds is
// served.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "runtime/session.h"

namespace shapeshift::runtime {
namespace {

using ::testing::HasSubstr;

std::string Gpt2Export() {
  return std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/gpt2-torchscript/model.onnx";
}

// input_ids (token 7) and attention_mask (ones), [1, sequence].
std::vector<Tensor> Gpt2Inputs(int64_t sequence) {
  std::vector<int64_t> ids(sequence, 7), mask(sequence, 1);
  return {Tensor::FromVector<int64_t>(DType::kI64, {1, sequence}, ids),
          Tensor::FromVector<int64_t>(DType::kI64, {1, sequence}, mask)};
}

void ExpectRefusalNamesTheGather(const absl::Status& status) {
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange) << status;
  EXPECT_THAT(status.message(), HasSubstr("(sequence)"));
  EXPECT_THAT(status.message(), HasSubstr("1025"));
  EXPECT_THAT(status.message(), HasSubstr("outside the declared range 1..1024; dim 'sequence' limited to 1..1024: "
                                          "node '/model/transformer/wpe/Gather' (Gather) reads rows up to "
                                          "sequence - 1 of table 'model.transformer.wpe.weight' (1024 rows)"));
}

TEST(ServableDomainTest, ProgramRunRefusesPastTheTableNamingTheGather) {
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(ModelSource::OnnxFile(Gpt2Export()));
  ASSERT_TRUE(session.ok()) << session.status();
  absl::StatusOr<std::vector<Tensor>> past = (*session)->Run(Gpt2Inputs(1025));
  ASSERT_FALSE(past.ok());
  ExpectRefusalNamesTheGather(past.status());
  absl::StatusOr<std::vector<Tensor>> last = (*session)->Run(Gpt2Inputs(1024));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->front().shape(), (std::vector<int64_t>{1, 1024, 1000}));
}

TEST(ServableDomainTest, DispatcherRefusesPastTheTableBeforeAnyCompile) {
  SessionOptions options;  // the default policy, no cache
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::OnnxFile(Gpt2Export()), options);
  ASSERT_TRUE(session.ok()) << session.status();
  const int64_t compiles = (*session)->stats().dispatcher.compiles;
  absl::StatusOr<std::vector<Tensor>> past = (*session)->Run(Gpt2Inputs(1025));
  ASSERT_FALSE(past.ok());
  ExpectRefusalNamesTheGather(past.status());
  EXPECT_EQ((*session)->stats().dispatcher.compiles, compiles);  // nothing compiled for it
  EXPECT_EQ((*session)->stats().dispatcher.misses, 0);
}

}  // namespace
}  // namespace shapeshift::runtime
