#include <cmath>

#include "passes/dce.h"
#include "passes/gelu_recognition.h"
#include "passes/layer_norm_recognition.h"
#include "passes/rms_norm_recognition.h"
#include "passes/softmax_recognition.h"
#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

using testing::ExpectOutputs;
using testing::PassTest;

Attributes LastAxis() {
  Attributes a;
  a.Set("axes", std::vector<int64_t>{-1});
  return a;
}

class LayerNormRecognitionTest : public PassTest {
 protected:
  // torch's opset-14 decomposition; `square_by_mul` writes d*d instead of Pow(d, 2).
  Value* Decomposed(Value* x, bool square_by_mul, Value** d_out = nullptr) {
    Value* mean = Op("ReduceMean", {x}, LastAxis());
    Value* d = Op("Sub", {x, mean});
    if (d_out) *d_out = d;
    Value* sq = square_by_mul ? Op("Mul", {d, d}) : Op("Pow", {d, Scalar(2)});
    Value* var = Op("ReduceMean", {sq}, LastAxis());
    Value* norm = Op("Div", {d, Op("Sqrt", {Op("Add", {var, Scalar(1e-5f)})})});
    Value* scaled = Op("Mul", {norm, Floats({4}, {0.5f, 1, 2, -1})});
    return Op("Add", {Floats({4}, {0.1f, 0.2f, 0.3f, 0.4f}), scaled});
  }
};

TEST_F(LayerNormRecognitionTest, RewritesBothSquareForms) {
  for (bool by_mul : {false, true}) {
    SCOPED_TRACE(by_mul);
    Graph fresh(17);
    std::swap(g, fresh);
    Value* x = In("x", {batch, seq, 4});
    Value* y = Decomposed(x, by_mul);
    const std::string y_name = y->name();  // y itself is replaced
    g.AddOutput(y);
    std::vector<Tensor> in = {Random({2, 3, 4}, 1)};
    absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
    ASSERT_TRUE(before.ok());
    absl::StatusOr<bool> changed = RecognizeLayerNorm(g, env);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(*changed);
    ASSERT_TRUE(EliminateDeadCode(g).ok());
    EXPECT_EQ(g.num_nodes(), 1);
    const Node* ln = g.outputs()[0]->producer();
    EXPECT_EQ(ln->op_type(), "LayerNormalization");
    EXPECT_EQ(g.outputs()[0]->name(), y_name);
    EXPECT_FLOAT_EQ(*ln->attrs().GetFloat("epsilon", 0.0f), 1e-5f);
    ExpectOutputs(g, in, *before);
  }
}

TEST_F(LayerNormRecognitionTest, LeavesItAloneWhenAnIntermediateIsReadElsewhere) {
  Value* x = In("x", {batch, 4});
  Value* d = nullptr;
  g.AddOutput(Decomposed(x, false, &d));
  g.AddOutput(Op("Neg", {d}));
  absl::StatusOr<bool> changed = RecognizeLayerNorm(g, env);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(Count("LayerNormalization"), 0);
}

class RmsNormRecognitionTest : public PassTest {
 protected:
  enum class Form { kDiv, kReciprocal, kOneOver };
  // What exporters write for Llama's RMSNorm: x * rsqrt(mean(x^2) + eps) * w,
  // with rsqrt as Div, Reciprocal or 1/.
  Value* Decomposed(Value* x, Form form, bool square_by_mul, Value** ms_out = nullptr) {
    Value* sq = square_by_mul ? Op("Mul", {x, x}) : Op("Pow", {x, Scalar(2)});
    Value* ms = Op("ReduceMean", {sq}, LastAxis());
    if (ms_out) *ms_out = ms;
    Value* root = Op("Sqrt", {Op("Add", {ms, Scalar(1e-6f)})});
    Value* norm = form == Form::kDiv ? Op("Div", {x, root})
                  : form == Form::kReciprocal ? Op("Mul", {x, Op("Reciprocal", {root})})
                                              : Op("Mul", {Op("Div", {Scalar(1), root}), x});
    return Op("Mul", {Floats({4}, {0.5f, 1, 2, -1}), norm});
  }
};

TEST_F(RmsNormRecognitionTest, RewritesEachRsqrtAndSquareForm) {
  for (Form form : {Form::kDiv, Form::kReciprocal, Form::kOneOver}) {
    for (bool by_mul : {false, true}) {
      SCOPED_TRACE(static_cast<int>(form) * 2 + by_mul);
      Graph fresh(17);
      std::swap(g, fresh);
      Value* x = In("x", {batch, seq, 4});
      Value* y = Decomposed(x, form, by_mul);
      const std::string y_name = y->name();
      g.AddOutput(y);
      g.AddOutput(Op("Neg", {x}));  // x has another reader: it is not part of the pattern
      std::vector<Tensor> in = {Random({2, 3, 4}, 5)};
      absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
      ASSERT_TRUE(before.ok()) << before.status();
      absl::StatusOr<bool> changed = RecognizeRmsNorm(g, env);
      ASSERT_TRUE(changed.ok()) << changed.status();
      EXPECT_TRUE(*changed);
      ASSERT_TRUE(EliminateDeadCode(g).ok());
      EXPECT_EQ(g.num_nodes(), 2);
      const Node* rms = g.outputs()[0]->producer();
      EXPECT_EQ(rms->op_type(), "RMSNormalization");
      EXPECT_EQ(rms->input(0), x);
      EXPECT_EQ(g.outputs()[0]->name(), y_name);
      EXPECT_FLOAT_EQ(*rms->attrs().GetFloat("epsilon", 0.0f), 1e-6f);
      ExpectOutputs(g, in, *before);
    }
  }
}

TEST_F(RmsNormRecognitionTest, LeavesItAloneWhenAnIntermediateIsReadElsewhereOrTheEpsIsNotConstant) {
  Value* x = In("x", {batch, 4});
  Value* ms = nullptr;
  g.AddOutput(Decomposed(x, Form::kReciprocal, false, &ms));
  g.AddOutput(Op("Neg", {ms}));
  absl::StatusOr<bool> changed = RecognizeRmsNorm(g, env);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);

  Graph fresh(17);
  std::swap(g, fresh);
  Value* x2 = In("x", {batch, 4});
  Value* eps = In("eps", {1});
  Value* ms2 = Op("ReduceMean", {Op("Pow", {x2, Scalar(2)})}, LastAxis());
  g.AddOutput(Op("Div", {x2, Op("Sqrt", {Op("Add", {ms2, eps})})}));
  changed = RecognizeRmsNorm(g, env);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(Count("RMSNormalization"), 0);
}

using SoftmaxRecognitionTest = PassTest;

TEST_F(SoftmaxRecognitionTest, RewritesStableAndPlainForms) {
  Value* x = In("x", {batch, seq, 8});
  Value* stable = Op("Exp", {Op("Sub", {x, Op("ReduceMax", {x}, LastAxis())})});
  g.AddOutput(Op("Div", {stable, Op("ReduceSum", {stable, Ints({-1})})}));
  Value* plain = Op("Exp", {x});
  g.AddOutput(Op("Div", {plain, Op("ReduceSum", {plain, Ints({-1})})}));
  std::vector<Tensor> in = {Random({2, 3, 8}, 2)};
  absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(RecognizeSoftmax(g, env).ok());
  ASSERT_TRUE(EliminateDeadCode(g).ok());
  EXPECT_EQ(Count("Softmax"), 2);
  EXPECT_EQ(g.num_nodes(), 2);
  ExpectOutputs(g, in, *before);
}

TEST_F(SoftmaxRecognitionTest, IgnoresReductionsOverOtherAxes) {
  Value* x = In("x", {batch, 8});
  Value* e = Op("Exp", {x});
  g.AddOutput(Op("Div", {e, Op("ReduceSum", {e, Ints({0})})}));
  absl::StatusOr<bool> changed = RecognizeSoftmax(g, env);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

class GeluRecognitionTest : public PassTest {
 protected:
  Value* x_ = nullptr;
  void SetUp() override { x_ = In("x", {batch, 8}); }
  // 1 + erf(x / √2) or 1 + erf(x * 0.7071…)
  Value* OnePlusErf(Value* x, bool by_mul) {
    Value* u = by_mul ? Op("Mul", {x, Scalar(0.70710677f)}) : Op("Div", {x, Scalar(1.4142135f)});
    return Op("Add", {Op("Erf", {u}), Scalar(1)});
  }
  // Rewrites, then checks every graph output is a Gelu of `approximate`
  // reading `expected_input` and the results equal the decomposition's.
  void ExpectRewrittenTo(const std::string& approximate, const Value* expected_input) {
    std::vector<Tensor> in = {Random({3, 8}, 7)};
    absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
    ASSERT_TRUE(before.ok()) << before.status();
    absl::StatusOr<bool> changed = RecognizeGelu(g, env);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(*changed);
    ASSERT_TRUE(EliminateDeadCode(g).ok());
    EXPECT_EQ(g.num_nodes(), static_cast<int>(g.outputs().size()));
    for (const Value* out : g.outputs()) {
      const Node* gelu = out->producer();
      ASSERT_NE(gelu, nullptr);
      EXPECT_EQ(gelu->op_type(), "Gelu");
      EXPECT_EQ(*gelu->attrs().GetString("approximate", ""), approximate);
      EXPECT_EQ(gelu->input(0), expected_input);
    }
    ExpectOutputs(g, in, *before);
  }
};

TEST_F(GeluRecognitionTest, RewritesErfFormInEveryAssociation) {
  g.AddOutput(Op("Mul", {Op("Mul", {x_, OnePlusErf(x_, false)}), Scalar(0.5f)}));  // torch
  g.AddOutput(Op("Mul", {Op("Mul", {x_, Scalar(0.5f)}), OnePlusErf(x_, true)}));   // (x*0.5)*t
  g.AddOutput(Op("Mul", {x_, Op("Mul", {Scalar(0.5f), OnePlusErf(x_, false)})}));  // x*(0.5*t)
  std::vector<std::string> names;
  for (const Value* v : g.outputs()) names.push_back(v->name());
  ExpectRewrittenTo("none", x_);
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(g.outputs()[i]->name(), names[i]);
}

TEST_F(GeluRecognitionTest, RewritesTanhFormWithPowOrProductCube) {
  for (bool pow : {true, false}) {
    Value* cube = pow ? Op("Pow", {x_, Scalar(3)}) : Op("Mul", {Op("Mul", {x_, x_}), x_});
    Value* inner = Op("Add", {x_, Op("Mul", {Scalar(0.044715f), cube})});
    Value* t = Op("Add", {Scalar(1), Op("Tanh", {Op("Mul", {Scalar(0.7978846f), inner})})});
    g.AddOutput(Op("Mul", {Op("Mul", {Scalar(0.5f), x_}), t}));
  }
  ExpectRewrittenTo("tanh", x_);
}

TEST_F(GeluRecognitionTest, RewritesAGeluOfAGelu) {
  Value* first = Op("Mul", {Op("Mul", {x_, OnePlusErf(x_, false)}), Scalar(0.5f)});
  Value* second = Op("Mul", {Op("Mul", {first, OnePlusErf(first, false)}), Scalar(0.5f)});
  g.AddOutput(second);
  std::vector<Tensor> in = {Random({3, 8}, 8)};
  absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
  ASSERT_TRUE(before.ok());
  absl::StatusOr<bool> changed = RecognizeGelu(g, env);
  ASSERT_TRUE(changed.ok()) << changed.status();
  ASSERT_TRUE(EliminateDeadCode(g).ok());
  EXPECT_EQ(g.num_nodes(), 2);
  EXPECT_EQ(Count("Gelu"), 2);
  ExpectOutputs(g, in, *before);
}

TEST_F(GeluRecognitionTest, LeavesWrongConstantsAndSharedIntermediatesAlone) {
  g.AddOutput(Op("Mul", {Op("Mul", {x_, OnePlusErf(x_, false)}), Scalar(0.25f)}));  // not 0.5
  Value* t = OnePlusErf(x_, false);
  g.AddOutput(Op("Mul", {Op("Mul", {x_, t}), Scalar(0.5f)}));
  g.AddOutput(Op("Neg", {t}));  // t read outside the pattern
  absl::StatusOr<bool> changed = RecognizeGelu(g, env);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(Count("Gelu"), 0);
}

// A Gelu reading a Reshape of a MatMul's output moves above the reshape (it
// is then the matmul's epilogue); one whose reshape is read elsewhere too, or
// that reads a reshape of something else, stays. The results do not change.
TEST_F(GeluRecognitionTest, MovesAGeluAboveTheReshapeOfAMatmulsOutput) {
  std::vector<float> w(8 * 12);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  Attributes tanh;
  tanh.Set("approximate", std::string("tanh"));
  Value* m = Op("MatMul", {x_, Floats({8, 12}, w)});
  g.AddOutput(Op("Gelu", {Op("Reshape", {m, Ints({0, 3, 4})})}, tanh));  // moves
  Value* shared = Op("Reshape", {Op("MatMul", {x_, Floats({8, 12}, w)}), Ints({0, 4, 3})});
  g.AddOutput(Op("Gelu", {shared}));  // stays: the reshape is read by Neg too
  g.AddOutput(Op("Neg", {shared}));
  g.AddOutput(Op("Gelu", {Op("Reshape", {x_, Ints({0, 2, 4})})}));  // stays: no matmul
  std::vector<Tensor> in = {Random({3, 8}, 9)};
  absl::StatusOr<std::vector<Tensor>> before = Interpret(g, in);
  ASSERT_TRUE(before.ok()) << before.status();
  const std::string name = g.outputs()[0]->name();
  absl::StatusOr<bool> changed = RecognizeGelu(g, env);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(EliminateDeadCode(g).ok());
  const Node* reshape = g.outputs()[0]->producer();
  ASSERT_NE(reshape, nullptr);
  EXPECT_EQ(reshape->op_type(), "Reshape");
  EXPECT_EQ(g.outputs()[0]->name(), name);
  const Node* gelu = reshape->input(0)->producer();
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->op_type(), "Gelu");
  EXPECT_EQ(*gelu->attrs().GetString("approximate", ""), "tanh");
  EXPECT_EQ(gelu->input(0), m);
  for (int i : {1, 3}) {
    const Node* stays = g.outputs()[i]->producer();
    ASSERT_NE(stays, nullptr);
    EXPECT_EQ(stays->op_type(), "Gelu") << i;
  }
  EXPECT_EQ(Count("Gelu"), 3);
  ExpectOutputs(g, in, *before);
}

}  // namespace
}  // namespace shapeshift::passes
