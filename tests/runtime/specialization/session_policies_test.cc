// Session under each policy: the policy, declared ranges and recompile log reach
// the dispatcher; results match the interpreter on a small encoder.
#include "runtime/session.h"

#include <cstdio>
#include <cstdlib>

#include "graph/interpreter.h"
#include "gtest/gtest.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

using testing::AddRelu;
using testing::BuiltModel;
using testing::RandomF32;

std::vector<Tensor> AddReluInputs(int64_t seq) { return {RandomF32({1, seq, 8}, 1), RandomF32({1, seq, 8}, 2)}; }

TEST(SpecializingSessionTest, StaticPolicyWritesOneLogLinePerCompile) {
  const std::string path = ::testing::TempDir() + "/specializing_session_log.jsonl";
  std::remove(path.c_str());
  BuiltModel model = AddRelu();
  SessionOptions options;
  options.policy = SpecializationPolicy::kStatic;
  options.recompile_log = path;
  options.compile.dims = {{"seq", {1, 16}}};
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), options);
  ASSERT_TRUE(s.ok()) << s.status();
  for (int64_t seq : {4, 5, 6, 4, 5}) {
    absl::StatusOr<std::vector<Tensor>> out = (*s)->Run(AddReluInputs(seq));
    ASSERT_TRUE(out.ok()) << out.status();
  }
  absl::StatusOr<std::vector<Tensor>> too_long = (*s)->Run(AddReluInputs(17));
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kOutOfRange) << too_long.status();
  SessionStats stats = (*s)->stats();
  EXPECT_EQ(stats.dispatcher.compiles, 3);
  EXPECT_EQ(stats.dispatcher.misses, 2);
  EXPECT_EQ(stats.requests, 5);
  EXPECT_EQ(stats.entries, 3u);
  absl::StatusOr<std::vector<RecompileEvent>> logged = ReadRecompileLog(path);
  ASSERT_TRUE(logged.ok()) << logged.status();
  ASSERT_EQ(logged->size(), 3u);
  EXPECT_EQ((*logged)[2].tried.size(), 2u);
  std::remove(path.c_str());
}

TEST(SpecializingSessionTest, UnknownDimIsAnErrorNamingIt) {
  BuiltModel model = AddRelu();
  SessionOptions options;
  options.compile.dims = {{"sequence", {1, 16}}};
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), options);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'sequence'"), std::string::npos) << s.status();
}

TEST(SpecializingSessionTest, LogPathComesFromTheEnvironmentWhenNotGiven) {
  const std::string path = ::testing::TempDir() + "/specializing_session_env_log.jsonl";
  std::remove(path.c_str());
  ::setenv("SHAPESHIFT_RECOMPILE_LOG", path.c_str(), 1);
  BuiltModel model = AddRelu();
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), SessionOptions{});
  ::unsetenv("SHAPESHIFT_RECOMPILE_LOG");
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<std::vector<RecompileEvent>> logged = ReadRecompileLog(path);
  ASSERT_TRUE(logged.ok()) << logged.status();
  ASSERT_EQ(logged->size(), 1u);  // auto: the initial polymorphic compile
  EXPECT_EQ((*logged)[0].trigger, RecompileTrigger::kInitial);
  EXPECT_EQ((*logged)[0].new_tier, Tier::kPolymorphic);
  std::remove(path.c_str());
}

// A model whose passes ask shape questions (memory planning, fusion): each
// static entry still matches the interpreter, and every miss names the seq
// pin that failed.
TEST(SpecializingSessionTest, StaticEncoderMatchesTheInterpreter) {
  BuiltModel model = testing::MiniEncoder(/*max_seq=*/32);
  BuiltModel reference = testing::MiniEncoder(/*max_seq=*/32);
  SessionOptions options;
  options.policy = SpecializationPolicy::kStatic;
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), options);
  ASSERT_TRUE(s.ok()) << s.status();
  for (int64_t seq : {7, 16}) {
    std::vector<Tensor> in = testing::TokenInputs(2, seq, 50, static_cast<uint32_t>(seq));
    absl::StatusOr<std::vector<Tensor>> out = (*s)->Run(in);
    ASSERT_TRUE(out.ok()) << out.status();
    absl::StatusOr<std::vector<Tensor>> want = Interpret(*reference.graph, in);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ((*out)[0].shape(), (*want)[0].shape());
    EXPECT_LT(testing::MaxAbsDiff((*out)[0], (*want)[0]), 1e-3) << "seq " << seq;
  }
  std::vector<RecompileEvent> events = (*s)->events();
  ASSERT_EQ(events.size(), 2u);
  ASSERT_EQ(events[1].unsat_core.size(), 1u);
  EXPECT_EQ(events[1].unsat_core[0].atom, "seq == 7");
}

}  // namespace
}  // namespace shapeshift::runtime
