#include "passes/matmul_layout.h"

#include "passes/dce.h"
#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

using testing::ExpectOutputs;
using testing::PassTest;

using MatmulLayoutTest = PassTest;

TEST_F(MatmulLayoutTest, SplitsKeyTransposeIntoHeadTransposeAndLastTwoSwap) {
  Value* q = In("q", {batch, 2, seq, 4});
  Value* k = In("k", {batch, seq, 2, 4});
  Value* v = In("v", {batch, seq, 2, 4});
  Value* kt = Op("Transpose", {k}, Attr("perm", std::vector<int64_t>{0, 2, 3, 1}));
  Value* vh = Op("Transpose", {v}, Attr("perm", std::vector<int64_t>{0, 2, 1, 3}));
  Value* probs = Op("Softmax", {Op("MatMul", {q, kt})}, Attr("axis", int64_t{-1}));
  g.AddOutput(Op("MatMul", {probs, vh}));
  std::vector<Tensor> in = {Random({2, 2, 3, 4}, 1), Random({2, 3, 2, 4}, 2), Random({2, 3, 2, 4}, 3)};
  absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
  ASSERT_TRUE(before.ok()) << before.status();
  absl::StatusOr<bool> changed = SplitMatmulOperandTransposes(g, env);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(EliminateDeadCode(g).ok());
  ASSERT_TRUE(g.Verify().ok());
  std::vector<std::vector<int64_t>> perms;
  for (const Node* n : g.nodes()) {
    if (n->op_type() == "Transpose") perms.push_back(*n->attrs().GetInts("perm"));
  }
  // V's head transpose is left alone; Kᵀ becomes the same head transpose plus a swap.
  EXPECT_EQ(perms.size(), 3u);
  EXPECT_EQ(std::count(perms.begin(), perms.end(), std::vector<int64_t>{0, 2, 1, 3}), 2);
  EXPECT_EQ(std::count(perms.begin(), perms.end(), std::vector<int64_t>{0, 1, 3, 2}), 1);
  ExpectOutputs(g, in, *before);
}

}  // namespace
}  // namespace shapeshift::passes
