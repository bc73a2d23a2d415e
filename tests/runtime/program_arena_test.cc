// Program::arena_bytes(): the memory plan's arena size as an expression of
// the model's symbols is exactly what a request of those dims allocates, so
// a caller can size a request before running it (`shapeshift fuzz`).
#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/execution_context.h"
#include "runtime/program.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

using testing::MiniEncoder;
using testing::TokenInputs;

TEST(ProgramArenaTest, ArenaBytesIsWhatARequestAllocates) {
  testing::BuiltModel model = MiniEncoder();
  absl::StatusOr<std::unique_ptr<Program>> program = Program::Compile(*model.graph, *model.env, {});
  ASSERT_TRUE(program.ok()) << program.status();
  const SymExpr& arena = (*program)->arena_bytes();
  ASSERT_FALSE(arena.IsConst()) << arena.ToString();  // grows with the request
  int64_t previous = 0;
  for (int64_t seq : {1, 9, 64, 300}) {
    absl::StatusOr<int64_t> planned = arena.Evaluate({{"batch", 2}, {"seq", seq}});
    ASSERT_TRUE(planned.ok()) << planned.status();
    EXPECT_GT(*planned, previous) << "seq " << seq;
    previous = *planned;
    // A fresh context allocates exactly the planned arena (rounded up to its
    // 64-byte alignment) for the first request.
    ExecutionContext context;
    std::vector<Tensor> inputs = TokenInputs(2, seq, 50, 1);
    TensorView views[] = {TensorView::Of(inputs[0]), TensorView::Of(inputs[1])};
    absl::StatusOr<std::vector<Tensor>> out = (*program)->Run(absl::MakeConstSpan(views), context);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(context.arena_capacity(), static_cast<size_t>((std::max<int64_t>(*planned, 1) + 63) / 64 * 64))
        << "seq " << seq << ": " << arena.ToString();
  }
}

}  // namespace
}  // namespace shapeshift::runtime
