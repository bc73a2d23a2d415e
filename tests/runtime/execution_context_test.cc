#include "runtime/execution_context.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace shapeshift::runtime {
namespace {

TEST(ExecutionContextTest, ArenaGrowsToTheLargestRequestThenIsReused) {
  ExecutionContext ctx;
  std::byte* big = ctx.Arena(1 << 20);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % 64, 0u);
  EXPECT_EQ(ctx.arena_allocations(), 1);
  for (size_t bytes : {size_t{10}, size_t{1} << 19, size_t{1} << 20}) {
    EXPECT_EQ(ctx.Arena(bytes), big);
  }
  EXPECT_EQ(ctx.arena_allocations(), 1);
  ctx.Arena((1 << 20) + 1);
  EXPECT_EQ(ctx.arena_allocations(), 2);
  EXPECT_GE(ctx.arena_capacity(), size_t{(1 << 20) + 1});
}

}  // namespace
}  // namespace shapeshift::runtime
