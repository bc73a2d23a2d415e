#include "passes/memory_plan.h"

#include <random>

#include "examples/models/gpt2.h"
#include "passes/fusion.h"
#include "passes/pipeline.h"
#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

using testing::PassTest;

struct Interval {
  int64_t begin, end;  // bytes [begin, end)
};

// Every pair of arena buffers whose lifetimes overlap must occupy disjoint
// bytes, inside the arena, at every sampled point of the domain.
void ExpectNoOverlapAt(const MemoryPlan& plan, const Assignment& at) {
  int64_t arena = plan.arena_bytes.Evaluate(at).value();
  std::vector<std::pair<const Value*, const BufferAssignment*>> arena_buffers;
  for (const auto& [v, a] : plan.buffers) {
    if (a.storage == BufferStorage::kArena) arena_buffers.push_back({v, &a});
  }
  for (size_t i = 0; i < arena_buffers.size(); ++i) {
    const BufferAssignment& a = *arena_buffers[i].second;
    Interval ia{a.offset.Evaluate(at).value(), 0};
    ia.end = ia.begin + a.size_bytes.Evaluate(at).value();
    EXPECT_EQ(ia.begin % MemoryPlan::kAlignment, 0);
    EXPECT_LE(ia.end, arena) << arena_buffers[i].first->name();
    for (size_t j = i + 1; j < arena_buffers.size(); ++j) {
      const BufferAssignment& b = *arena_buffers[j].second;
      bool live_together = a.defined_in <= b.last_read && b.defined_in <= a.last_read;
      if (!live_together) continue;
      Interval ib{b.offset.Evaluate(at).value(), 0};
      ib.end = ib.begin + b.size_bytes.Evaluate(at).value();
      EXPECT_TRUE(ia.end <= ib.begin || ib.end <= ia.begin)
          << arena_buffers[i].first->name() << " and " << arena_buffers[j].first->name() << " overlap";
    }
  }
}

using MemoryPlanTest = PassTest;

TEST_F(MemoryPlanTest, ChainReusesDeadBuffersAndViewsAlias) {
  Value* x = In("x", {batch, seq, 8});
  Value* a = Op("Exp", {x});
  Value* t1 = Op("Transpose", {a}, Attr("perm", std::vector<int64_t>{1, 0, 2}));
  Value* view = Op("Reshape", {t1, Ints({0, -1})});
  Value* t2 = Op("Transpose", {view}, Attr("perm", std::vector<int64_t>{1, 0}));  // may take a's slot
  Value* t3 = Op("Transpose", {t2}, Attr("perm", std::vector<int64_t>{1, 0}));    // may take t1's slot
  Value* y = Op("Neg", {t3});
  g.AddOutput(y);
  absl::StatusOr<FusionPlan> fusion = PlanFusion(g, env);
  ASSERT_TRUE(fusion.ok()) << fusion.status();
  absl::StatusOr<MemoryPlan> plan = PlanMemory(g, *fusion, env);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->Find(x)->storage, BufferStorage::kGraphInput);
  EXPECT_EQ(plan->Find(y)->storage, BufferStorage::kGraphOutput);
  const BufferAssignment* v = plan->Find(view);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->storage, BufferStorage::kAlias);
  EXPECT_EQ(plan->Find(v->alias_of)->storage, BufferStorage::kArena);
  int arena_values = 0;
  for (const auto& [value, a] : plan->buffers) arena_values += a.storage == BufferStorage::kArena;
  EXPECT_LT(static_cast<int>(plan->slot_sizes.size()), arena_values) << plan->ToString();
  for (int64_t b : {1, 3, 8}) {
    for (int64_t s : {1, 2, 17, 64}) ExpectNoOverlapAt(*plan, {{"batch", b}, {"seq", s}});
  }
  // Every reuse was a proven question, recorded nowhere as a guard.
  EXPECT_TRUE(env.guards().empty());
}

TEST(MemoryPlanModelTest, Gpt2KvCacheArenaHasNoOverlapAtRandomShapes) {
  examples::Gpt2Config config;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.vocab = 100;
  config.max_position = 128;
  config.seq = {1, 64};
  config.past = {0, 63};
  config.kv_cache = true;
  absl::StatusOr<ImportedModel> model = examples::BuildGpt2(config);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<PipelineResult> result = RunPipeline(*model->graph, *model->env);
  ASSERT_TRUE(result.ok()) << result.status();
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    Assignment at = {{"batch", std::uniform_int_distribution<int64_t>(1, 8)(rng)},
                     {"seq", std::uniform_int_distribution<int64_t>(1, 64)(rng)},
                     {"past", std::uniform_int_distribution<int64_t>(0, 63)(rng)}};
    SCOPED_TRACE(::testing::Message() << "batch " << at["batch"] << " seq " << at["seq"] << " past " << at["past"]);
    ExpectNoOverlapAt(result->memory, at);
  }
}

}  // namespace
}  // namespace shapeshift::passes
