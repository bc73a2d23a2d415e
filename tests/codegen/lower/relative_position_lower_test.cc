// RelativePositionExpand in the kernels that read it (passes/
// relative_position_recognition.h): the softmax row kernel computing T5's
// bias from its loop indices, the gather kernel computing DeBERTa's indices
// the same way (its index check reading the S + T - 1 positions), and an
// expansion no consumer absorbed as a kernel of its own. Each against the
// interpreter on the CPU and as CUDA C under the host emulation.
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/codegen/lower/lower_test_util.h"

namespace shapeshift::codegen::lower::testing {
namespace {

using passes::GroupKind;
using ::testing::HasSubstr;

class RelativePositionLowerTest : public LowerTest {
 protected:
  GraphValue* I64(int64_t v) { return g.AddConstant("", Tensor::ScalarI64(v)); }
  // Dim `axis` of `v` as a one-element shape value (a compile-time node).
  GraphValue* Dim(GraphValue* v, int64_t axis) {
    return Op("Gather", {Op("Shape", {v})->output(0), I64(axis)})->output(0);
  }
  Node* Expand(GraphValue* x, GraphValue* rows, GraphValue* cols, int64_t axis) {
    return Op("RelativePositionExpand", {x, rows, cols}, Attr("axis", axis));
  }
  static Tensor Ids(std::vector<int64_t> shape, int64_t bound, uint32_t seed) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<int64_t> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = (i * 7 + seed) % bound;
    return Tensor::FromVector<int64_t>(DType::kI64, shape, v);
  }
};

// T5: softmax(scores + Where(pad, bias[h, j - i + S - 1], min)), the bias
// per head and difference ([1, heads, 2S - 1]) read at an index of the loop
// indices; batch row 1 pads its last key.
TEST_F(RelativePositionLowerTest, SoftmaxReadsTheBiasAtTheDifferenceOfItsIndices) {
  GraphValue* scores = In("scores", {batch, 2, seq, seq});
  GraphValue* pad = In("pad", {batch, 1, 1, seq}, DType::kBool);
  GraphValue* bias = In("bias", {1, 2, 2 * seq - 1});
  GraphValue* len = Dim(scores, 2);
  Node* expand = Expand(bias, len, len, 2);
  Node* where = Op("Where", {pad, expand->output(0), Scalar(std::numeric_limits<float>::lowest())});
  Node* add = Op("Add", {scores, where->output(0)});
  Node* softmax = Op("Softmax", {add->output(0)}, Attr("axis", int64_t{-1}));
  g.AddOutput(softmax->output(0));
  passes::Group group = MakeGroup(GroupKind::kSoftmax, {expand, where, add, softmax}, {scores, pad, bias});
  group.softmax.x = scores;
  group.softmax.mask = where->output(0);
  for (int64_t s : {1, 2, 7, 13, 129}) {
    SCOPED_TRACE(s);
    Tensor mask = Tensor::Zeros(DType::kBool, {2, 1, 1, s}).value();
    for (int64_t k = 0; k < 2 * s; ++k) mask.mutable_data<uint8_t>()[k] = k != 2 * s - 1 || s == 1;
    ExpectMatchesInterpreter(group, {RandomTensor({2, 2, s, s}, s), mask, RandomTensor({1, 2, 2 * s - 1}, 7)});
  }
}

// An expansion with S != T (seq queries over past + seq keys) and a
// trailing dim, stored by an elementwise kernel of its own.
TEST_F(RelativePositionLowerTest, ExpansionOfItsOwnMatchesInterpreter) {
  In("past_len", {past});  // binds past (unread)
  GraphValue* q = In("q", {batch, seq});
  GraphValue* k = In("k", {batch, past + seq});
  GraphValue* x = In("x", {batch, 2 * seq + past - 1, 3});
  Node* expand = Expand(x, Dim(q, 1), Dim(k, 1), 1);
  g.AddOutput(expand->output(0));
  passes::Group group = MakeGroup(GroupKind::kElementwise, {expand}, {x});
  group.elementwise.domain = expand->output(0)->type().shape;
  for (int64_t s : {1, 2, 7, 13}) {
    for (int64_t p : {int64_t{0}, int64_t{5}}) {
      SCOPED_TRACE(absl::StrCat("seq ", s, " past ", p));
      ExpectMatchesInterpreter(group, {RandomTensor({p}, 1), RandomTensor({2, s}, 2), RandomTensor({2, p + s}, 3),
                                       RandomTensor({2, 2 * s + p - 1, 3}, s)});
    }
  }
}

// DeBERTa: GatherElements(scores [2·batch, S, 16], Expand(positions[j - i +
// S - 1])) with the positions' S + T - 1 entries read by the kernel; the
// index check reads those entries, not an [2·batch, S, S] tensor.
TEST_F(RelativePositionLowerTest, GatherReadsItsIndicesAtTheDifferenceOfItsIndices) {
  In("batch_len", {batch});  // binds batch (unread)
  GraphValue* scores = In("scores", {2 * batch, seq, 16});
  GraphValue* positions = In("positions", {1, 2 * seq - 1}, DType::kI64);
  GraphValue* heads = In("heads", {2 * batch, seq, seq});  // its shape only
  GraphValue* len = Dim(scores, 1);
  Node* expand = Expand(positions, len, len, 1);
  Node* broadcast = Op("Expand", {expand->output(0), Op("Shape", {heads})->output(0)});
  Node* gather = Op("GatherElements", {scores, broadcast->output(0)}, Attr("axis", int64_t{-1}));
  g.AddOutput(gather->output(0));
  passes::Group group = MakeGroup(GroupKind::kOther, {expand, broadcast, gather}, {scores, positions});
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_TRUE(steps.ok()) << steps.status();
  ASSERT_EQ(steps->size(), 2u);
  const auto* check = std::get_if<IndexCheckCall>(&(*steps)[0]);
  ASSERT_NE(check, nullptr);
  EXPECT_EQ(check->indices, positions);
  for (int64_t s : {1, 2, 7, 13, 129}) {
    SCOPED_TRACE(s);
    ExpectMatchesInterpreter(group, {RandomTensor({2}, 1), RandomTensor({4, s, 16}, s), Ids({1, 2 * s - 1}, 16, 3),
                                     RandomTensor({4, s, s}, 5)});
  }
  // A position past the scores' 16 columns fails the request naming the node.
  Tensor bad = Ids({1, 13}, 16, 3);
  bad.mutable_data<int64_t>()[12] = 16;
  absl::StatusOr<std::vector<Tensor>> out =
      RunSteps(*steps, {RandomTensor({2}, 1), RandomTensor({4, 7, 16}, 1), bad, RandomTensor({4, 7, 7}, 2)});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr(gather->name()));
}

}  // namespace
}  // namespace shapeshift::codegen::lower::testing
