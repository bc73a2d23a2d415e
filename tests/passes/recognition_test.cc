#include <cmath>

#include "passes/dce.h"
#include "passes/gelu_match.h"
#include "passes/layer_norm_recognition.h"
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

class GeluMatchTest : public PassTest {
 protected:
  Value* x_ = nullptr;
  void SetUp() override { x_ = In("x", {batch, 8}); }
  // 1 + erf(x / √2) or 1 + erf(x * 0.7071…)
  Value* OnePlusErf(bool by_mul) {
    Value* u = by_mul ? Op("Mul", {x_, Scalar(0.70710677f)}) : Op("Div", {x_, Scalar(1.4142135f)});
    return Op("Add", {Op("Erf", {u}), Scalar(1)});
  }
};

TEST_F(GeluMatchTest, FindsErfFormInEveryAssociation) {
  g.AddOutput(Op("Mul", {Op("Mul", {x_, OnePlusErf(false)}), Scalar(0.5f)}));  // torch
  g.AddOutput(Op("Mul", {Op("Mul", {x_, Scalar(0.5f)}), OnePlusErf(true)}));   // (x*0.5)*t
  g.AddOutput(Op("Mul", {x_, Op("Mul", {Scalar(0.5f), OnePlusErf(false)})}));  // x*(0.5*t)
  std::vector<GeluMatch> found = FindGelus(g);
  ASSERT_EQ(found.size(), 3u);
  for (size_t i = 0; i < found.size(); ++i) {
    EXPECT_EQ(found[i].form, GeluForm::kErf);
    EXPECT_EQ(found[i].input, x_);
    EXPECT_EQ(found[i].output, g.outputs()[i]);
    EXPECT_EQ(found[i].nodes.back(), g.outputs()[i]->producer());
  }
}

TEST_F(GeluMatchTest, FindsTanhFormWithPowOrProductCube) {
  for (bool pow : {true, false}) {
    Value* cube = pow ? Op("Pow", {x_, Scalar(3)}) : Op("Mul", {Op("Mul", {x_, x_}), x_});
    Value* inner = Op("Add", {x_, Op("Mul", {Scalar(0.044715f), cube})});
    Value* t = Op("Add", {Scalar(1), Op("Tanh", {Op("Mul", {Scalar(0.7978846f), inner})})});
    g.AddOutput(Op("Mul", {Op("Mul", {Scalar(0.5f), x_}), t}));
  }
  std::vector<GeluMatch> found = FindGelus(g);
  ASSERT_EQ(found.size(), 2u);
  for (const GeluMatch& m : found) {
    EXPECT_EQ(m.form, GeluForm::kTanh);
    EXPECT_EQ(m.input, x_);
  }
  EXPECT_EQ(found[0].nodes.size(), 8u);  // Pow, Mul, Add, Mul, Tanh, Add, Mul, Mul
  EXPECT_EQ(found[1].nodes.size(), 9u);  // two Muls instead of the Pow
}

TEST_F(GeluMatchTest, RejectsWrongConstantsAndSharedIntermediates) {
  g.AddOutput(Op("Mul", {Op("Mul", {x_, OnePlusErf(false)}), Scalar(0.25f)}));  // not 0.5
  Value* t = OnePlusErf(false);
  g.AddOutput(Op("Mul", {Op("Mul", {x_, t}), Scalar(0.5f)}));
  g.AddOutput(Op("Neg", {t}));  // t read outside the pattern
  EXPECT_TRUE(FindGelus(g).empty());
}

}  // namespace
}  // namespace shapeshift::passes
