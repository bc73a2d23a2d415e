// Data-movement groups: transposes, KV-cache concat (including an empty
// past), slices, views and embedding-lookup configuration.
#include "tests/codegen/lower/lower_test_util.h"

namespace shapeshift::codegen::lower::testing {
namespace {

using passes::GroupKind;

TEST_F(LowerTest, HeadTransposeMatchesInterpreter) {
  GraphValue* x = In("x", {batch, seq, 3, 16});
  Node* t = Op("Transpose", {x}, Attr("perm", std::vector<int64_t>{0, 2, 1, 3}));
  g.AddOutput(t->output(0));
  passes::Group group = MakeGroup(GroupKind::kTranspose, {t}, {x});
  group.transpose.perm = {0, 2, 1, 3};
  for (int64_t s : AwkwardSeqs()) ExpectMatchesInterpreter(group, {RandomTensor({2, s, 3, 16}, 1)});
}

TEST_F(LowerTest, LastAxisTransposeMatchesInterpreter) {
  GraphValue* x = In("x", {batch, seq, 5});
  Node* t = Op("Transpose", {x}, Attr("perm", std::vector<int64_t>{0, 2, 1}));
  g.AddOutput(t->output(0));
  passes::Group group = MakeGroup(GroupKind::kTranspose, {t}, {x});
  group.transpose.perm = {0, 2, 1};
  for (int64_t s : {1, 2, 13, 513}) ExpectMatchesInterpreter(group, {RandomTensor({3, s, 5}, 2)});
}

TEST_F(LowerTest, KvCacheConcatIncludingEmptyPast) {
  GraphValue* cache = In("past_k", {batch, 2, past, 8});
  GraphValue* cur = In("k", {batch, 2, seq, 8});
  Node* concat = Op("Concat", {cache, cur}, Attr("axis", int64_t{2}));
  g.AddOutput(concat->output(0));
  passes::Group group = MakeGroup(GroupKind::kConcat, {concat}, {cache, cur});
  group.concat.axis = 2;
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_TRUE(steps.ok()) << steps.status();
  ASSERT_EQ(steps->size(), 2u);
  // Both copies have the same structure: one compiled kernel serves both.
  EXPECT_TRUE(StructurallyEqual(std::get<KernelCall>((*steps)[0]).kernel, std::get<KernelCall>((*steps)[1]).kernel));
  for (int64_t p : {0, 1, 7, 16}) {
    for (int64_t s : {1, 2, 13}) {
      SCOPED_TRACE(absl::StrCat(p, " ", s));
      ExpectMatchesInterpreter(group, {RandomTensor({2, 2, p, 8}, 1), RandomTensor({2, 2, s, 8}, 2)});
    }
  }
}

TEST_F(LowerTest, StridedSliceMatchesInterpreter) {
  GraphValue* x = In("x", {batch, seq, 12});
  Node* slice = Op("Slice", {x, Ints({1}), Ints({11}), Ints({2}), Ints({3})});
  g.AddOutput(slice->output(0));
  passes::Group group = MakeGroup(GroupKind::kSlice, {slice}, {x});
  group.slice.starts = {0, 0, 1};
  group.slice.steps = {1, 1, 3};
  for (int64_t s : {1, 2, 7, 512}) ExpectMatchesInterpreter(group, {RandomTensor({2, s, 12}, 4)});
}

TEST_F(LowerTest, ViewIsAnAliasNotACopy) {
  GraphValue* x = In("x", {batch, seq, 4, 8});
  Node* reshape = Op("Reshape", {x, Ints({0, 0, 32})});
  g.AddOutput(reshape->output(0));
  passes::Group group = MakeGroup(GroupKind::kView, {reshape}, {x});
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_TRUE(steps.ok()) << steps.status();
  ASSERT_EQ(steps->size(), 1u);
  const auto* alias = std::get_if<AliasCall>(&(*steps)[0]);
  ASSERT_NE(alias, nullptr);
  EXPECT_EQ(alias->source, x);
  EXPECT_EQ(alias->alias, reshape->output(0));
}

TEST_F(LowerTest, ReshapeCopyMatchesInterpreter) {
  GraphValue* x = In("x", {batch, seq, 6});
  Node* t = Op("Transpose", {x}, Attr("perm", std::vector<int64_t>{0, 2, 1}));
  Node* reshape = Op("Reshape", {t->output(0), Ints({0, -1})});
  g.AddOutput(reshape->output(0));
  passes::Group group = MakeGroup(GroupKind::kCopy, {t, reshape}, {x});
  for (int64_t s : {1, 2, 13}) ExpectMatchesInterpreter(group, {RandomTensor({2, s, 6}, 4)});
}

TEST_F(LowerTest, EmbeddingGatherNeedsAStaticTable) {
  GraphValue* ids = In("ids", {batch, seq}, DType::kI64);
  GraphValue* table = Const({30, 8}, 1);
  Node* gather = Op("Gather", {table, ids});
  g.AddOutput(gather->output(0));
  passes::Group group = MakeGroup(GroupKind::kGather, {gather}, {table, ids});
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_TRUE(steps.ok()) << steps.status();
  const auto& call = std::get<GatherRowsCall>((*steps)[0]);
  EXPECT_EQ(call.table_rows, 30);
  EXPECT_EQ(call.row_bytes, 8 * 4);
  EXPECT_EQ(call.num_indices, batch * seq);
}

}  // namespace
}  // namespace shapeshift::codegen::lower::testing
