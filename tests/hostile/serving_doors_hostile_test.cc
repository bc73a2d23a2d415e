// Bad requests at the two serving doors: Session::Run (one polymorphic
// artifact) and Session::Run under every policy. Each must be
// refused with an error naming the input or dim at fault — and, under the
// specializing policies, refused *before* anything is compiled: a malformed
// request that triggered a compile would waste seconds and count against
// the recompile limit.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

using ::testing::HasSubstr;
using testing::AddRelu;
using testing::RandomF32;

struct BadRequest {
  std::string name;
  std::vector<Tensor> inputs;
  std::string must_mention;
};

// AddRelu: x, y : f32[batch, seq, 8], batch 1..8, seq 1..64. Every request
// binds a different (batch, seq), so no entry compiled for one serves the
// next.
std::vector<BadRequest> BadRequests() {
  auto f32 = [](std::vector<int64_t> shape) { return RandomF32(std::move(shape), 1); };
  return {
      {"too few inputs", {f32({1, 2, 8})}, "2 inputs"},
      {"too many inputs", {f32({1, 3, 8}), f32({1, 3, 8}), f32({1, 3, 8})}, "2 inputs"},
      {"rank too low", {f32({1, 4, 8}), f32({1, 4})}, "'y'"},
      {"rank too high", {f32({1, 5, 8}), f32({1, 5, 8, 1})}, "'y'"},
      {"scalar input", {f32({1, 6, 8}), Tensor::Scalar(1.0f)}, "'y'"},
      {"seq above its range", {f32({2, 65, 8}), f32({2, 65, 8})}, "seq"},
      {"batch above its range", {f32({9, 5, 8}), f32({9, 5, 8})}, "batch"},
      {"empty batch", {f32({0, 5, 8}), f32({0, 5, 8})}, "batch"},
      {"wrong dtype", {f32({1, 7, 8}), Tensor::Zeros(DType::kI64, {1, 7, 8}).value()}, "'y'"},
      {"wrong static dim", {f32({1, 8, 8}), f32({1, 8, 9})}, "'y'"},
      {"dims disagree", {f32({1, 9, 8}), f32({1, 10, 8})}, "'y'"},
  };
}

TEST(ServingDoorsHostileTest, SessionRefusesEveryBadRequestByName) {
  testing::BuiltModel model = AddRelu();
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)));
  ASSERT_TRUE(session.ok()) << session.status();
  for (const BadRequest& bad : BadRequests()) {
    absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(bad.inputs);
    ASSERT_FALSE(out.ok()) << bad.name;
    EXPECT_THAT(std::string(out.status().message()), HasSubstr(bad.must_mention)) << bad.name;
  }
  EXPECT_EQ((*session)->stats().requests, 0);
}

TEST(ServingDoorsHostileTest, SessionRefusesAViewWithoutData) {
  testing::BuiltModel model = AddRelu();
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)));
  ASSERT_TRUE(session.ok()) << session.status();
  const Tensor good = RandomF32({2, 5, 8}, 1);
  const std::vector<int64_t> shape = {2, 5, 8};
  const TensorView views[] = {TensorView::Of(good), TensorView{DType::kF32, shape, nullptr}};
  absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(views);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("'y'"));
}

class SpecializingDoorTest : public ::testing::TestWithParam<SpecializationPolicy> {};

TEST_P(SpecializingDoorTest, RefusesEveryBadRequestByNameWithoutCompiling) {
  testing::BuiltModel model = AddRelu();
  SessionOptions options;
  options.policy = GetParam();
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), options);
  ASSERT_TRUE(session.ok()) << session.status();
  for (const BadRequest& bad : BadRequests()) {
    const int64_t compiles_before = (*session)->stats().dispatcher.compiles;
    absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(bad.inputs);
    ASSERT_FALSE(out.ok()) << bad.name;
    EXPECT_THAT(std::string(out.status().message()), HasSubstr(bad.must_mention)) << bad.name;
    // The dispatcher checks count, dtype, rank, static dims, ranges and
    // agreement before it looks for an entry: no bad request compiles.
    EXPECT_EQ((*session)->stats().dispatcher.compiles, compiles_before) << bad.name << " compiled an entry";
  }
  EXPECT_EQ((*session)->stats().requests, 0);
  // The session still serves a good request afterwards.
  absl::StatusOr<std::vector<Tensor>> good = (*session)->Run({RandomF32({2, 5, 8}, 1), RandomF32({2, 5, 8}, 2)});
  EXPECT_TRUE(good.ok()) << good.status();
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, SpecializingDoorTest,
                         ::testing::Values(SpecializationPolicy::kPolymorphic, SpecializationPolicy::kBucketed,
                                           SpecializationPolicy::kStatic, SpecializationPolicy::kAuto),
                         [](const ::testing::TestParamInfo<SpecializationPolicy>& info) {
                           return std::string(SpecializationPolicyName(info.param));
                         });

}  // namespace
}  // namespace shapeshift::runtime
