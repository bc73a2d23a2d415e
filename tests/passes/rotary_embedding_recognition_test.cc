#include <cstdint>
#include <limits>

#include "passes/dce.h"
#include "passes/pipeline.h"
#include "passes/rotary_embedding_recognition.h"
#include "passes/split_to_slices.h"
#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

using testing::ExpectOutputs;
using testing::PassTest;

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

class RotaryRecognitionTest : public PassTest {
 protected:
  RotaryRecognitionTest() { FreshGraph(); }
  // An empty graph with the inputs x, cos and sin (for a test that sweeps
  // cases, one graph each).
  void FreshGraph() {
    Graph fresh(17);
    std::swap(g, fresh);
    x = In("x", {batch, 4, seq, 16});
    cos = In("cos", {1, 1, seq, 16});
    sin = In("sin", {1, 1, seq, 16});
    cos8 = sin8 = nullptr;
  }
  // The pipeline makes `ropes` groups, each one rotary node rotating 2*half
  // channels (every two or rotate_half), and no other group.
  void ExpectRotaryGroups(int ropes, int64_t half, bool every_two) {
    absl::StatusOr<PipelineResult> result = RunPipeline(g, env);
    ASSERT_TRUE(result.ok()) << result.status();
    int rotary = 0;
    for (const Group& group : result->fusion.groups) {
      EXPECT_EQ(group.kind, GroupKind::kRotary) << group.ToString();
      rotary += group.kind == GroupKind::kRotary;
      EXPECT_EQ(group.nodes.size(), 1u);
      EXPECT_EQ(group.rotary.every_two, every_two);
      EXPECT_EQ(group.rotary.half, half);
    }
    EXPECT_EQ(rotary, ropes);
  }
  Attributes Axis(int64_t axis) { return Attr("axis", axis); }
  Value* SliceLast(Value* v, int64_t start, int64_t end, bool with_steps = true) {
    if (!with_steps) return Op("Slice", {v, Ints({start}), Ints({end}), Ints({-1})});
    return Op("Slice", {v, Ints({start}), Ints({end}), Ints({3}), Ints({1})});
  }
  // q * cos + rotate_half(q) * sin as the TorchScript exporter writes it;
  // `swapped` puts every commutative operand the other way round and spells
  // the bounds from the end.
  Value* TorchScriptRope(Value* q, bool swapped, Value** neg_out = nullptr) {
    Value* x1 = swapped ? SliceLast(q, 0, -8, false) : SliceLast(q, 0, 8);
    Value* x2 = swapped ? SliceLast(q, -8, kEnd, false) : SliceLast(q, 8, kEnd);
    Value* neg = Op("Neg", {x2});
    if (neg_out) *neg_out = neg;
    Value* rotated = Op("Concat", {neg, x1}, Axis(-1));
    if (swapped) return Op("Add", {Op("Mul", {sin, rotated}), Op("Mul", {cos, q})});
    return Op("Add", {Op("Mul", {q, cos}), Op("Mul", {rotated, sin})});
  }
  // rotate_every_two(q) as GPT-J's exporters write it (stack((-x2, x1), -1)
  // flattened back), times sin, plus q * cos; `swapped` puts every
  // commutative operand the other way round. `pair_axis` -2 stacks the
  // halves instead of interleaving them (a near miss).
  Value* GptJRope(Value* q, Value* c, Value* s, bool swapped, int64_t pair_axis = -1) {
    Value* x1 = Op("Slice", {q, Ints({0}), Ints({kEnd}), Ints({3}), Ints({2})});
    Value* x2 = Op("Slice", {q, Ints({1}), Ints({kEnd}), Ints({-1}), Ints({2})});
    Value* stacked = Op("Concat", {Op("Unsqueeze", {Op("Neg", {x2}), Ints({pair_axis})}),
                                   Op("Unsqueeze", {x1, Ints({pair_axis})})},
                        Axis(pair_axis));
    Value* rotated = Op("Reshape", {stacked, Ints({0, 0, 0, -1})});
    if (swapped) return Op("Add", {Op("Mul", {s, rotated}), Op("Mul", {c, q})});
    return Op("Add", {Op("Mul", {q, c}), Op("Mul", {rotated, s})});
  }
  // q * c + rotate_half(q) * s over q's 2h channels, as TorchScriptRope.
  Value* HalfRope(Value* q, Value* c, Value* s, int64_t h) {
    Value* rotated = Op("Concat", {Op("Neg", {SliceLast(q, h, kEnd)}), SliceLast(q, 0, h)}, Axis(-1));
    return Op("Add", {Op("Mul", {q, c}), Op("Mul", {rotated, s})});
  }
  // Partial rotary: the first 8 of x's 16 channels rotate (cos8 and sin8
  // have 8), the rest pass through; every two as GPT-J, or rotate_half as
  // GPT-NeoX and Phi.
  Value* PartialRope(Value* full, bool every_two = true, Value** head_out = nullptr) {
    if (cos8 == nullptr) {  // graph inputs after x, cos and sin
      cos8 = In("cos8", {1, 1, seq, 8});
      sin8 = In("sin8", {1, 1, seq, 8});
    }
    Value* head = SliceLast(full, 0, 8);
    if (head_out) *head_out = head;
    Value* rope = every_two ? GptJRope(head, cos8, sin8, false) : HalfRope(head, cos8, sin8, 4);
    return Op("Concat", {rope, SliceLast(full, 8, kEnd)}, Axis(-1));
  }
  static const char* RopeOp(bool every_two) { return every_two ? "RotateEveryTwoMulAdd" : "RotateHalfMulAdd"; }
  std::vector<Tensor> Inputs() { return {Random({2, 4, 3, 16}, 1), Random({1, 1, 3, 16}, 2), Random({1, 1, 3, 16}, 3)}; }
  std::vector<Tensor> PartialInputs() {
    std::vector<Tensor> in = Inputs();
    in.push_back(Random({1, 1, 3, 8}, 4));
    in.push_back(Random({1, 1, 3, 8}, 5));
    return in;
  }
  // Rewrites, removes the dead nodes and checks the interpreter's outputs are
  // bit-for-bit those of the decomposed graph.
  void ExpectRewrittenTo(int rope_nodes, const std::string& rope_op = "RotateHalfMulAdd",
                         std::vector<Tensor> in = {}) {
    if (in.empty()) in = Inputs();
    absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
    ASSERT_TRUE(before.ok()) << before.status();
    absl::StatusOr<bool> changed = RecognizeRotaryEmbedding(g, env);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(*changed);
    ASSERT_TRUE(EliminateDeadCode(g).ok());
    EXPECT_EQ(Count(rope_op), rope_nodes);
    for (const char* op : {"Slice", "Neg", "Concat", "Mul", "Add", "Unsqueeze", "Reshape"}) {
      EXPECT_EQ(Count(op), 0) << op;
    }
    ExpectOutputs(g, in, *before, /*tolerance=*/0);
  }
  void ExpectUnchanged() {
    absl::StatusOr<bool> changed = RecognizeRotaryEmbedding(g, env);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_FALSE(*changed);
    EXPECT_EQ(Count("RotateHalfMulAdd"), 0);
    EXPECT_EQ(Count("RotateEveryTwoMulAdd"), 0);
  }
  Value *x, *cos, *sin;
  Value *cos8 = nullptr, *sin8 = nullptr;  // PartialRope's 8-channel tables
};

TEST_F(RotaryRecognitionTest, RewritesTheTorchScriptFormInEitherOperandOrder) {
  for (bool swapped : {false, true}) {
    SCOPED_TRACE(swapped);
    FreshGraph();
    Value* y = TorchScriptRope(x, swapped);
    const std::string name = y->name();
    g.AddOutput(y);
    g.AddOutput(Op("Sigmoid", {x}));  // x has another reader: it is not part of the pattern
    ExpectRewrittenTo(1);
    const Node* rope = g.outputs()[0]->producer();
    ASSERT_EQ(rope->op_type(), "RotateHalfMulAdd");
    EXPECT_EQ(g.outputs()[0]->name(), name);
    EXPECT_EQ(rope->input(0), x);
    EXPECT_EQ(rope->input(1), cos);
    EXPECT_EQ(rope->input(2), sin);
    EXPECT_FALSE(rope->attrs().Has("rotary_dim"));  // all of x rotates: the short form
  }
}

TEST_F(RotaryRecognitionTest, RewritesTheDynamoSplitForm) {
  Node* split = g.AddNode("Split", {x, Ints({8, 8})}, 2, Axis(-1));
  ASSERT_TRUE(InferNode(*split, env, g.opset()).ok());
  Value* rotated = Op("Concat", {Op("Neg", {split->output(1)}), split->output(0)}, Axis(3));
  g.AddOutput(Op("Add", {Op("Mul", {x, cos}), Op("Mul", {rotated, sin})}));
  absl::StatusOr<bool> sliced = SplitToSlices(g, env);
  ASSERT_TRUE(sliced.ok() && *sliced);
  ExpectRewrittenTo(1);
}

TEST_F(RotaryRecognitionTest, FusesIntoOneRotaryGroupPerRope) {
  Value* k = In("k", {batch, 2, seq, 16});
  g.AddOutput(TorchScriptRope(x, false));
  g.AddOutput(TorchScriptRope(k, true));
  ExpectRotaryGroups(2, 8, /*every_two=*/false);
}

TEST_F(RotaryRecognitionTest, LeavesItAloneWhenAnIntermediateIsReadElsewhere) {
  Value* neg = nullptr;
  g.AddOutput(TorchScriptRope(x, false, &neg));
  g.AddOutput(neg);
  ExpectUnchanged();
}

TEST_F(RotaryRecognitionTest, LeavesItAloneWhenTheSlicesAreNotTheHalvesInRotateHalfOrder) {
  // The halves concatenated the other way round: rotate_half(x) would be [-x2, x1].
  Value* x1 = SliceLast(x, 0, 8);
  Value* x2 = SliceLast(x, 8, kEnd);
  Value* reversed = Op("Concat", {Op("Neg", {x1}), x2}, Axis(-1));
  g.AddOutput(Op("Add", {Op("Mul", {x, cos}), Op("Mul", {reversed, sin})}));
  // A split at 7 of 16 is no rotate_half either.
  Value* y1 = SliceLast(x, 0, 7);
  Value* y2 = SliceLast(x, 7, kEnd);
  Value* skewed = Op("Concat", {Op("Neg", {y2}), y1}, Axis(-1));
  g.AddOutput(Op("Add", {Op("Mul", {x, cos}), Op("Mul", {skewed, sin})}));
  ExpectUnchanged();
}

TEST_F(RotaryRecognitionTest, LeavesItAloneWhenCosWidensTheResultOrTheSlicesReadAnotherTensor) {
  Value* narrow = In("narrow", {1, 4, seq, 16});
  Value* wide_cos = In("wide_cos", {batch, 4, seq, 16});
  Value* x1 = SliceLast(narrow, 0, 8);
  Value* x2 = SliceLast(narrow, 8, kEnd);
  Value* rotated = Op("Concat", {Op("Neg", {x2}), x1}, Axis(-1));
  g.AddOutput(Op("Add", {Op("Mul", {narrow, wide_cos}), Op("Mul", {rotated, sin})}));
  Value* other = In("other", {batch, 4, seq, 16});
  Value* o1 = SliceLast(other, 0, 8);
  Value* o2 = SliceLast(other, 8, kEnd);
  Value* rotated_other = Op("Concat", {Op("Neg", {o2}), o1}, Axis(-1));
  g.AddOutput(Op("Add", {Op("Mul", {x, cos}), Op("Mul", {rotated_other, sin})}));
  ExpectUnchanged();
}

// GPT-J: interleaved pairs over the whole head, either operand order.
TEST_F(RotaryRecognitionTest, RewritesGptJsEveryTwoFormInEitherOperandOrder) {
  for (bool swapped : {false, true}) {
    SCOPED_TRACE(swapped);
    FreshGraph();
    Value* y = GptJRope(x, cos, sin, swapped);
    const std::string name = y->name();
    g.AddOutput(y);
    g.AddOutput(Op("Sigmoid", {x}));  // x has another reader: it is not part of the pattern
    ExpectRewrittenTo(1, "RotateEveryTwoMulAdd");
    const Node* rope = g.outputs()[0]->producer();
    ASSERT_EQ(rope->op_type(), "RotateEveryTwoMulAdd");
    EXPECT_EQ(g.outputs()[0]->name(), name);
    EXPECT_EQ(rope->input(0), x);
    EXPECT_EQ(rope->input(1), cos);
    EXPECT_EQ(rope->input(2), sin);
    EXPECT_EQ(rope->attrs().GetInt("rotary_dim").value_or(0), 16);
  }
}

// The partial rotary: Concat(rope(Slice(x, 0:8)), Slice(x, 8:)) is one node
// over the whole head, rotary_dim 8, for either rotation.
TEST_F(RotaryRecognitionTest, RewritesPartialRotaryWithItsPassThroughChannels) {
  for (bool every_two : {true, false}) {
    SCOPED_TRACE(every_two);
    FreshGraph();
    Value* y = PartialRope(x, every_two);
    const std::string name = y->name();
    g.AddOutput(y);
    ExpectRewrittenTo(1, RopeOp(every_two), PartialInputs());
    const Node* rope = g.outputs()[0]->producer();
    ASSERT_EQ(rope->op_type(), RopeOp(every_two));
    EXPECT_EQ(g.outputs()[0]->name(), name);
    EXPECT_EQ(rope->input(0), x);
    EXPECT_EQ(rope->input(1), cos8);
    EXPECT_EQ(rope->input(2), sin8);
    EXPECT_EQ(rope->attrs().GetInt("rotary_dim").value_or(0), 8);
  }
}

TEST_F(RotaryRecognitionTest, FusesPartialRotaryIntoOneRotaryGroupPerRope) {
  for (bool every_two : {true, false}) {
    SCOPED_TRACE(every_two);
    FreshGraph();
    Value* k = In("k", {batch, 2, seq, 16});
    g.AddOutput(PartialRope(x, every_two));
    g.AddOutput(PartialRope(k, every_two));
    ExpectRotaryGroups(2, 4, every_two);
  }
}

// When the rotated head has a reader outside the pattern the head stays, and
// so do the slice and the Concat: only the rope itself is rewritten.
TEST_F(RotaryRecognitionTest, KeepsThePassThroughConcatWhenTheHeadIsReadElsewhere) {
  Value* head = nullptr;
  g.AddOutput(PartialRope(x, /*every_two=*/true, &head));
  g.AddOutput(Op("Sigmoid", {head}));
  std::vector<Tensor> in = PartialInputs();
  absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
  ASSERT_TRUE(before.ok()) << before.status();
  absl::StatusOr<bool> changed = RecognizeRotaryEmbedding(g, env);
  ASSERT_TRUE(changed.ok() && *changed);
  ASSERT_TRUE(EliminateDeadCode(g).ok());
  EXPECT_EQ(Count("RotateEveryTwoMulAdd"), 1);
  EXPECT_EQ(Count("Concat"), 1);
  EXPECT_EQ(Count("Slice"), 2);
  const Node* cat = g.outputs()[0]->producer();
  ASSERT_EQ(cat->op_type(), "Concat");
  const Node* rope = cat->input(0)->producer();
  ASSERT_EQ(rope->op_type(), "RotateEveryTwoMulAdd");
  EXPECT_EQ(rope->input(0), head);
  EXPECT_EQ(rope->attrs().GetInt("rotary_dim").value_or(0), 8);
  ExpectOutputs(g, in, *before, /*tolerance=*/0);
}

TEST_F(RotaryRecognitionTest, LeavesEveryTwoAloneWhenThePairsAreNotInterleavedOrAnIntermediateIsReadElsewhere) {
  // Stacked on axis -2: the flatten gives [-x2, x1] (halves of the strided
  // slices), no interleaving.
  g.AddOutput(GptJRope(x, cos, sin, false, /*pair_axis=*/-2));
  // The pair in the other order: [x1, -x2] per pair.
  Value* x1 = Op("Slice", {x, Ints({0}), Ints({kEnd}), Ints({3}), Ints({2})});
  Value* x2 = Op("Slice", {x, Ints({1}), Ints({kEnd}), Ints({3}), Ints({2})});
  Value* swapped = Op("Concat", {Op("Unsqueeze", {x1, Ints({-1})}), Op("Unsqueeze", {Op("Neg", {x2}), Ints({-1})})},
                      Axis(-1));
  g.AddOutput(Op("Add", {Op("Mul", {x, cos}), Op("Mul", {Op("Reshape", {swapped, Ints({0, 0, 0, -1})}), sin})}));
  // The strided slices' roles exchanged: [-x0, x1] per pair is no rotation.
  Value* y1 = Op("Slice", {x, Ints({1}), Ints({kEnd}), Ints({3}), Ints({2})});
  Value* y2 = Op("Slice", {x, Ints({0}), Ints({kEnd}), Ints({3}), Ints({2})});
  Value* skewed = Op("Concat", {Op("Unsqueeze", {Op("Neg", {y2}), Ints({-1})}), Op("Unsqueeze", {y1, Ints({-1})})},
                     Axis(-1));
  g.AddOutput(Op("Add", {Op("Mul", {x, cos}), Op("Mul", {Op("Reshape", {skewed, Ints({0, 0, 0, -1})}), sin})}));
  ExpectUnchanged();
}

TEST_F(RotaryRecognitionTest, LeavesEveryTwoAloneWhenTheNegatedHalfIsReadElsewhere) {
  Value* q = In("q", {batch, 4, seq, 16});
  Value* x1 = Op("Slice", {q, Ints({0}), Ints({kEnd}), Ints({3}), Ints({2})});
  Value* x2 = Op("Slice", {q, Ints({1}), Ints({kEnd}), Ints({3}), Ints({2})});
  Value* neg = Op("Neg", {x2});
  Value* stacked = Op("Concat", {Op("Unsqueeze", {neg, Ints({-1})}), Op("Unsqueeze", {x1, Ints({-1})})}, Axis(-1));
  g.AddOutput(Op("Add", {Op("Mul", {q, cos}), Op("Mul", {Op("Reshape", {stacked, Ints({0, 0, 0, -1})}), sin})}));
  g.AddOutput(neg);
  ExpectUnchanged();
}

}  // namespace
}  // namespace shapeshift::passes
