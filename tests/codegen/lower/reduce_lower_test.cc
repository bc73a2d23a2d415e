// Reductions over any axes (codegen/lower/reduce_kernel.cc), ArgMax/ArgMin,
// Softmax and LogSoftmax over any axis, against the interpreter on the CPU
// backend and under the CUDA host emulation (threads in both orders), at
// awkward lengths; special values (NaN, infinities, empty reductions) by the
// one comparison rule (graph/tensor_compare.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_join.h"
#include "codegen/kernel_ir.h"
#include "gmock/gmock.h"
#include "graph/tensor_compare.h"
#include "tests/codegen/lower/lower_test_util.h"

namespace shapeshift::codegen::lower::testing {
namespace {

using passes::GroupKind;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const char* const kReduceOps[] = {"ReduceSum",  "ReduceMean",   "ReduceMax",         "ReduceMin",
                                  "ReduceProd", "ReduceL1",     "ReduceL2",          "ReduceLogSum",
                                  "ReduceLogSumExp", "ReduceSumSquare"};

class ReduceLowerTest : public LowerTest {
 protected:
  void Fresh() {
    Graph fresh(17);
    std::swap(g, fresh);
    retired_.push_back(std::move(fresh));
  }

  // A Reduce* node over `axes` (any sign; empty: the op's default), at opset
  // 17: ReduceSum's axes an input, the others' an attribute.
  Node* Reduce(const std::string& op, GraphValue* x, std::vector<int64_t> axes, bool keepdims) {
    Attributes attrs = Attr("keepdims", int64_t{keepdims ? 1 : 0});
    if (op == "ReduceSum") {
      if (axes.empty()) return Op(op, {x}, attrs);
      return Op(op, {x, Ints(axes)}, attrs);
    }
    if (!axes.empty()) attrs.Set("axes", axes);
    return Op(op, {x}, attrs);
  }

  // The group fusion builds for `reduce` (its axes normalized; trailing axes
  // as a count), with `nodes` (prologue, reduce, epilogue) and the graph's
  // outputs.
  passes::Group ReductionGroup(Node* reduce, std::vector<Node*> nodes, std::vector<GraphValue*> inputs,
                               std::vector<int64_t> axes, bool keepdims) {
    const int64_t rank = reduce->input(0)->type().rank();
    if (axes.empty()) {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    }
    for (int64_t& a : axes) a = a < 0 ? a + rank : a;
    std::sort(axes.begin(), axes.end());
    bool trailing = true;
    for (size_t i = 0; i < axes.size(); ++i) trailing = trailing && axes[i] == rank - static_cast<int64_t>(axes.size() - i);
    passes::Group group = MakeGroup(GroupKind::kReduction, std::move(nodes), std::move(inputs));
    group.reduction.reduce = reduce;
    group.reduction.keepdims = keepdims;
    if (trailing) {
      group.reduction.reduced_axes = static_cast<int64_t>(axes.size());
    } else {
      group.reduction.axes = axes;
    }
    return group;
  }

  std::vector<LoweredStep> Lower(const passes::Group& group) {
    absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
    EXPECT_TRUE(steps.ok()) << steps.status();
    return steps.ok() ? *steps : std::vector<LoweredStep>{};
  }

  // CPU and emulated CUDA (both thread orders) agree with the interpreter by
  // the comparison rule at `tol`: NaN where it has NaN, infinities by sign.
  void ExpectAgree(const passes::Group& group, const std::vector<Tensor>& inputs, Tolerance tol = {1e-4, 1e-4}) {
    std::vector<LoweredStep> steps = Lower(group);
    ASSERT_FALSE(steps.empty());
    absl::StatusOr<std::vector<Tensor>> want = Interpret(g, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    absl::StatusOr<std::vector<Tensor>> cpu = RunSteps(steps, inputs);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    TensorComparison c = CompareTensorLists(*cpu, *want, tol);
    EXPECT_TRUE(c.agree) << "cpu: " << c.first_mismatch;
    for (bool reverse : {false, true}) {
      absl::StatusOr<std::vector<Tensor>> cuda = cuda::testing::RunStepsEmulated(g, steps, inputs, {.reverse = reverse});
      ASSERT_TRUE(cuda.ok()) << cuda.status();
      TensorComparison e = CompareTensorLists(*cuda, *want, tol);
      EXPECT_TRUE(e.agree) << "cuda (emulated" << (reverse ? ", reversed" : "") << "): " << e.first_mismatch;
    }
  }

  static Tensor Values(std::vector<int64_t> shape, const std::vector<double>& palette, uint32_t seed) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v = Random(n, seed);
    std::mt19937 rng(seed * 31 + 7);
    for (float& x : v) {
      if (rng() % 4 == 0) x = static_cast<float>(palette[rng() % palette.size()]);
    }
    return Tensor::FromVector<float>(DType::kF32, shape, v);
  }
  // Small integers (many ties), as f32, i64 or i32.
  static Tensor Steps(std::vector<int64_t> shape, uint32_t seed, DType dtype = DType::kF32) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::mt19937 rng(seed);
    std::vector<int64_t> v(n);
    for (int64_t& x : v) x = static_cast<int64_t>(rng() % 7) - 3;
    if (dtype == DType::kI64) return Tensor::FromVector<int64_t>(dtype, shape, v);
    if (dtype == DType::kI32) return Tensor::FromVector<int32_t>(dtype, shape, std::vector<int32_t>(v.begin(), v.end()));
    return Tensor::FromVector<float>(dtype, shape, std::vector<float>(v.begin(), v.end()));
  }

  std::vector<Graph> retired_;
};

// Every Reduce* op over a middle axis (columns: mean pooling's form), the
// outer axes around a kept one (strided lines), the trailing axes (rows),
// a negative axis and the default (every axis), keepdims on and off.
TEST_F(ReduceLowerTest, EveryReduceOpOverAnyAxesMatchesTheInterpreter) {
  const std::vector<std::vector<int64_t>> axes_sets = {{1}, {0, 2}, {1, 2}, {-2}, {}};
  int form = 0;
  for (const char* op : kReduceOps) {
    for (const std::vector<int64_t>& axes : axes_sets) {
      const bool keepdims = form++ % 2 == 0;
      Fresh();
      GraphValue* x = In("x", {batch, seq, 24});
      Node* reduce = Reduce(op, x, axes, keepdims);
      g.AddOutput(reduce->output(0));
      passes::Group group = ReductionGroup(reduce, {reduce}, {x}, axes, keepdims);
      for (int64_t s : AwkwardSeqs()) {
        SCOPED_TRACE(absl::StrCat(op, " axes ", axes.size() == 0 ? "default" : absl::StrJoin(axes, ","),
                                  " keepdims ", keepdims, " seq ", s));
        // Prod and LogSum of long lines over- or underflow; give them values near 1.
        Tensor in = RandomTensor({2, s, 24}, 3);
        if (std::string(op) == "ReduceProd" || std::string(op) == "ReduceLogSum") {
          float* p = in.mutable_data<float>();
          for (int64_t i = 0; i < in.num_elements(); ++i) p[i] = 1.0f + 0.001f * p[i];
        }
        ExpectAgree(group, {in}, {1e-4, 1e-4});
      }
    }
  }
}

// The kernel forms: a middle axis with the last kept is one pass over the
// input in memory order (the columns form: a sequential loop over the
// reduced rows around a contiguous inner loop), the others lines.
TEST_F(ReduceLowerTest, AMiddleAxisIsReducedInMemoryOrder) {
  GraphValue* x = In("x", {batch, seq, 24});
  Node* reduce = Reduce("ReduceSum", x, {1}, false);
  g.AddOutput(reduce->output(0));
  std::vector<LoweredStep> steps = Lower(ReductionGroup(reduce, {reduce}, {x}, {1}, false));
  ASSERT_EQ(steps.size(), 1u);
  const Kernel& k = std::get<KernelCall>(steps[0]).kernel;
  const std::string text = Print(k);
  EXPECT_THAT(text, ::testing::HasSubstr("for r in [0, d1)")) << text;
  // Row r of the input, read at j: contiguous in the inner loop.
  EXPECT_THAT(text, ::testing::HasSubstr("out1[j + 24*p] = (out1[j + 24*p] + in0[24*d1*p + j + 24*r])")) << text;
  EXPECT_EQ(k.parallel_extent, SymExpr::Symbol("d0")) << text;
}

// Mean pooling as sentence-transformers computes it: sum(x * mask, axis 1) /
// sum(mask, axis 1), the product a prologue computed per element in the
// reduction's kernel, the division its epilogue.
TEST_F(ReduceLowerTest, MaskedMeanPoolingWithPrologueAndEpilogueMatchesTheInterpreter) {
  GraphValue* x = In("x", {batch, seq, 24});
  GraphValue* mask = In("mask", {batch, seq, 1});
  GraphValue* count = In("count", {batch, 24});
  Node* mul = Op("Mul", {x, mask});
  Node* sum = Reduce("ReduceSum", mul->output(0), {1}, false);
  Node* div = Op("Div", {sum->output(0), count});
  g.AddOutput(div->output(0));
  passes::Group group = ReductionGroup(sum, {mul, sum, div}, {x, mask, count}, {1}, false);
  for (int64_t s : AwkwardSeqs()) {
    SCOPED_TRACE(absl::StrCat("seq ", s));
    Tensor m = Steps({3, s, 1}, 5);
    float* p = m.mutable_data<float>();
    for (int64_t i = 0; i < m.num_elements(); ++i) p[i] = p[i] > 0 ? 1.0f : 0.0f;
    ExpectAgree(group, {RandomTensor({3, s, 24}, 4), m, RandomTensor({3, 24}, 6)});
  }
}

// NaN propagates through max and min (also when it is not first), an
// infinity through sums, and an empty reduction (past = 0) is the initial
// value finished: sum 0, max -inf, min +inf, prod 1, mean NaN, log-sum -inf.
// (No huge terms of both signs: whether their f32 partial sums overflow, or
// a product of 1e30s reaches inf before a 1e-40 comes, depends on the order,
// which the interpreter's double sum does not model.)
TEST_F(ReduceLowerTest, SpecialValuesAndEmptyReductionsAreTheInterpreters) {
  const std::vector<double> palette = {kNan, kInf, -kInf, 0.0, -0.0, 1e-40, 1e30};
  const std::vector<double> for_products = {kNan, kInf, -kInf, 0.0, -0.0};
  for (const char* op : kReduceOps) {
    for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{1}, {2}, {0, 1}}) {
      Fresh();
      GraphValue* x = In("x", {batch, past, 19});
      Node* reduce = Reduce(op, x, axes, true);
      g.AddOutput(reduce->output(0));
      passes::Group group = ReductionGroup(reduce, {reduce}, {x}, axes, true);
      for (int64_t p : {0, 1, 2, 7, 16}) {
        SCOPED_TRACE(absl::StrCat(op, " axes ", absl::StrJoin(axes, ","), " past ", p));
        // The comparison rule's tolerance: sums of 1e38 overflow or not by order.
        ExpectAgree(group, {Values({2, p, 19}, std::string(op) == "ReduceProd" ? for_products : palette, 11 + p)},
                    {1e-3, 1e-3});
      }
    }
  }
}

// Integers accumulate in i64 like the interpreter: exact, and an empty
// max/min is int64's limit cast to the element type.
TEST_F(ReduceLowerTest, IntegerReductionsAreExact) {
  for (DType dtype : {DType::kI64, DType::kI32}) {
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                           "ReduceSumSquare"}) {
      for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{1}, {2}, {0, 2}}) {
        Fresh();
        GraphValue* x = In("x", {batch, past, 13}, dtype);
        Node* reduce = Reduce(op, x, axes, false);
        g.AddOutput(reduce->output(0));
        passes::Group group = ReductionGroup(reduce, {reduce}, {x}, axes, false);
        for (int64_t p : {0, 1, 5, 16}) {
          SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " ", op, " axes ", absl::StrJoin(axes, ","), " past ", p));
          ExpectAgree(group, {Steps({2, p, 13}, 21 + p, dtype)}, {0, 0});
        }
      }
    }
  }
}

// noop_with_empty_axes and no axes: the identity for every op (the
// interpreter's reading), its epilogue applied.
TEST_F(ReduceLowerTest, NoopWithEmptyAxesIsTheIdentity) {
  for (const char* op : {"ReduceSumSquare", "ReduceLogSumExp", "ReduceMin"}) {
    Fresh();
    GraphValue* x = In("x", {batch, seq, 5});
    Attributes attrs = Attr("noop_with_empty_axes", int64_t{1});
    Node* reduce = Op(op, {x}, attrs);
    Node* neg = Op("Neg", {reduce->output(0)});
    g.AddOutput(neg->output(0));
    passes::Group group = MakeGroup(GroupKind::kReduction, {reduce, neg}, {x});
    group.reduction.reduce = reduce;
    group.reduction.noop = true;
    for (int64_t s : {1, 13, 512}) ExpectAgree(group, {RandomTensor({2, s, 5}, 31)}, {0, 0});
  }
}

// ArgMax/ArgMin on every axis, keepdims on and off, first and last index
// among ties, NaN (never chosen unless first in the line: then index 0),
// f32 and integers.
TEST_F(ReduceLowerTest, ArgMaxAndArgMinOnEveryAxisMatchTheInterpreter) {
  const std::vector<double> palette = {kNan, kInf, -kInf, 3.0, -3.0};
  int form = 0;
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (DType dtype : {DType::kF32, DType::kI64, DType::kI32}) {
      for (int64_t axis : {0, 1, 2, -1}) {
        for (int64_t last : {0, 1}) {
          const bool keepdims = form++ % 2 == 0;
          Fresh();
          GraphValue* x = In("x", {batch, seq, 9}, dtype);
          Attributes attrs = Attr("axis", axis);
          attrs.Set("keepdims", int64_t{keepdims ? 1 : 0});
          attrs.Set("select_last_index", last);
          Node* arg = Op(op, {x}, attrs);
          g.AddOutput(arg->output(0));
          passes::Group group = ReductionGroup(arg, {arg}, {x}, {axis}, keepdims);
          for (int64_t s : {1, 2, 13, 512}) {
            SCOPED_TRACE(absl::StrCat(op, " ", DTypeName(dtype), " axis ", axis, " last ", last, " seq ", s));
            Tensor in = Steps({3, s, 9}, 41 + s, dtype);
            if (dtype == DType::kF32) {
              Tensor special = Values({3, s, 9}, palette, 43 + s);
              float* p = in.mutable_data<float>();
              for (int64_t i = 0; i < in.num_elements(); i += 3) p[i] = special.data<float>()[i];
            }
            ExpectAgree(group, {in}, {0, 0});
          }
        }
      }
    }
  }
}

// Softmax and LogSoftmax over any axis at opset 13 (a line at the axis'
// stride), and LogSoftmax before opset 13 (every axis from `axis` on).
TEST_F(ReduceLowerTest, SoftmaxAndLogSoftmaxOverAnyAxisMatchTheInterpreter) {
  for (int opset : {17, 11}) {
    for (const char* op : {"Softmax", "LogSoftmax"}) {
      for (int64_t axis : {0, 1, 2, -1}) {
        Graph fresh(opset);
        std::swap(g, fresh);
        retired_.push_back(std::move(fresh));
        GraphValue* x = In("x", {batch, seq, 11});
        Node* softmax = Op(op, {x}, Attr("axis", axis));
        g.AddOutput(softmax->output(0));
        passes::Group group = MakeGroup(GroupKind::kSoftmax, {softmax}, {x});
        group.softmax.x = x;
        group.softmax.log = std::string(op) == "LogSoftmax";
        group.softmax.axis = axis < 0 ? axis + 3 : axis;
        group.softmax.axis_end = opset < 13 ? 3 : group.softmax.axis + 1;
        for (int64_t s : AwkwardSeqs()) {
          SCOPED_TRACE(absl::StrCat(op, " opset ", opset, " axis ", axis, " seq ", s));
          ExpectAgree(group, {Values({2, s, 11}, {kNan, -kInf, 80.0, -80.0}, 51 + s)});
        }
      }
    }
  }
}

}  // namespace
}  // namespace shapeshift::codegen::lower::testing
