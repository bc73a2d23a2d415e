// grouped-query-matmul: attention over repeat_kv's expanded heads becomes a
// matmul over the unexpanded heads, in both exporters' forms, with the same
// outputs; anything else is left alone.
#include "passes/grouped_query_matmul.h"

#include <functional>

#include "passes/dce.h"
#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

using testing::ExpectOutputs;
using testing::PassTest;

class GroupedQueryMatmulTest : public PassTest {
 protected:
  // 4 query heads over 2 key/value heads of size 8.
  void SetUp() override {
    q = In("q", {batch, 4, seq, 8});
    k = In("k", {batch, 2, seq, 8});
    v = In("v", {batch, 2, seq, 8});
  }
  // transformers' repeat_kv: [b, 2, s, 8] -> [b, 2, 2, s, 8] -> [b, 4, s, 8].
  Value* Expanded(Value* x, int64_t repeats = 2) {
    Value* u = Op("Unsqueeze", {x, Ints({2})});
    return Op("Expand", {u, Ints({1, 2, repeats, 1, 8})});
  }
  Value* Repeated(Value* x) { return Op("Reshape", {Expanded(x), Ints({0, 4, -1, 8})}); }
  // The dynamo exporter's keys: [b*4, s, 8], transposed, then [b, 4, 8, s],
  // through shape values read from k.
  Value* DynamoKeys(Value* x) {
    Value* shape = Op("Shape", {x});
    Value* s = Op("Slice", {shape, Ints({2}), Ints({3})});
    Value* b = Op("Slice", {shape, Ints({0}), Ints({1})});
    Value* flat = Op("Reshape", {Expanded(x), Op("Concat", {Ints({-1}), s, Ints({8})}, Attr("axis", int64_t{0}))});
    Value* t = Op("Transpose", {flat}, Attr("perm", std::vector<int64_t>{0, 2, 1}));
    return Op("Reshape", {t, Op("Concat", {b, Ints({4}), Ints({8}), s}, Attr("axis", int64_t{0}))});
  }
  // Scores, softmax, values: the attention the exports compute.
  Value* Attention(Value* keys_t, Value* values) {
    Value* scores = Op("MatMul", {q, keys_t});
    return Op("MatMul", {Op("Softmax", {scores}, Attr("axis", int64_t{-1})), values});
  }
  std::vector<Tensor> Inputs() { return {Random({2, 4, 5, 8}, 1), Random({2, 2, 5, 8}, 2), Random({2, 2, 5, 8}, 3)}; }

  // The B a matmul reads, through a transpose.
  static const Value* ReadB(const Node& matmul) {
    const Value* b = matmul.input(1);
    if (const Node* t = b->producer(); t != nullptr && t->op_type() == "Transpose") b = t->input(0);
    return b;
  }
  // Runs the pass (which must change the graph) and DCE, then `check`; the
  // graph must stay valid and compute what it did on `in`.
  void ExpectRewrittenKeepingOutputs(const std::vector<Tensor>& in, const std::function<void()>& check) {
    absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
    ASSERT_TRUE(before.ok()) << before.status();
    absl::StatusOr<bool> changed = GroupQueryMatmuls(g, env);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(*changed);
    ASSERT_TRUE(EliminateDeadCode(g).ok());
    check();
    ASSERT_TRUE(g.Verify().ok());
    ExpectOutputs(g, in, *before);
  }
  void ExpectRewritten(int matmuls) {
    ExpectRewrittenKeepingOutputs(Inputs(), [&] {
      EXPECT_EQ(Count("Expand"), 0) << g.ToString();
      EXPECT_EQ(Count("MatMul"), matmuls);
      for (const Node* n : g.nodes()) {
        if (n->op_type() != "MatMul") continue;
        // Every matmul reads k or v (or k transposed) directly: batch b*2, rows 2*m.
        EXPECT_TRUE(ReadB(*n) == k || ReadB(*n) == v) << n->name() << " reads " << ReadB(*n)->name();
      }
    });
  }

  Value *q = nullptr, *k = nullptr, *v = nullptr;
};

TEST_F(GroupedQueryMatmulTest, TorchScriptFormReadsTheUnexpandedHeads) {
  Value* keys_t = Op("Transpose", {Repeated(k)}, Attr("perm", std::vector<int64_t>{0, 1, 3, 2}));
  Value* out = Attention(keys_t, Repeated(v));
  const std::string name = out->name();
  g.AddOutput(out);
  ExpectRewritten(2);
  EXPECT_EQ(g.outputs()[0]->name(), name);
  EXPECT_EQ(g.outputs()[0]->type().shape, (std::vector<SymExpr>{batch, 4, seq, 8}));
}

TEST_F(GroupedQueryMatmulTest, DynamoFormReadsTheUnexpandedHeads) {
  g.AddOutput(Attention(DynamoKeys(k), Repeated(v)));
  ExpectRewritten(2);
}

TEST_F(GroupedQueryMatmulTest, ThreeQueryHeadsPerKeyValueHead) {
  Value* q6 = In("q6", {batch, 6, seq, 8});
  Value* v6 = Op("Reshape", {Expanded(v, 3), Ints({0, 6, -1, 8})});
  g.AddOutput(Op("MatMul", {Op("Softmax", {Op("MatMul", {q6, Op("Transpose", {q6}, Attr("perm", std::vector<int64_t>{0, 1, 3, 2}))})},
                                           Attr("axis", int64_t{-1})),
                            v6}));
  std::vector<Tensor> in = {Random({2, 4, 5, 8}, 1), Random({2, 2, 5, 8}, 2), Random({2, 2, 5, 8}, 3), Random({2, 6, 5, 8}, 4)};
  absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
  ASSERT_TRUE(before.ok()) << before.status();
  absl::StatusOr<bool> changed = GroupQueryMatmuls(g, env);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(EliminateDeadCode(g).ok());
  EXPECT_EQ(Count("Expand"), 0);
  ExpectOutputs(g, in, *before);
}

// Multi-query attention (Falcon): one key/value head that the MatMuls
// broadcast over the 4 query heads; both become [b, 1, 4*m, k] matmuls
// reading k1 and v1 in place. A B with batch 1 against A's batch b stays.
TEST_F(GroupedQueryMatmulTest, MultiQueryAttentionReadsItsOneKeyValueHeadInPlace) {
  Value* k1 = In("k1", {batch, 1, seq, 8});
  Value* v1 = In("v1", {batch, 1, seq, 8});
  Value* scores = Op("MatMul", {q, Op("Transpose", {k1}, Attr("perm", std::vector<int64_t>{0, 1, 3, 2}))});
  Value* out = Op("MatMul", {Op("Softmax", {scores}, Attr("axis", int64_t{-1})), v1});
  const std::string name = out->name();
  g.AddOutput(out);
  g.AddOutput(Op("MatMul", {q, In("shared", {1, 1, 8, 3})}));
  std::vector<Tensor> in = Inputs();
  in.push_back(Random({2, 1, 5, 8}, 4));
  in.push_back(Random({2, 1, 5, 8}, 5));
  in.push_back(Random({1, 1, 8, 3}, 6));
  ExpectRewrittenKeepingOutputs(in, [&] {
    int in_place = 0;
    for (const Node* n : g.nodes()) {
      if (n->op_type() != "MatMul" || (ReadB(*n) != k1 && ReadB(*n) != v1)) continue;
      ++in_place;
      const std::vector<SymExpr>& a = n->input(0)->type().shape;  // [b, 1, 4*m, k]
      ASSERT_EQ(a.size(), 4u);
      EXPECT_EQ((std::vector<SymExpr>{a[0], a[1], a[2]}), (std::vector<SymExpr>{batch, 1, SymExpr(4) * seq}))
          << n->name();
    }
    EXPECT_EQ(in_place, 2);
    EXPECT_EQ(Count("MatMul"), 3);
    EXPECT_EQ(g.outputs()[0]->name(), name);
  });
}

TEST_F(GroupedQueryMatmulTest, LeavesOtherExpandsAlone) {
  // An Expand of an input (no Unsqueeze: not repeat_kv), and a Reshape that
  // merges the repeats into the sequence ([b, 2, 2s, 8]) rather than the heads.
  Value* u = In("u", {batch, 2, 1, seq, 8});
  Value* not_unsqueezed = Op("Reshape", {Op("Expand", {u, Ints({1, 2, 2, 1, 8})}), Ints({0, 4, -1, 8})});
  g.AddOutput(Op("MatMul", {In("p", {batch, 4, seq, seq}), not_unsqueezed}));
  Value* into_sequence = Op("Reshape", {Expanded(v), Ints({0, 2, -1, 8})});
  g.AddOutput(Op("MatMul", {In("a2", {batch, 2, 8, SymExpr(2) * seq}), into_sequence}));
  absl::StatusOr<bool> changed = GroupQueryMatmuls(g, env);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(Count("Expand"), 2);
}

}  // namespace
}  // namespace shapeshift::passes
