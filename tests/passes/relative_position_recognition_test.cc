// relative-position-recognition: T5's and DeBERTa's relative-position
// buckets are computed once per difference j - i (S + T - 1 values) and
// read by their consumers through RelativePositionExpand; the rewritten
// graph gives bit for bit the original's outputs; near misses stay as
// they are; fusion puts the expansions into the softmax and gather
// kernels, so no [S, T]-sized tensor is stored.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "passes/dce.h"
#include "passes/fusion.h"
#include "passes/relative_position_recognition.h"
#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

using testing::ExpectOutputs;
using testing::PassTest;

constexpr float kMin = std::numeric_limits<float>::lowest();

class RelativePositionTest : public PassTest {
 protected:
  RelativePositionTest() {
    x = In("x", {batch, 4, seq, seq});
    pad = In("pad", {batch, 1, 1, seq}, DType::kBool);
  }
  Value* I64(int64_t v) { return g.AddConstant("", Tensor::ScalarI64(v)); }
  Value* F32(float v) { return Scalar(v); }
  Value* Seq() { return Op("Gather", {Op("Shape", {x}), I64(2)}); }
  Value* Unsqueeze(Value* v, std::vector<int64_t> axes) { return Op("Unsqueeze", {v, Ints(std::move(axes))}); }
  Value* Positions(int64_t start = 0) {
    Value* limit = start == 0 ? Seq() : Op("Add", {Seq(), I64(start)});
    return Op("Range", {I64(start), limit, I64(1)});
  }
  Value* Cast(Value* v, int64_t to) { return Op("Cast", {v}, Attr("to", to)); }

  // transformers' T5 `_relative_position_bucket` (bidirectional, 32 buckets,
  // max distance 128), as the TorchScript exporter spells it.
  Value* T5Bucket(Value* rel) {
    Value* sign = Op("Mul", {Cast(Op("Greater", {rel, I64(0)}), 7), I64(16)});
    Value* abs = Op("Abs", {rel});
    Value* small = Op("Less", {abs, I64(8)});
    Value* scaled = Op("Div", {Cast(abs, 1), F32(8.0f)});
    Value* log = Op("Div", {Op("Log", {scaled}), F32(2.7725887f)});
    Value* large = Op("Add", {Cast(Op("Mul", {log, F32(8.0f)}), 7), I64(8)});
    Value* fill = Op("ConstantOfShape", {Op("Shape", {large})},
                     Attr("value", Tensor::FromVector<int64_t>(DType::kI64, {1}, {15})));
    return Op("Add", {sign, Op("Where", {small, abs, Op("Min", {large, fill})})});
  }
  // T5's bias: table[bucket(j - i)] as [1, heads, S, T], under the padding.
  Value* T5Bias(Value* rows, Value* cols) {
    Value* rel = Op("Sub", {Unsqueeze(cols, {0}), Unsqueeze(rows, {1})});
    Value* table = Floats({32, 4}, [] {
      std::vector<float> t(128);
      for (int k = 0; k < 128; ++k) t[k] = 0.25f * static_cast<float>((k * 37) % 19) - 2.0f;
      return t;
    }());
    Value* bias = Op("Gather", {table, T5Bucket(rel)});
    bias = Unsqueeze(Op("Transpose", {bias}, Attr("perm", std::vector<int64_t>{2, 0, 1})), {0});
    return Op("Where", {pad, bias, F32(kMin)});
  }

  // Inputs at sequence lengths 1, 7, 13, 2 (odd and even; batch 2, row 1
  // padded after its first key).
  std::vector<std::vector<Tensor>> InputSets() {
    std::vector<std::vector<Tensor>> sets;
    for (int64_t s : {int64_t{1}, int64_t{7}, int64_t{13}, int64_t{2}}) {
      Tensor mask = Tensor::Zeros(DType::kBool, {2, 1, 1, s}).value();
      for (int64_t k = 0; k < 2 * s; ++k) mask.mutable_data<uint8_t>()[k] = k < s || k == s;
      std::vector<Tensor> set = {Random({2, 4, s, s}, static_cast<uint32_t>(s)), mask};
      for (size_t i = 2; i < g.inputs().size(); ++i) {
        std::vector<int64_t> shape;
        for (SymExpr d : g.inputs()[i]->type().shape) {
          shape.push_back(d.Evaluate({{"batch", 2}, {"seq", s}}).value());
        }
        set.push_back(Random(shape, static_cast<uint32_t>(100 + i)));
      }
      sets.push_back(set);
    }
    return sets;
  }

  // Rewrites, removes what died, and checks bit for bit the original outputs.
  void ExpectRewritten(int expansions) {
    std::vector<std::vector<Tensor>> sets = InputSets();
    std::vector<std::vector<Tensor>> before;
    for (const std::vector<Tensor>& in : sets) {
      absl::StatusOr<std::vector<Tensor>> out = Interpret(g, in);
      ASSERT_TRUE(out.ok()) << out.status();
      before.push_back(*out);
    }
    absl::StatusOr<bool> changed = RecognizeRelativePositions(g, env);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(*changed);
    ASSERT_TRUE(EliminateDeadCode(g).ok());
    ASSERT_TRUE(g.Verify().ok()) << g.Verify();
    EXPECT_EQ(Count("RelativePositionExpand"), expansions);
    // The bucket function runs on the S + T - 1 differences only.
    for (const Node* n : g.nodes()) {
      for (const char* op : {"Log", "Abs", "Sign", "Clip", "Sub", "Gather"}) {
        if (n->op_type() != op || n->output(0)->type().rank() == 0) continue;
        int seq_dims = 0;
        for (SymExpr d : n->output(0)->type().shape) seq_dims += d == seq;
        EXPECT_EQ(seq_dims, 0) << op << " " << n->output(0)->type().ToString();
      }
    }
    for (size_t k = 0; k < sets.size(); ++k) ExpectOutputs(g, sets[k], before[k], /*tolerance=*/0);
  }

  // No group stores a value with two dims of `seq` except `allowed`.
  void ExpectNoSquareIntermediates(const std::vector<const Value*>& allowed) {
    absl::StatusOr<FusionPlan> plan = PlanFusion(g, env);
    ASSERT_TRUE(plan.ok()) << plan.status();
    for (const Group& group : plan->groups) {
      for (const Value* out : group.outputs) {
        int seq_dims = 0;
        for (SymExpr d : out->type().shape) seq_dims += d == seq;
        if (seq_dims < 2 || std::find(allowed.begin(), allowed.end(), out) != allowed.end()) continue;
        ADD_FAILURE() << group.ToString();
      }
    }
  }
  void ExpectUnchanged() {
    absl::StatusOr<bool> changed = RecognizeRelativePositions(g, env);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_FALSE(*changed);
    EXPECT_EQ(Count("RelativePositionExpand"), 0);
  }

  Value *x, *pad;
};

// T5: one bias built once, added to two layers' scores (q·kᵀ) before each
// Softmax. Each layer's softmax computes its bias from the loop indices.
TEST_F(RelativePositionTest, T5BiasIsComputedPerDifferenceAndReadBySoftmax) {
  Value* bias = T5Bias(Positions(), Positions());
  std::vector<const Value*> allowed;
  for (int layer = 0; layer < 2; ++layer) {
    Value* q = In("q" + std::to_string(layer), {batch, 4, seq, 16});
    Value* k = In("k" + std::to_string(layer), {batch, 4, 16, seq});
    Value* scores = Op("MatMul", {q, k});
    allowed.push_back(scores);
    Value* probs = Op("Softmax", {Op("Add", {scores, bias})}, Attr("axis", int64_t{-1}));
    allowed.push_back(probs);
    g.AddOutput(probs);
  }
  ExpectRewritten(2);
  // The two layers' Where(pad, bias, min) each in their softmax's kernel:
  // only the scores and the probabilities are stored.
  ExpectNoSquareIntermediates(allowed);
  absl::StatusOr<FusionPlan> plan = PlanFusion(g, env);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int softmaxes = 0;
  for (const Group& group : plan->groups) {
    if (group.kind == GroupKind::kMatmul) EXPECT_EQ(group.matmul.residual, nullptr) << group.ToString();
    if (group.kind != GroupKind::kSoftmax) continue;
    ++softmaxes;
    int expands = 0;
    for (const Node* n : group.nodes) expands += n->op_type() == "RelativePositionExpand";
    EXPECT_EQ(expands, 1) << group.ToString();
  }
  EXPECT_EQ(softmaxes, 2);
}

// Offsets: the query positions start at 3 and the keys are shifted by a
// known scalar; the differences' range starts where the matrix's does.
TEST_F(RelativePositionTest, ShiftedPositionsKeepTheirDifferences) {
  Value* cols = Op("Add", {Positions(), I64(5)});
  g.AddOutput(Op("Softmax", {Op("Add", {x, T5Bias(Positions(3), cols)})}, Attr("axis", int64_t{-1})));
  ExpectRewritten(1);
}

// DeBERTa-v2: rel = q - k, its log bucket, an identity slice, and per layer
// Clip(rel + span, 0, 2·span - 1) expanded over the heads as GatherElements'
// indices into [batch·heads, S, 2·span] position scores (c2p) and its
// negation (p2c).
TEST_F(RelativePositionTest, DebertaIndicesAreReadByTheGathers) {
  Value* r = Positions();
  Value* rel = Op("Sub", {Unsqueeze(r, {1}), Unsqueeze(r, {0})});
  Value* sign = Op("Sign", {rel});
  Value* mid = Op("And", {Op("Less", {rel, I64(4)}), Op("Greater", {rel, I64(-4)})});
  Value* abs = Op("Where", {mid, I64(3), Op("Abs", {rel})});
  Value* log = Op("Ceil", {Op("Mul", {Op("Div", {Op("Log", {Op("Div", {Cast(abs, 1), F32(4.0f)})}), F32(1.3f)}),
                                     F32(3.0f)})});
  Value* bucket = Op("Where", {Op("LessOrEqual", {abs, I64(4)}), Cast(rel, 1),
                               Op("Mul", {Op("Add", {log, F32(4.0f)}), Cast(sign, 1)})});
  Value* pos = Op("Slice", {Cast(bucket, 7), Ints({0}), Op("Unsqueeze", {Seq(), Ints({0})}), Ints({0}), Ints({1})});
  pos = Unsqueeze(pos, {0});
  Value* heads = In("heads", {4 * batch, seq, seq});
  for (int layer = 0; layer < 2; ++layer) {
    Value* scores = In("pos_scores" + std::to_string(layer), {4 * batch, seq, 16});
    Value* shape = Op("Shape", {heads});
    Value* p = Unsqueeze(pos, {0});
    Value* c2p = Op("Squeeze", {Op("Clip", {Op("Add", {p, I64(8)}), I64(0), I64(15)}), Ints({0})});
    Value* p2c = Op("Squeeze", {Op("Clip", {Op("Add", {Op("Neg", {p}), I64(8)}), I64(0), I64(15)}), Ints({0})});
    Value* a = Op("GatherElements", {scores, Op("Expand", {c2p, shape})}, Attr("axis", int64_t{-1}));
    Value* b = Op("GatherElements", {scores, Op("Expand", {p2c, shape})}, Attr("axis", int64_t{-1}));
    g.AddOutput(Op("Add", {Op("Add", {heads, a}), Op("Transpose", {b}, Attr("perm", std::vector<int64_t>{0, 2, 1}))}));
  }
  ExpectRewritten(4);
  // Only the gathered scores and the sums are [.., seq, seq]: no index tensor.
  absl::StatusOr<FusionPlan> plan = PlanFusion(g, env);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int gathers = 0;
  for (const Group& group : plan->groups) {
    for (const Value* out : group.outputs) {
      if (out->type().dtype == DType::kI64) {
        int seq_dims = 0;
        for (SymExpr d : out->type().shape) seq_dims += d == seq;
        EXPECT_LT(seq_dims, 2) << group.ToString();
      }
    }
    if (group.nodes.back()->op_type() != "GatherElements") continue;
    ++gathers;
    EXPECT_EQ(group.nodes.size(), 3u) << group.ToString();  // RelativePositionExpand, Expand, GatherElements
  }
  EXPECT_EQ(gathers, 4);
}

// Near misses: positions of step 2, a difference along one axis, an operand
// that varies along S and T, and a transpose that swaps S and T stop the
// region where they stand.
TEST_F(RelativePositionTest, StepTwoPositionsAreLeftAlone) {
  Value* r = Op("Range", {I64(0), Op("Mul", {Seq(), I64(2)}), I64(2)});
  Value* rel = Op("Sub", {Unsqueeze(r, {0}), Unsqueeze(r, {1})});
  g.AddOutput(Op("Add", {x, Cast(Op("Abs", {rel}), 1)}));
  ExpectUnchanged();
}

TEST_F(RelativePositionTest, DifferencesAlongOneAxisAreLeftAlone) {
  Value* r = Positions();
  Value* rel = Op("Sub", {Unsqueeze(r, {0}), Unsqueeze(Positions(), {0})});  // [1, seq]: no matrix
  g.AddOutput(Op("Add", {x, Cast(Op("Abs", {rel}), 1)}));
  ExpectUnchanged();
}

TEST_F(RelativePositionTest, AnOperandVaryingAlongRowsStopsTheRegion) {
  Value* r = Positions();
  Value* rel = Op("Sub", {Unsqueeze(r, {0}), Unsqueeze(r, {1})});
  Value* noise = In("noise", {seq, seq}, DType::kI64);
  g.AddOutput(Op("Add", {x, Cast(Op("Abs", {Op("Add", {rel, noise})}), 1)}));
  ExpectUnchanged();
}

TEST_F(RelativePositionTest, ASwapOfRowsAndColumnsStopsTheRegion) {
  Value* r = Positions();
  Value* rel = Op("Sub", {Unsqueeze(r, {0}), Unsqueeze(r, {1})});
  Value* swapped = Op("Transpose", {rel}, Attr("perm", std::vector<int64_t>{1, 0}));
  g.AddOutput(Op("Add", {x, Cast(Op("Abs", {swapped}), 1)}));
  ExpectUnchanged();
}

// A region whose value is a graph output keeps it (its name is visible);
// the region before it is still rewritten, and the output matches.
TEST_F(RelativePositionTest, AGraphOutputInTheRegionStaysComputed) {
  Value* r = Positions();
  Value* rel = Op("Sub", {Unsqueeze(r, {0}), Unsqueeze(r, {1})});
  Value* abs = Op("Abs", {rel});
  g.AddOutput(Op("Neg", {abs}));
  g.AddOutput(Op("Add", {x, Cast(abs, 1)}));
  ExpectRewritten(2);  // Abs for the Neg, Cast for the Add
  for (const Node* n : g.nodes()) {
    if (n->op_type() == "Neg") EXPECT_EQ(n->input(0)->producer()->op_type(), "RelativePositionExpand");
  }
}

}  // namespace
}  // namespace shapeshift::passes
