#include "passes/pass_manager.h"

#include <sstream>

#include "gmock/gmock.h"
#include "passes/pipeline.h"
#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

using ::testing::HasSubstr;
using testing::PassTest;

using PassManagerTest = PassTest;

TEST_F(PassManagerTest, RunsInOrderAndPrintsOnlyAfterRequestedPasses) {
  g.AddOutput(Op("Neg", {In("x", {batch})}));
  std::ostringstream out;
  std::vector<std::string> ran;
  PassManager pm({{"second"}, &out, true});
  pm.Add("first", [&](Graph&, ShapeEnv&) -> absl::StatusOr<bool> { ran.push_back("first"); return false; });
  pm.Add("second", [&](Graph&, ShapeEnv&) -> absl::StatusOr<bool> { ran.push_back("second"); return true; });
  absl::StatusOr<bool> changed = pm.Run(g, env);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(ran, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(pm.names(), ran);
  EXPECT_THAT(out.str(), HasSubstr("after second"));
  EXPECT_THAT(out.str(), HasSubstr("Neg("));
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("after first")));
}

TEST_F(PassManagerTest, ErrorsNameThePassAndFixpointStops) {
  g.AddOutput(Op("Neg", {In("x", {batch})}));
  PassManager failing({});
  failing.Add("broken", [](Graph&, ShapeEnv&) -> absl::StatusOr<bool> {
    return absl::InvalidArgumentError("node 'n' is odd");
  });
  absl::StatusOr<bool> r = failing.Run(g, env);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("pass 'broken': node 'n' is odd"));

  int rounds = 0;
  PassManager converging({});
  converging.Add("countdown", [&](Graph&, ShapeEnv&) -> absl::StatusOr<bool> { return ++rounds < 3; });
  ASSERT_TRUE(converging.RunToFixpoint(g, env, 10).ok());
  EXPECT_EQ(rounds, 3);
}

TEST_F(PassManagerTest, PipelineRejectsUnknownPrintAfterNames) {
  g.AddOutput(Op("Neg", {In("x", {batch})}));
  PipelineOptions options;
  options.print_after = {"fuison"};
  absl::StatusOr<PipelineResult> r = RunPipeline(g, env, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("unknown pass 'fuison'"));
  EXPECT_THAT(PipelinePassNames(), ::testing::Contains("fusion"));
  EXPECT_THAT(PipelinePassNames(), ::testing::Contains("memory-plan"));
}

TEST_F(PassManagerTest, PipelinePrintsPlansAfterFusionAndMemoryPlanning) {
  g.AddOutput(Op("Neg", {Op("Exp", {In("x", {batch, seq})})}));
  std::ostringstream out;
  PipelineOptions options;
  options.print_after = {"simplify", "fusion", "memory-plan"};
  options.print_stream = &out;
  absl::StatusOr<PipelineResult> r = RunPipeline(g, env, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(out.str(), HasSubstr("after simplify"));
  EXPECT_THAT(out.str(), HasSubstr("fusion plan: 1 groups"));
  EXPECT_THAT(out.str(), HasSubstr("memory plan: arena 0 bytes"));
  ASSERT_EQ(r->fusion.groups.size(), 1u);
  EXPECT_EQ(r->fusion.groups[0].kind, GroupKind::kElementwise);
}

}  // namespace
}  // namespace shapeshift::passes
