#include "passes/fusion.h"

#include "gmock/gmock.h"

#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

using testing::PassTest;

class FusionTest : public PassTest {
 protected:
  FusionPlan Plan() {
    absl::StatusOr<FusionPlan> plan = PlanFusion(g, env);
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? *std::move(plan) : FusionPlan{};
  }
  Value* Weights(int64_t k, int64_t n) { return Floats({k, n}, std::vector<float>(k * n, 0.5f)); }
  Value* GeluErf(Value* x) { return Op("Gelu", {x}); }
  Value* GeluTanh(Value* x) { return Op("Gelu", {x}, Attr("approximate", std::string("tanh"))); }
};

TEST_F(FusionTest, MatmulAbsorbsScaleBiasGeluAndResidual) {
  Value* x = In("x", {batch, seq, 4});
  Value* r = In("r", {batch, seq, 8});
  Value* mm = Op("MatMul", {x, Weights(4, 8)});
  Value* scaled = Op("Div", {mm, Scalar(2)});
  Value* biased = Op("Add", {Floats({8}, std::vector<float>(8, 0.1f)), scaled});
  Value* y = Op("Add", {GeluErf(biased), r});
  g.AddOutput(y);
  FusionPlan plan = Plan();
  ASSERT_EQ(plan.groups.size(), 1u) << plan.ToString();
  const Group& group = plan.groups[0];
  EXPECT_EQ(group.kind, GroupKind::kMatmul);
  EXPECT_EQ(group.matmul.a, x);
  EXPECT_TRUE(group.matmul.b_is_2d);
  EXPECT_FLOAT_EQ(group.matmul.scale, 0.5f);
  ASSERT_NE(group.matmul.bias, nullptr);
  EXPECT_EQ(group.matmul.activation, GeluForm::kErf);
  EXPECT_EQ(group.matmul.residual, r);
  EXPECT_EQ(group.outputs, std::vector<Value*>{y});
}

// A long chain is split into groups of at most kMaxGroupNodes (the depth
// of the kernel each becomes), consecutive and complete; a reduction's
// epilogue is capped the same way.
TEST_F(FusionTest, LongChainsAreSplitIntoGroupsOfAtMostKMaxGroupNodes) {
  constexpr int kLength = 1000;
  Value* x = In("x", {batch, seq, 4});
  for (int i = 0; i < kLength; ++i) x = Op(i % 2 ? "Relu" : "Neg", {x});
  Value* r = Op("ReduceSum", {x, Ints({-1})});
  for (int i = 0; i < 300; ++i) r = Op("Neg", {r});
  g.AddOutput(r);
  FusionPlan plan = Plan();
  int64_t nodes = 0;
  for (const Group& group : plan.groups) {
    EXPECT_LE(group.nodes.size(), static_cast<size_t>(kMaxGroupNodes)) << group.ToString();
    nodes += static_cast<int64_t>(group.nodes.size());
  }
  EXPECT_EQ(nodes, kLength + 1 + 300);
  EXPECT_EQ(plan.groups.size(), static_cast<size_t>((kLength + kMaxGroupNodes - 1) / kMaxGroupNodes +
                                                    (300 + 1 + kMaxGroupNodes - 1) / kMaxGroupNodes))
      << plan.ToString();
  EXPECT_TRUE(VerifyFusionPlan(g, plan).ok());
}

TEST_F(FusionTest, SharedMatmulOutputStopsTheEpilogue) {
  Value* x = In("x", {seq, 4});
  Value* biased = Op("Add", {Op("MatMul", {x, Weights(4, 8)}), Floats({8}, std::vector<float>(8, 0.1f))});
  g.AddOutput(GeluErf(biased));
  g.AddOutput(Op("Neg", {biased}));  // a second reader of the biased value
  FusionPlan plan = Plan();
  const Group& mm = plan.groups[0];
  EXPECT_EQ(mm.kind, GroupKind::kMatmul);
  EXPECT_EQ(mm.matmul.activation, GeluForm::kNone);
  EXPECT_EQ(mm.outputs, std::vector<Value*>{biased});
  // The Gelu is its own elementwise group; biased is stored once.
  int gelu_groups = 0;
  for (const Group& g2 : plan.groups) {
    if (g2.kind == GroupKind::kElementwise && g2.nodes.size() == 1 && g2.nodes[0]->op_type() == "Gelu") ++gelu_groups;
  }
  EXPECT_EQ(gelu_groups, 1) << plan.ToString();
}

TEST_F(FusionTest, TanhGeluAfterBiasIsTheTanhPostOp) {
  Value* x = In("x", {seq, 4});
  Value* biased = Op("Add", {Op("MatMul", {x, Weights(4, 8)}), Floats({8}, std::vector<float>(8, 0.1f))});
  g.AddOutput(GeluTanh(biased));
  FusionPlan plan = Plan();
  ASSERT_EQ(plan.groups.size(), 1u) << plan.ToString();
  EXPECT_EQ(plan.groups[0].matmul.activation, GeluForm::kTanh);
  EXPECT_EQ(plan.groups[0].nodes.size(), 3u);
}

TEST_F(FusionTest, AttentionScoresTransposedBAndMaskedSoftmax) {
  Value* q = In("q", {batch, 4, seq, 16});
  Value* k = In("k", {batch, 4, seq, 16});
  Value* mask = In("mask", {batch, 1, 1, seq});
  Value* kt = Op("Transpose", {k}, Attr("perm", std::vector<int64_t>{0, 1, 3, 2}));
  Value* scores = Op("MatMul", {q, kt});
  Value* masked = Op("Add", {Op("Mul", {scores, Scalar(0.25f)}), mask});
  Value* probs = Op("Softmax", {masked}, Attr("axis", int64_t{-1}));
  g.AddOutput(probs);
  FusionPlan plan = Plan();
  ASSERT_EQ(plan.groups.size(), 2u) << plan.ToString();
  EXPECT_EQ(plan.groups[0].kind, GroupKind::kMatmul);
  EXPECT_TRUE(plan.groups[0].matmul.transpose_b);
  EXPECT_EQ(plan.groups[0].matmul.b, k);
  EXPECT_FLOAT_EQ(plan.groups[0].matmul.scale, 0.25f);  // the matmul takes the scale first
  EXPECT_EQ(plan.groups[1].kind, GroupKind::kSoftmax);
  EXPECT_EQ(plan.groups[1].softmax.mask, mask);
}

// Shared-QK attention (one projection for queries and keys, X·Xᵀ): Q and K
// are one value behind one head transpose, which the attention absorbs once;
// both read its input through strides.
TEST_F(FusionTest, AttentionWithSharedQueriesAndKeysAbsorbsTheirTransposeOnce) {
  Value* x = In("x", {batch, seq, 4, 16});
  Value* v = In("v", {batch, 4, seq, 16});
  Value* heads = Op("Transpose", {x}, Attr("perm", std::vector<int64_t>{0, 2, 1, 3}));
  Value* scores = Op("MatMul", {heads, Op("Transpose", {heads}, Attr("perm", std::vector<int64_t>{0, 1, 3, 2}))});
  Value* probs = Op("Softmax", {Op("Mul", {scores, Scalar(0.25f)})}, Attr("axis", int64_t{-1}));
  g.AddOutput(Op("MatMul", {probs, v}));
  FusionPlan plan = Plan();
  ASSERT_EQ(plan.groups.size(), 1u) << plan.ToString();
  const Group& attention = plan.groups[0];
  ASSERT_EQ(attention.kind, GroupKind::kAttention) << plan.ToString();
  EXPECT_EQ(attention.attention.q, x);
  EXPECT_EQ(attention.attention.k, x);
  EXPECT_TRUE(attention.attention.q_seq_major && attention.attention.k_seq_major);
  EXPECT_EQ(attention.attention.v, v);
  EXPECT_FALSE(attention.attention.v_seq_major || attention.attention.out_seq_major);
  EXPECT_FLOAT_EQ(attention.attention.scale, 0.25f);
  std::vector<Value*> data;  // the inputs besides the scale's constant
  for (Value* in : attention.inputs) {
    if (!in->is_constant()) data.push_back(in);
  }
  EXPECT_EQ(data, (std::vector<Value*>{x, v}));
}

TEST_F(FusionTest, SoftmaxAbsorbsScaleWhenNoMatmulPrecedes) {
  Value* s = In("s", {batch, seq, seq});
  Value* mask = In("mask", {batch, 1, seq});
  Value* probs = Op("Softmax", {Op("Add", {mask, Op("Div", {s, Scalar(8)})})}, Attr("axis", int64_t{2}));
  g.AddOutput(probs);
  FusionPlan plan = Plan();
  ASSERT_EQ(plan.groups.size(), 1u) << plan.ToString();
  EXPECT_EQ(plan.groups[0].softmax.x, s);
  EXPECT_FLOAT_EQ(plan.groups[0].softmax.scale, 0.125f);
  EXPECT_EQ(plan.groups[0].softmax.mask, mask);
}

// ALiBi under a CausalSoftmax: BLOOM's Reshape(scores [4·b, S, S] + bias
// [4·b, 1, S]) → [b, 4, S, S] and MPT's scores [b, 4, S, S] + [1, 4, 1, S]
// join the softmax group (the views too, which would otherwise anchor view
// groups of their own), with the bias recorded; the x the group computes is
// the softmax's input. Near misses: a sum also read elsewhere, and a view
// with no Add under it, stay out.
TEST_F(FusionTest, CausalSoftmaxAbsorbsAnAlibiBiasUnderViews) {
  Value* pad = In("pad", {batch, 1, 1, seq});
  Attributes fill = Attr("fill", -1e30f);
  Value* bloom_scores = In("bloom_scores", {4 * batch, seq, seq});
  Value* bloom_bias = In("bloom_bias", {4 * batch, 1, seq});
  Value* target = Op("Concat", {Ints({-1, 4}), Op("Slice", {Op("Shape", {bloom_scores}), Ints({1}), Ints({3})})},
                     Attr("axis", int64_t{0}));
  Value* bloom_x = Op("Reshape", {Op("Add", {bloom_scores, bloom_bias}), target});
  g.AddOutput(Op("CausalSoftmax", {bloom_x, pad}, fill));
  Value* mpt_scores = In("mpt_scores", {batch, 4, seq, seq});
  Value* mpt_bias = In("mpt_bias", {1, 4, 1, seq});
  g.AddOutput(Op("CausalSoftmax", {Op("Add", {mpt_bias, mpt_scores}), pad}, fill));
  Value* shared = Op("Add", {mpt_scores, mpt_bias});
  g.AddOutput(Op("CausalSoftmax", {shared, pad}, fill));
  g.AddOutput(shared);
  g.AddOutput(Op("CausalSoftmax", {Op("Reshape", {bloom_scores, target}), pad}, fill));
  FusionPlan plan = Plan();
  std::vector<const Group*> softmaxes;
  int views = 0;
  for (const Group& group : plan.groups) {
    if (group.kind == GroupKind::kSoftmax) softmaxes.push_back(&group);
    views += group.kind == GroupKind::kView;
  }
  ASSERT_EQ(softmaxes.size(), 4u) << plan.ToString();
  EXPECT_EQ(softmaxes[0]->softmax.bias, bloom_bias);
  EXPECT_EQ(softmaxes[0]->softmax.x, bloom_x);
  EXPECT_EQ(softmaxes[0]->nodes.size(), 3u) << softmaxes[0]->ToString();  // Add, Reshape, CausalSoftmax
  EXPECT_EQ(softmaxes[0]->inputs, (std::vector<Value*>{bloom_scores, bloom_bias, pad}));
  EXPECT_EQ(softmaxes[1]->softmax.bias, mpt_bias);
  EXPECT_EQ(softmaxes[1]->nodes.size(), 2u) << softmaxes[1]->ToString();
  EXPECT_EQ(softmaxes[2]->softmax.bias, nullptr);  // its sum is a graph output
  EXPECT_EQ(softmaxes[2]->nodes.size(), 1u) << softmaxes[2]->ToString();
  EXPECT_EQ(softmaxes[3]->softmax.bias, nullptr);  // a view and no Add
  EXPECT_EQ(softmaxes[3]->nodes.size(), 1u) << softmaxes[3]->ToString();
  EXPECT_EQ(views, 1) << plan.ToString();
}

TEST_F(FusionTest, LayerNormAbsorbsResidualAndStoresASharedSum) {
  Value* a = In("a", {batch, seq, 8});
  Value* b = In("b", {batch, seq, 8});
  Value* sum = Op("Add", {a, b});
  Value* ln = Op("LayerNormalization", {sum, Floats({8}, std::vector<float>(8, 1)), Floats({8}, std::vector<float>(8, 0))},
                 Attr("epsilon", 1e-5f));
  g.AddOutput(ln);
  g.AddOutput(Op("Neg", {sum}));
  FusionPlan plan = Plan();
  const Group& group = plan.groups[0];
  EXPECT_EQ(group.kind, GroupKind::kLayerNorm);
  EXPECT_EQ(group.layer_norm.x, a);
  EXPECT_EQ(group.layer_norm.residual, b);
  EXPECT_EQ(group.layer_norm.sum_output, sum);
  EXPECT_EQ(group.outputs.size(), 2u);
}

TEST_F(FusionTest, ElementwiseChainIsOneGroupButMultiUseProducersAreStoredOnce) {
  Value* mask = In("mask", {batch, seq}, DType::kI64);
  Value* f = Op("Cast", {mask}, Attr("to", int64_t{1}));
  Value* inv = Op("Mul", {Op("Sub", {Scalar(1), f}), Scalar(-10000)});
  Value* shared = Op("Exp", {inv});
  g.AddOutput(Op("Neg", {shared}));
  g.AddOutput(Op("Abs", {shared}));
  FusionPlan plan = Plan();
  ASSERT_EQ(plan.groups.size(), 3u) << plan.ToString();
  const Group& chain = plan.groups[0];
  EXPECT_EQ(chain.kind, GroupKind::kElementwise);
  EXPECT_EQ(chain.nodes.size(), 4u);  // Cast, Sub, Mul, Exp
  EXPECT_EQ(chain.outputs, std::vector<Value*>{shared});
  EXPECT_EQ(chain.elementwise.domain, (std::vector<SymExpr>{batch, seq}));
  EXPECT_EQ(plan.groups[1].inputs, std::vector<Value*>{shared});
  EXPECT_EQ(plan.groups[2].inputs, std::vector<Value*>{shared});
}

TEST_F(FusionTest, ProducersWithASmallerDomainAreNotRecomputedPerElement) {
  Value* x = In("x", {batch, seq, 8});
  Value* m = In("m", {batch, 1, 8});
  Value* small = Op("Exp", {m});
  g.AddOutput(Op("Add", {x, small}));
  FusionPlan plan = Plan();
  ASSERT_EQ(plan.groups.size(), 2u) << plan.ToString();
  EXPECT_EQ(plan.groups[0].elementwise.domain, (std::vector<SymExpr>{batch, 1, 8}));
}

// A CumSum (the op table's scan class) is a group of its own, kScan, that
// elementwise producers and consumers do not join.
TEST_F(FusionTest, CumSumIsAScanGroup) {
  Value* mask = In("mask", {batch, seq}, DType::kI64);
  Value* count = Op("CumSum", {Op("Mul", {mask, mask}), Ints({1})});
  g.AddOutput(Op("Sub", {count, mask}));
  FusionPlan plan = Plan();
  std::vector<GroupKind> kinds;
  for (const Group& group : plan.groups) kinds.push_back(group.kind);
  EXPECT_EQ(kinds, (std::vector<GroupKind>{GroupKind::kElementwise, GroupKind::kScan, GroupKind::kElementwise}))
      << plan.ToString();
  EXPECT_TRUE(VerifyFusionPlan(g, plan).ok());
}

TEST_F(FusionTest, ViewsTransposesGathersAndUnsupportedOps) {
  Value* ids = In("ids", {batch, seq}, DType::kI64);
  Value* table = Floats({10, 4}, std::vector<float>(40, 1));
  Value* emb = Op("Gather", {table, ids});
  Value* r = Op("Reshape", {emb, Ints({0, -1})});
  Value* t = Op("Transpose", {emb}, Attr("perm", std::vector<int64_t>{1, 0, 2}));
  Value* am = Op("GatherElements", {r, ids}, Attr("axis", int64_t{1}));  // no fused kind: kOther
  g.AddOutput(Op("Neg", {t}));
  g.AddOutput(am);
  g.AddOutput(Op("Reshape", {emb, Ints({-1})}));  // a view that is a graph output copies
  FusionPlan plan = Plan();
  std::vector<GroupKind> kinds;
  for (const Group& group : plan.groups) kinds.push_back(group.kind);
  EXPECT_EQ(kinds, (std::vector<GroupKind>{GroupKind::kGather, GroupKind::kView, GroupKind::kTranspose,
                                           GroupKind::kOther, GroupKind::kElementwise, GroupKind::kCopy}))
      << plan.ToString();
  EXPECT_TRUE(VerifyFusionPlan(g, plan).ok());
}

TEST_F(FusionTest, GemmMapsTransBAlphaAndBias) {
  Value* x = In("x", {batch, 4});
  Attributes attrs;
  attrs.Set("transB", int64_t{1});
  attrs.Set("alpha", 0.5f);
  Value* y = Op("Gemm", {x, Weights(8, 4), Floats({8}, std::vector<float>(8, 1))}, attrs);
  g.AddOutput(y);
  FusionPlan plan = Plan();
  ASSERT_EQ(plan.groups.size(), 1u);
  const MatmulGroup& mm = plan.groups[0].matmul;
  EXPECT_EQ(plan.groups[0].kind, GroupKind::kMatmul);
  EXPECT_TRUE(mm.transpose_b);
  EXPECT_TRUE(mm.b_is_2d);
  EXPECT_FLOAT_EQ(mm.scale, 0.5f);
  EXPECT_NE(mm.bias, nullptr);
}

TEST_F(FusionTest, GemmWithBiasTakesNoScaleOrSecondBiasAfterIt) {
  Value* x = In("x", {batch, 4});
  Value* c = Floats({8}, std::vector<float>(8, 1));
  Value* gemm = Op("Gemm", {x, Weights(4, 8), c});
  Value* scaled = Op("Mul", {gemm, Scalar(3)});
  g.AddOutput(Op("Add", {scaled, Floats({8}, std::vector<float>(8, 2))}));
  FusionPlan plan = Plan();
  ASSERT_EQ(plan.groups.size(), 2u) << plan.ToString();
  EXPECT_EQ(plan.groups[0].matmul.bias, c);
  EXPECT_FLOAT_EQ(plan.groups[0].matmul.scale, 1.0f);
  EXPECT_EQ(plan.groups[0].outputs, std::vector<Value*>{gemm});
  EXPECT_EQ(plan.groups[1].kind, GroupKind::kElementwise);
}

TEST_F(FusionTest, SliceWithSymbolicStartsIsAStridedCopy) {
  SymExpr past = env.DeclareSymbol({"past", 0, 32}).value();
  Value* cache = In("cache", {batch, past + seq, 8});
  Value* tokens = In("tokens", {batch, seq}, DType::kI64);
  Value* shape = Op("Shape", {cache});
  Value* total = Op("Slice", {shape, Ints({1}), Ints({2})});  // {past + seq}
  Value* count = Op("Slice", {Op("Shape", {tokens}), Ints({1}), Ints({2})});  // {seq}
  Value* start = Op("Sub", {total, count});  // {past}
  Value* tail = Op("Slice", {cache, start, total, Ints({1})});
  g.AddOutput(Op("Neg", {tail}));
  FusionPlan plan = Plan();
  ASSERT_EQ(plan.groups.size(), 2u) << plan.ToString();
  const Group& slice = plan.groups[0];
  EXPECT_EQ(slice.kind, GroupKind::kSlice);
  EXPECT_EQ(slice.inputs, std::vector<Value*>{cache});  // shape operands are not inputs
  EXPECT_EQ(slice.slice.starts, (std::vector<SymExpr>{0, past, 0}));
  EXPECT_EQ(slice.slice.steps, (std::vector<int64_t>{1, 1, 1}));
}

TEST_F(FusionTest, ValuesOnlyMeasuredByShapeGetNoKernel) {
  Value* x = In("x", {batch, seq});
  Value* measured = Op("Exp", {x});  // read only by Shape
  Value* len = Op("Gather", {Op("Shape", {measured}), g.AddConstant("", Tensor::ScalarI64(1))},
                  Attr("axis", int64_t{0}));
  Value* positions = Op("Range", {g.AddConstant("", Tensor::ScalarI64(0)), len, g.AddConstant("", Tensor::ScalarI64(1))});
  g.AddOutput(positions);
  FusionPlan plan = Plan();
  ASSERT_EQ(plan.groups.size(), 1u) << plan.ToString();
  EXPECT_EQ(plan.groups[0].nodes.front()->op_type(), "Range");
  EXPECT_TRUE(plan.groups[0].inputs.empty());
}


// Mean pooling over the sequence axis: the masked product is computed in the
// sum's kernel (a prologue: read only by the reduction, of its input's
// shape) and the division by the count is its epilogue; the count's clamp
// is the count's epilogue; the expanded mask, read by both sums, is stored
// once by a group of its own.
TEST_F(FusionTest, MeanPoolingFusesTheMaskedProductAndTheDivision) {
  Value* hidden = In("hidden", {batch, seq, 8});
  Value* mask = In("mask", {batch, seq}, DType::kI64);
  Value* expanded = Op("Cast", {Op("Expand", {Op("Unsqueeze", {mask, Ints({-1})}), Ints({1, 1, 8})})},
                       Attr("to", int64_t{1}));
  Value* product = Op("Mul", {hidden, expanded});
  Attributes no_keep = Attr("keepdims", int64_t{0});
  Value* sum = Op("ReduceSum", {product, Ints({1})}, no_keep);
  Value* count = Op("Clip", {Op("ReduceSum", {expanded, Ints({1})}, no_keep), Scalar(1e-9f)});
  Value* mean = Op("Div", {sum, count});
  g.AddOutput(mean);
  FusionPlan plan = Plan();
  const Group* masked = nullptr;
  const Group* counting = nullptr;
  for (const Group& group : plan.groups) {
    if (group.kind != GroupKind::kReduction) continue;
    (group.reduction.reduce->output(0) == sum ? masked : counting) = &group;
  }
  ASSERT_NE(masked, nullptr) << plan.ToString();
  ASSERT_NE(counting, nullptr) << plan.ToString();
  EXPECT_EQ(masked->reduction.axes, std::vector<int64_t>{1});
  EXPECT_FALSE(masked->reduction.keepdims);
  EXPECT_EQ(masked->nodes.size(), 3u) << masked->ToString();  // Mul, ReduceSum, Div
  EXPECT_EQ(masked->nodes[0], product->producer());
  EXPECT_EQ(masked->inputs, (std::vector<Value*>{hidden, expanded, count}));
  EXPECT_EQ(masked->outputs, std::vector<Value*>{mean}) << masked->ToString();
  EXPECT_EQ(counting->outputs, std::vector<Value*>{count}) << counting->ToString();
  EXPECT_THAT(counting->ToString(), ::testing::HasSubstr("ReduceSum axes=[1]"));
  int kernels = 0;  // the expanded mask, the two sums (and the Unsqueeze, a view)
  for (const Group& group : plan.groups) kernels += group.kind != GroupKind::kView;
  EXPECT_EQ(kernels, 3) << plan.ToString();
  EXPECT_TRUE(VerifyFusionPlan(g, plan).ok());
}

// A prologue value read outside the group is stored, not recomputed.
TEST_F(FusionTest, APrologueReadElsewhereStaysOutOfTheReduction) {
  Value* x = In("x", {batch, seq, 8});
  Value* squared = Op("Mul", {x, x});
  g.AddOutput(Op("ReduceMax", {squared}, Attr("axes", std::vector<int64_t>{0})));
  g.AddOutput(Op("Neg", {squared}));
  FusionPlan plan = Plan();
  for (const Group& group : plan.groups) {
    if (group.kind == GroupKind::kReduction) {
      EXPECT_EQ(group.nodes.size(), 1u) << group.ToString();
      EXPECT_EQ(group.reduction.axes, std::vector<int64_t>{0});
    }
  }
  EXPECT_TRUE(VerifyFusionPlan(g, plan).ok());
}

// ArgMax/ArgMin reduce their axis; Reduce* with noop_with_empty_axes and no
// axes are the identity; an axes input of no elements (ONNX's `[]` fed as a
// graph input) reduces every axis; LogSoftmax is a softmax group on any axis
// (scale and mask fused only on the last).
TEST_F(FusionTest, ArgReductionsNoopsAndLogSoftmaxGetTheirGroups) {
  Value* x = In("x", {batch, seq, 8});
  Attributes arg = Attr("axis", int64_t{-2});
  arg.Set("keepdims", int64_t{0});
  Value* argmax = Op("ArgMax", {x}, arg);
  Value* noop = Op("ReduceL2", {x}, Attr("noop_with_empty_axes", int64_t{1}));
  Value* none = In("none", {0}, DType::kI64);
  Value* all = Op("ReduceSum", {x, none});
  Value* log = Op("LogSoftmax", {x}, Attr("axis", int64_t{1}));
  for (Value* v : {argmax, noop, all, log}) g.AddOutput(v);
  FusionPlan plan = Plan();
  ASSERT_EQ(plan.groups.size(), 4u) << plan.ToString();
  for (const Group& group : plan.groups) {
    const std::string op = group.nodes[0]->op_type();
    if (op == "ArgMax") {
      EXPECT_EQ(group.kind, GroupKind::kReduction);
      EXPECT_EQ(group.reduction.axes, std::vector<int64_t>{1});
      EXPECT_FALSE(group.reduction.keepdims);
    } else if (op == "ReduceL2") {
      EXPECT_EQ(group.kind, GroupKind::kReduction);
      EXPECT_TRUE(group.reduction.noop);
    } else if (op == "ReduceSum") {
      EXPECT_EQ(group.kind, GroupKind::kReduction);
      EXPECT_EQ(group.reduction.reduced_axes, 3);
      EXPECT_TRUE(group.reduction.axes.empty());
    } else {
      EXPECT_EQ(op, "LogSoftmax");
      EXPECT_EQ(group.kind, GroupKind::kSoftmax);
      EXPECT_TRUE(group.softmax.log);
      EXPECT_EQ(group.softmax.axis, 1);
      EXPECT_EQ(group.softmax.axis_end, 2);
    }
  }
  EXPECT_TRUE(VerifyFusionPlan(g, plan).ok());
}

}  // namespace
}  // namespace shapeshift::passes
