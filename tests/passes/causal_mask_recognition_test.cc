// causal-mask-recognition: the decoder masks both torch exporters build
// from position vectors become CausalSoftmax, bit for bit the decomposed
// graph (fully masked rows included); near misses stay as they are.
#include <cstdint>
#include <functional>
#include <limits>

#include "passes/causal_mask_recognition.h"
#include "passes/dce.h"
#include "passes/fusion.h"
#include "tests/passes/pass_test_util.h"

namespace shapeshift::passes {
namespace {

using testing::ExpectOutputs;
using testing::PassTest;

constexpr float kMin = std::numeric_limits<float>::lowest();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Scores [batch, 4, seq, past + seq] and a padding mask [batch, 1, 1, past +
// seq], with the position vectors transformers builds: keys Range(0, past +
// seq), queries Range(0, seq) + past.
class CausalMaskRecognitionTest : public PassTest {
 protected:
  CausalMaskRecognitionTest() {
    past = env.DeclareSymbol({"past", 0, 64}).value();
    x = In("x", {batch, 4, seq, past + seq});
    pad = In("pad", {batch, 1, 1, past + seq}, DType::kBool);
  }
  Value* I64(int64_t v) { return g.AddConstant("", Tensor::ScalarI64(v)); }
  // Dim `axis` of x as a one-element shape value.
  Value* Dim(int64_t axis) { return Op("Gather", {Op("Shape", {x}), I64(axis)}); }
  Value* Unsqueeze(Value* v, std::vector<int64_t> axes) {  // axes an attribute before opset 13
    if (g.opset() < 13) return Op("Unsqueeze", {v}, Attr("axes", std::move(axes)));
    return Op("Unsqueeze", {v, Ints(std::move(axes))});
  }
  Value* Keys() { return Unsqueeze(Op("Range", {I64(0), Dim(3), I64(1)}), {0, 1, 2}); }
  // Range(0, seq) + offset (past when null) as [1, 1, seq, 1].
  Value* Queries(Value* offset = nullptr) {
    Value* past_len = offset ? offset : Op("Sub", {Dim(3), Dim(2)});
    return Unsqueeze(Op("Add", {Op("Range", {I64(0), Dim(2), I64(1)}), past_len}), {0, 1, 3});
  }
  Value* Mask(Value* allowed, float fill = kMin, float zero = 0.0f) {
    return Op("Where", {allowed, Scalar(zero), Scalar(fill)});
  }
  Value* SoftmaxOf(Value* scores, Value* mask, bool mask_first = false) {
    Value* sum = mask_first ? Op("Add", {mask, scores}) : Op("Add", {scores, mask});
    return Op("Softmax", {sum}, Attr("axis", int64_t{-1}));
  }
  Value* True() { return g.AddConstant("", Tensor::FromVector<uint8_t>(DType::kBool, {}, {1})); }

  // seq 5 over past 3 and past 0; batch row 1's first two keys padded
  // (without past, its first queries see nothing: fully masked rows); with
  // `nan_under_padding`, NaN scores on batch row 1's key 0.
  std::vector<std::vector<Tensor>> InputSets(bool nan_under_padding = false) {
    std::vector<std::vector<Tensor>> sets;
    for (int64_t p : {int64_t{3}, int64_t{0}}) {
      Tensor mask = Tensor::Zeros(DType::kBool, {2, 1, 1, p + 5}).value();
      for (int64_t k = 0; k < 2 * (p + 5); ++k) mask.mutable_data<uint8_t>()[k] = k < p + 5 || k >= p + 5 + 2;
      Tensor scores = Random({2, 4, 5, p + 5}, static_cast<uint32_t>(p + 1));
      for (int64_t row = 4 * 5; nan_under_padding && row < 2 * 4 * 5; ++row) {
        scores.mutable_data<float>()[row * (p + 5)] = std::numeric_limits<float>::quiet_NaN();
      }
      sets.push_back({scores, mask});
    }
    return sets;
  }
  // Rewrites every softmax, removes what died, and checks the interpreter
  // gives bit for bit the decomposed graph's outputs (window -1: any).
  void ExpectRewritten(int softmaxes, int64_t window = 0, bool nan_under_padding = false) {
    std::vector<std::vector<Tensor>> sets = InputSets(nan_under_padding);
    std::vector<std::vector<Tensor>> before;
    for (const std::vector<Tensor>& in : sets) {
      absl::StatusOr<std::vector<Tensor>> out = Interpret(g, in);
      ASSERT_TRUE(out.ok()) << out.status();
      before.push_back(*out);
    }
    absl::StatusOr<bool> changed = RecognizeCausalMask(g, env);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(*changed);
    ASSERT_TRUE(EliminateDeadCode(g).ok());
    EXPECT_EQ(Count("CausalSoftmax"), softmaxes);
    EXPECT_EQ(Count("Softmax"), 0);
    for (const char* op : {"LessOrEqual", "Less", "Greater", "GreaterOrEqual", "Range"}) EXPECT_EQ(Count(op), 0) << op;
    for (const Node* n : g.nodes()) {
      if (n->op_type() != "CausalSoftmax") continue;
      if (window >= 0) EXPECT_EQ(n->attrs().GetInt("window", 0).value(), window);
      // The mask operand has no query axis: no [seq, past + seq] tensor is left.
      const std::vector<SymExpr>& m = n->input(1)->type().shape;
      EXPECT_TRUE(m.size() < 2 || m[m.size() - 2].AsConst() == 1) << n->input(1)->type().ToString();
    }
    for (size_t k = 0; k < sets.size(); ++k) ExpectOutputs(g, sets[k], before[k], /*tolerance=*/0);
  }
  void ExpectUnchanged() {
    absl::StatusOr<bool> changed = RecognizeCausalMask(g, env);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_FALSE(*changed);
    EXPECT_EQ(Count("CausalSoftmax"), 0);
  }
  // GPT-Neo's `bias` buffer: a bool [1, 1, n, n] table, true where
  // allowed(r, c).
  Value* Table(const std::function<bool(int64_t, int64_t)>& allowed, int64_t n = kTable) {
    std::vector<uint8_t> bits(static_cast<size_t>(n * n));
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < n; ++c) bits[r * n + c] = allowed(r, c) ? 1 : 0;
    }
    return g.AddConstant("", Tensor::FromVector<uint8_t>(DType::kBool, {1, 1, n, n}, bits));
  }
  Value* Band(int64_t window) {  // tril, or bias ^ tril(bias, -window)
    return Table([window](int64_t r, int64_t c) { return c <= r && (window == 0 || c > r - window); });
  }
  // table[:, :, rows_from : rows_from + seq, cols_from : cols_from + T] as
  // GPT-Neo slices it (rows first, then columns), rows_from = T - seq unless given.
  Value* TableSlice(Value* table, Value* rows_from = nullptr, Value* cols_from = nullptr) {
    Value* keys = Unsqueeze(Dim(3), {0});
    Value* start = rows_from ? rows_from : Unsqueeze(Op("Sub", {Dim(3), Dim(2)}), {0});
    Value* rows = Op("Slice", {table, start, Op("Add", {start, Unsqueeze(Dim(2), {0})}), Ints({2}), Ints({1})});
    Value* cols_start = cols_from ? cols_from : Ints({0});
    return Op("Slice", {rows, cols_start, Op("Add", {cols_start, keys}), Ints({3}), Ints({1})});
  }
  // GPT-Neo's attention: Softmax(Where(slice, scores, min) + mask), mask
  // the causal and padding mask the exporters build from positions, one
  // for every layer.
  Value* GptNeoSoftmax(Value* slice) {
    if (neo_mask == nullptr) neo_mask = Mask(Op("And", {Op("LessOrEqual", {Keys(), Queries()}), pad}));
    return SoftmaxOf(Op("Where", {slice, x, Scalar(kMin)}), neo_mask);
  }
  Value* neo_mask = nullptr;
  static constexpr int64_t kTable = 160;  // past + seq is at most 128
  SymExpr past;
  Value *x, *pad;
};

// masked_fill's form, MPT's: the bool mask is `not (causal and padding)`,
// spelled Cast(Where(allowed, 0, min), bool) (cast to bool again in each
// layer), and each layer's scores are replaced where it is set; and the
// direct form Where(allowed, scores, fill). The scores hold NaN under a
// padded key, which the graph's Where hides: so must the rewrite (the
// comparison is bit for bit).
TEST_F(CausalMaskRecognitionTest, RewritesMaskedFillsForm) {
  Value* causal = Op("LessOrEqual", {Keys(), Queries()});
  Value* allowed = Op("And", {causal, pad});
  Value* masked = Op("Cast", {Mask(allowed)}, Attr("to", int64_t{9}));  // not allowed
  for (float scale : {1.0f, 0.5f}) {
    Value* again = Op("Cast", {masked}, Attr("to", int64_t{9}));
    Value* scores = Op("Where", {again, Scalar(kMin), Op("Mul", {x, Scalar(scale)})});
    g.AddOutput(Op("Softmax", {scores}, Attr("axis", int64_t{-1})));
  }
  g.AddOutput(Op("Softmax", {Op("Where", {allowed, x, Scalar(kMin)})}, Attr("axis", int64_t{-1})));
  ExpectRewritten(3, /*window=*/0, /*nan_under_padding=*/true);
  for (const Node* n : g.nodes()) {
    if (n->op_type() == "CausalSoftmax") EXPECT_EQ(n->input(1)->type().dtype, DType::kBool) << n->name();
  }
}

// Near misses of masked_fill's form: the fill on the wrong side of a
// non-negated condition, and a "negation" whose Where keeps 0 where masked.
TEST_F(CausalMaskRecognitionTest, LeavesMaskedFillNearMissesAlone) {
  Value* allowed = Op("And", {Op("LessOrEqual", {Keys(), Queries()}), pad});
  g.AddOutput(Op("Softmax", {Op("Where", {allowed, Scalar(kMin), x})}, Attr("axis", int64_t{-1})));
  Value* not_negated = Op("Cast", {Op("Where", {allowed, Scalar(1.0f), Scalar(0.0f)})}, Attr("to", int64_t{9}));
  g.AddOutput(Op("Softmax", {Op("Where", {not_negated, Scalar(kMin), x})}, Attr("axis", int64_t{-1})));
  ExpectUnchanged();
}

// The dynamo form: And(And(new_ones, kv <= q), padding), finfo.min, two
// layers reading one mask; and TorchScript's: q >= kv, -inf, the mask added
// first.
TEST_F(CausalMaskRecognitionTest, RewritesBothExportersCausalAndPaddingForms) {
  Value* causal = Op("LessOrEqual", {Keys(), Queries()});
  Value* mask = Mask(Op("And", {Op("And", {True(), causal}), pad}));
  g.AddOutput(SoftmaxOf(x, mask));
  g.AddOutput(SoftmaxOf(Op("Mul", {x, Scalar(0.5f)}), mask));
  ExpectRewritten(2);
}

TEST_F(CausalMaskRecognitionTest, RewritesTheMirroredComparisonWithInfiniteFill) {
  Value* causal = Op("GreaterOrEqual", {Queries(), Keys()});
  g.AddOutput(SoftmaxOf(x, Mask(Op("And", {pad, causal}), -kInf), /*mask_first=*/true));
  ExpectRewritten(1);
}

TEST_F(CausalMaskRecognitionTest, RewritesACausalMaskWithoutPadding) {
  g.AddOutput(SoftmaxOf(x, Mask(Op("LessOrEqual", {Keys(), Queries()}), -kInf)));
  ExpectRewritten(1);
}

// Mistral's sliding window: kv > q - window next to the causal bound.
TEST_F(CausalMaskRecognitionTest, RewritesASlidingWindow) {
  Value* causal = Op("LessOrEqual", {Keys(), Queries()});
  Value* window = Op("Greater", {Keys(), Op("Sub", {Queries(), I64(3)})});
  g.AddOutput(SoftmaxOf(x, Mask(Op("And", {Op("And", {causal, window}), pad}))));
  ExpectRewritten(1, /*window=*/3);
}

TEST_F(CausalMaskRecognitionTest, LeavesAStrictComparisonAlone) {  // kv < q: the diagonal masked
  g.AddOutput(SoftmaxOf(x, Mask(Op("And", {Op("Less", {Keys(), Queries()}), pad}))));
  ExpectUnchanged();
}

TEST_F(CausalMaskRecognitionTest, LeavesQueriesWithoutThePastOffsetAlone) {
  g.AddOutput(SoftmaxOf(x, Mask(Op("LessOrEqual", {Keys(), Queries(I64(0))}))));
  ExpectUnchanged();
}

TEST_F(CausalMaskRecognitionTest, LeavesAnOffByOneOffsetAlone) {
  g.AddOutput(SoftmaxOf(x, Mask(Op("LessOrEqual", {Keys(), Queries(Op("Add", {Op("Sub", {Dim(3), Dim(2)}), I64(1)}))}))));
  ExpectUnchanged();
}

TEST_F(CausalMaskRecognitionTest, LeavesANonCausalComparisonAlone) {
  g.AddOutput(SoftmaxOf(x, Mask(Op("Greater", {Keys(), Queries()}))));  // the future only
  ExpectUnchanged();
}

TEST_F(CausalMaskRecognitionTest, LeavesAMaskThatDoesNotAddZeroWhereAllowedAlone) {
  g.AddOutput(SoftmaxOf(x, Mask(Op("LessOrEqual", {Keys(), Queries()}), kMin, /*zero=*/1.0f)));
  ExpectUnchanged();
}

TEST_F(CausalMaskRecognitionTest, LeavesASoftmaxOverAnotherAxisOrASharedSumAlone) {
  Value* mask = Mask(Op("LessOrEqual", {Keys(), Queries()}));
  Value* sum = Op("Add", {x, mask});
  g.AddOutput(Op("Softmax", {sum}, Attr("axis", int64_t{2})));
  Value* shared = Op("Add", {x, mask});
  g.AddOutput(Op("Softmax", {shared}, Attr("axis", int64_t{-1})));
  g.AddOutput(shared);
  ExpectUnchanged();
}

// GPT-Neo: each layer's Where over its `bias` table slice
// [T - S : T, :T] (layer 0 causal, layer 1 a band of 3: bias ^ tril(bias,
// -3)) before the additive mask becomes CausalSoftmax's keep stage; no
// slice and no Where but the padding mask's is left. Over past 3 (the
// slice's offset T - S is 3) and past 0, fully masked rows and NaN scores
// under the padding (hidden by the band's Where where it is out of the
// window) included, bit for bit.
TEST_F(CausalMaskRecognitionTest, RewritesGptNeosBiasTableSlicesIntoTheKeepStage) {
  g.AddOutput(GptNeoSoftmax(TableSlice(Band(0))));
  g.AddOutput(GptNeoSoftmax(TableSlice(Band(3))));
  ExpectRewritten(2, /*window=*/0, /*nan_under_padding=*/true);
  EXPECT_EQ(Count("Slice"), 0);
  EXPECT_EQ(Count("Where"), 1);  // the padding mask's
  std::vector<int64_t> keep_windows;
  for (const Node* n : g.nodes()) {
    if (n->op_type() != "CausalSoftmax") continue;
    EXPECT_EQ(n->input(0), x);
    EXPECT_EQ(n->attrs().GetFloat("keep_fill", 0).value(), kMin);
    keep_windows.push_back(n->attrs().GetInt("keep_window", 0).value());
  }
  EXPECT_EQ(keep_windows, (std::vector<int64_t>{0, 3}));
}

// masked_fill of a table slice alone, Softmax(Where(slice, scores, min)):
// the select form, the slice's band as the window.
TEST_F(CausalMaskRecognitionTest, RewritesAMaskedFillOfATableSlice) {
  g.AddOutput(Op("Softmax", {Op("Where", {TableSlice(Band(0)), x, Scalar(kMin)})}, Attr("axis", int64_t{-1})));
  g.AddOutput(Op("Softmax", {Op("Where", {TableSlice(Band(5)), x, Scalar(kMin)})}, Attr("axis", int64_t{-1})));
  ExpectRewritten(2, /*window=*/-1, /*nan_under_padding=*/true);
  std::vector<int64_t> windows;
  for (const Node* n : g.nodes()) {
    if (n->op_type() == "CausalSoftmax") windows.push_back(n->attrs().GetInt("window", 0).value());
  }
  EXPECT_EQ(windows, (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(Count("Slice"), 0);
}

// Near misses of the table: one entry off the pattern (far from any row
// read: the whole table must be a band), the diagonal itself masked
// (tril(-1)), one diagonal too many (tril(1)), a band broken in two, rows
// read from 0 instead of T - S (wrong once there is a past), rows one too
// far, columns from 1: all left as they are, masked_fill's form and
// GPT-Neo's keep stage both.
TEST_F(CausalMaskRecognitionTest, LeavesTableSlicesThatAreNotExactlyCausalAlone) {
  auto corner = [](int64_t r, int64_t c) { return c <= r && !(r == kTable - 1 && c == 1); };
  auto strict = [](int64_t r, int64_t c) { return c < r; };
  auto above = [](int64_t r, int64_t c) { return c <= r + 1; };
  auto split = [](int64_t r, int64_t c) { return c <= r && c != r - 2; };
  std::vector<Value*> slices = {
      TableSlice(Table(corner)), TableSlice(Table(strict)), TableSlice(Table(above)), TableSlice(Table(split)),
      TableSlice(Band(0), Ints({0})),
      TableSlice(Band(0), Unsqueeze(Op("Add", {Op("Sub", {Dim(3), Dim(2)}), I64(1)}), {0})),
      TableSlice(Band(0), nullptr, Ints({1}))};
  for (Value* slice : slices) {
    g.AddOutput(Op("Softmax", {Op("Where", {slice, x, Scalar(kMin)})}, Attr("axis", int64_t{-1})));
  }
  ExpectUnchanged();
  EXPECT_EQ(Count("Slice"), 2 * static_cast<int>(slices.size()));
}

TEST_F(CausalMaskRecognitionTest, LeavesTheKeepStageOfATableThatIsNotCausalAlone) {
  auto strict = [](int64_t r, int64_t c) { return c < r; };
  g.AddOutput(GptNeoSoftmax(TableSlice(Table(strict))));
  g.AddOutput(GptNeoSoftmax(TableSlice(Band(0), Ints({0}))));
  ExpectRewritten(2);  // the additive causal mask still is, bit for bit
  EXPECT_EQ(Count("Slice"), 4);
  for (const Node* n : g.nodes()) {
    if (n->op_type() == "CausalSoftmax") EXPECT_FALSE(n->attrs().Has("keep_fill")) << n->name();
  }
}

// An opset-11 Softmax over the last axis (axis 3: the 2-D coercion then
// changes nothing) is rewritten, and the CausalSoftmax is one softmax group
// whatever the opset's default axis.
TEST_F(CausalMaskRecognitionTest, FusesIntoOneCausalSoftmaxGroupAtOpset11) {
  Graph old_opset(11);
  std::swap(g, old_opset);
  x = In("x", {batch, 4, seq, past + seq});
  pad = In("pad", {batch, 1, 1, past + seq}, DType::kBool);
  Value* mask = Mask(Op("And", {Op("LessOrEqual", {Keys(), Queries()}), pad}));
  g.AddOutput(Op("Softmax", {Op("Add", {Op("Mul", {x, Scalar(0.25f)}), mask})}, Attr("axis", int64_t{3})));
  ExpectRewritten(1);
  absl::StatusOr<FusionPlan> plan = PlanFusion(g, env);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int causal_groups = 0;
  for (const Group& group : plan->groups) {
    if (group.kind != GroupKind::kSoftmax) continue;
    ++causal_groups;
    EXPECT_TRUE(group.softmax.causal);
    EXPECT_EQ(group.softmax.scale, 0.25f);
    EXPECT_EQ(group.softmax.x, x);
  }
  EXPECT_EQ(causal_groups, 1);
}

}  // namespace
}  // namespace shapeshift::passes
