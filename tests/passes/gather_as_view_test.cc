// gather-as-view: the mask lookup `mask[b, k]` over Range grids (as
// Gather of the flattened mask at b*seq + k, and as GatherND of (b, k)
// tuples) becomes a Reshape; any other index grid is left alone.
#include "passes/gather_as_view.h"

#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

class GatherAsViewTest : public testing::PassTest {
 protected:
  // Range(0, dim `axis` of x), reshaped to `shape` (one -1).
  Value* Positions(Value* x, int64_t axis, std::vector<int64_t> shape) {
    Value* dims = Op("Shape", {x});
    Value* n = Op("Gather", {dims, g.AddConstant("", Tensor::ScalarI64(axis))});
    Value* range = Op("Range", {g.AddConstant("", Tensor::ScalarI64(0)), n, g.AddConstant("", Tensor::ScalarI64(1))});
    return Op("Reshape", {range, Ints(shape)});
  }
  Tensor Mask() {
    return Tensor::FromVector<float>(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  }
};

TEST_F(GatherAsViewTest, FlattenedGatherAtRowMajorPositionIsAReshape) {
  Value* mask = In("mask", {batch, seq});
  Value* flat = Op("Flatten", {mask}, Attr("axis", int64_t{2}));  // [batch*seq, 1]
  Value* b = Positions(mask, 0, {-1, 1});
  Value* k = Positions(mask, 1, {1, -1});
  Value* seq_len = Op("Gather", {Op("Shape", {mask}), Ints({1})});
  Value* idx = Op("Add", {k, Op("Mul", {b, seq_len})});  // [batch, seq] = b*seq + k
  Value* out = Op("Gather", {flat, idx});
  g.AddOutput(out);
  std::vector<Tensor> expected = Interpret(g, {Mask()}).value();
  absl::StatusOr<bool> changed = RewriteGathersAsViews(g, env);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(g.outputs()[0]->producer()->op_type(), "Reshape");
  EXPECT_EQ(Count("Gather"), 3);  // what is left are the three lookups in shape vectors
  testing::ExpectOutputs(g, {Mask()}, expected);
}

TEST_F(GatherAsViewTest, GatherNDOfPositionTuplesIsAReshape) {
  Value* mask = In("mask", {batch, seq});
  Value* b = Op("Unsqueeze", {Op("Expand", {Positions(mask, 0, {-1, 1}), Op("Shape", {mask})}), Ints({-1})});
  Value* k = Op("Unsqueeze", {Op("Expand", {Positions(mask, 1, {1, -1}), Op("Shape", {mask})}), Ints({-1})});
  Value* tuples = Op("Concat", {b, k}, Attr("axis", int64_t{-1}));  // [batch, seq, 2]
  Value* out = Op("GatherND", {mask, tuples});
  g.AddOutput(out);
  std::vector<Tensor> expected = Interpret(g, {Mask()}).value();
  ASSERT_TRUE(RewriteGathersAsViews(g, env).value());
  EXPECT_EQ(Count("GatherND"), 0);
  EXPECT_EQ(g.outputs()[0]->producer()->op_type(), "Reshape");
  testing::ExpectOutputs(g, {Mask()}, expected);
}

TEST_F(GatherAsViewTest, ShiftedPositionsStayAGather) {
  Value* mask = In("mask", {batch, seq});
  Value* k = Positions(mask, 1, {-1});
  Value* shifted = Op("Sub", {Op("Add", {k, Ints({1})}), Ints({2})});  // k - 1: not the position
  Value* out = Op("Gather", {mask, shifted}, Attr("axis", int64_t{1}));
  g.AddOutput(out);
  EXPECT_FALSE(RewriteGathersAsViews(g, env).value());
  Value* rows = Op("Gather", {mask, Positions(mask, 1, {-1})});  // indices over seq gather batch rows
  g.AddOutput(rows);
  EXPECT_FALSE(RewriteGathersAsViews(g, env).value());  // counts differ: seq indices into batch rows
}

}  // namespace
}  // namespace shapeshift::passes
