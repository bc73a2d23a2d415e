// Every kernel kind the CPU path lowers, on the CUDA backend's terms:
//  - under the host emulation (emitted CUDA C compiled by the host compiler,
//    threads forward and reversed) against the interpreter, and on the CPU
//    backend, at row lengths 0, 1, 7, 17, 33, 97, 511 and 513;
//  - (with the CUDA toolkit) compiled by NVRTC to cubins for sm_80 and
//    sm_90 in one module, with ptxas's register/spill report per kernel.
// The kinds are the groups the lowering produces (codegen/lower/README.md),
// the shapes RMSNorm and RoPE decompose into (and the one row kernel each is
// recognized into, GPT-J's partial every-two RoPE too),
// the GEMM epilogue kernels of
// the CUDA GEMM plan, the embedding gather, ScatterND (with the index
// check kernel a device program runs before it), the relative-position
// forms (T5's bias in the softmax, DeBERTa's indices in the gather), the
// fused attention (an AttentionCall: the CUDA attention kernel), and
// the kernel library.
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <set>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "codegen/cuda/attention_kernel.h"
#include "codegen/cuda/gather_kernel.h"
#include "codegen/cuda/gemm_plan.h"
#include "codegen/cuda/index_check_kernel.h"
#include "codegen/kernel_library.h"
#include "passes/pipeline.h"
#include "tests/codegen/lower/lower_test_util.h"
#include "tests/codegen/test_util.h"
#include "tests/support/cuda/host_module.h"

#ifdef SHAPESHIFT_HAVE_CUDA
#include "codegen/cuda/nvrtc_compiler.h"
#endif

namespace shapeshift::codegen::lower::testing {
namespace {

using passes::GroupKind;

const std::vector<int64_t> kLengths = {0, 1, 7, 17, 33, 97, 511, 513};

struct KindCase {
  std::string name;
  std::vector<LoweredStep> steps;
  std::function<std::vector<Tensor>(int64_t n)> inputs;
  bool cpu_runs = true;  // the CPU fixture has no gather step
};

class KernelKindsTest : public LowerTest {
 protected:
  KernelKindsTest() { n = env.DeclareSymbol({"n", 0, 600}).value(); }

  // A fresh graph for the next kind (groups of the previous one are dead).
  void Fresh() {
    Graph fresh(17);
    std::swap(g, fresh);
    retired_.push_back(std::move(fresh));
  }

  std::vector<LoweredStep> Lower(const passes::Group& group) {
    absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
    EXPECT_TRUE(steps.ok()) << steps.status();
    return steps.ok() ? *steps : std::vector<LoweredStep>{};
  }
  passes::Group Elementwise(std::vector<Node*> nodes, std::vector<GraphValue*> inputs,
                            std::vector<GraphValue*> outputs) {
    passes::Group group = MakeGroup(GroupKind::kElementwise, std::move(nodes), std::move(inputs));
    group.outputs = std::move(outputs);
    group.elementwise.domain = group.outputs[0]->type().shape;
    return group;
  }
  static Tensor Ints(std::vector<int64_t> shape, int64_t mod, DType dtype = DType::kI64) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    std::vector<int64_t> v(count);
    for (int64_t i = 0; i < count; ++i) v[i] = (i * 7 + 3) % mod;
    if (dtype == DType::kI32) return Tensor::FromVector<int32_t>(dtype, shape, std::vector<int32_t>(v.begin(), v.end()));
    return Tensor::FromVector<int64_t>(dtype, shape, v);
  }

  // Builds kind `index` (0-based) on a fresh graph; false past the last.
  bool Build(int index, KindCase* out);

  // CPU backend, emulated CUDA (both thread orders) and the interpreter agree.
  void ExpectAgree(const KindCase& kind, int64_t len) {
    SCOPED_TRACE(absl::StrCat(kind.name, " n=", len));
    std::vector<Tensor> in = kind.inputs(len);
    absl::StatusOr<std::vector<Tensor>> want = Interpret(g, in);
    ASSERT_TRUE(want.ok()) << want.status();
    auto check = [&](const std::vector<Tensor>& got, const char* backend) {
      ASSERT_EQ(got.size(), want->size()) << backend;
      for (size_t o = 0; o < got.size(); ++o) {
        ASSERT_EQ(got[o].shape(), (*want)[o].shape()) << backend;
        for (int64_t i = 0; i < got[o].num_elements(); ++i) {
          double w = (*want)[o].GetAsDouble(i), v = got[o].GetAsDouble(i);
          ASSERT_TRUE(codegen::testing::Close(v, w, 1e-4, 1e-4))
              << backend << " output " << o << " element " << i << ": " << v << " vs " << w;
        }
      }
    };
    if (kind.cpu_runs) {
      absl::StatusOr<std::vector<Tensor>> cpu = RunSteps(kind.steps, in);
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      check(*cpu, "cpu");
    }
    absl::StatusOr<std::vector<Tensor>> cuda = cuda::testing::RunStepsEmulated(g, kind.steps, in);
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    check(*cuda, "cuda (emulated)");
    // The other thread and block order gives the same bits (anything else
    // would be a race on a GPU); another block size, another reduction
    // tree, so only the same values within tolerance.
    absl::StatusOr<std::vector<Tensor>> reversed = cuda::testing::RunStepsEmulated(g, kind.steps, in, {.reverse = true});
    ASSERT_TRUE(reversed.ok()) << reversed.status();
    for (size_t o = 0; o < cuda->size(); ++o) {
      EXPECT_EQ(std::memcmp((*cuda)[o].raw(), (*reversed)[o].raw(), (*cuda)[o].byte_size()), 0)
          << "output " << o << " depends on the CUDA thread order";
    }
    absl::StatusOr<std::vector<Tensor>> narrow = cuda::testing::RunStepsEmulated(g, kind.steps, in, {.block_override = 64});
    ASSERT_TRUE(narrow.ok()) << narrow.status();
    check(*narrow, "cuda (emulated, 64-thread blocks)");
  }

  SymExpr n;
  std::vector<Graph> retired_;
};

bool KernelKindsTest::Build(int index, KindCase* kind) {
  Fresh();
  auto attr_axes = [](std::vector<int64_t> axes) {
    Attributes a = Attr("axes", std::move(axes));
    a.Set("keepdims", int64_t{1});
    return a;
  };
  switch (index) {
    case 0: {  // arithmetic and transcendental math with broadcasting
      GraphValue* x = In("x", {batch, n});
      GraphValue* y = In("y", {n});
      Node* sig = Op("Sigmoid", {x});
      Node* mul = Op("Mul", {sig->output(0), y});
      Node* abs = Op("Abs", {x});
      Node* sqrt = Op("Sqrt", {abs->output(0)});
      Node* log = Op("Log", {Op("Add", {abs->output(0), Scalar(1)})->output(0)});
      Node* tanh = Op("Tanh", {y});
      Node* sum = Op("Sum", {mul->output(0), sqrt->output(0), log->output(0)});
      Node* out = Op("Div", {sum->output(0), Op("Add", {Op("Exp", {tanh->output(0)})->output(0), Scalar(1)})->output(0)});
      g.AddOutput(out->output(0));
      std::vector<Node*> nodes = g.nodes();
      *kind = {"elementwise math", Lower(Elementwise(nodes, {x, y}, g.outputs())),
               [this](int64_t len) { return std::vector<Tensor>{RandomTensor({2, len}, 1), RandomTensor({len}, 2)}; }};
      return true;
    }
    case 1: {  // compare, select, min/max, IsNaN to bool: two outputs, two dtypes
      GraphValue* x = In("x", {batch, n});
      GraphValue* y = In("y", {batch, n});
      Node* less = Op("Less", {x, y});
      Node* where = Op("Where", {less->output(0), Op("Max", {x, Scalar(0.25f)})->output(0),
                                 Op("Min", {y, Scalar(-0.5f)})->output(0)});
      Node* nan = Op("IsNaN", {Op("Div", {x, y})->output(0)});
      g.AddOutput(where->output(0));
      g.AddOutput(nan->output(0));
      std::vector<Node*> nodes = g.nodes();
      *kind = {"select, compare, IsNaN", Lower(Elementwise(nodes, {x, y}, g.outputs())),
               [this](int64_t len) { return std::vector<Tensor>{RandomTensor({2, len}, 3), RandomTensor({2, len}, 4)}; }};
      return true;
    }
    case 2:
    case 3: {  // the Gelu node, erf and tanh forms, after a bias
      bool erf = index == 2;
      GraphValue* x = In("x", {batch, seq, 24});
      Node* add = Op("Add", {x, Const({24}, 1)});
      Node* gelu = Op("Gelu", {add->output(0)}, Attr("approximate", std::string(erf ? "none" : "tanh")));
      g.AddOutput(gelu->output(0));
      *kind = {erf ? "bias + gelu (erf)" : "bias + gelu (tanh)",
               Lower(Elementwise({add, gelu}, {x}, g.outputs())),
               [this](int64_t len) { return std::vector<Tensor>{RandomTensor({2, std::max<int64_t>(len, 1), 24}, 5)}; }};
      return true;
    }
    case 4: {  // attention mask from ids: unsqueeze, cast, broadcast
      GraphValue* mask = In("mask", {batch, n}, DType::kI64);
      Node* u1 = Op("Unsqueeze", {mask, LowerTest::Ints({1})});
      Node* u2 = Op("Unsqueeze", {u1->output(0), LowerTest::Ints({2})});
      Node* cast = Op("Cast", {u2->output(0)}, Attr("to", int64_t{1}));
      Node* sub = Op("Sub", {Scalar(1), cast->output(0)});
      Node* mul = Op("Mul", {sub->output(0), Scalar(-10000.0f)});
      g.AddOutput(mul->output(0));
      *kind = {"mask broadcast + cast", Lower(Elementwise({u1, u2, cast, sub, mul}, {mask}, g.outputs())),
               [](int64_t len) { return std::vector<Tensor>{KernelKindsTest::Ints({2, len}, 2)}; }};
      return true;
    }
    case 5: {  // head transpose
      GraphValue* x = In("x", {batch, n, 3, 16});
      Node* t = Op("Transpose", {x}, Attr("perm", std::vector<int64_t>{0, 2, 1, 3}));
      g.AddOutput(t->output(0));
      passes::Group group = MakeGroup(GroupKind::kTranspose, {t}, {x});
      group.transpose.perm = {0, 2, 1, 3};
      *kind = {"transpose", Lower(group),
               [this](int64_t len) { return std::vector<Tensor>{RandomTensor({2, len, 3, 16}, 6)}; }};
      return true;
    }
    case 6: {  // a reshape that cannot alias: a copy
      GraphValue* x = In("x", {batch, n, 6});
      Node* t = Op("Transpose", {x}, Attr("perm", std::vector<int64_t>{0, 2, 1}));
      Node* reshape = Op("Reshape", {t->output(0), LowerTest::Ints({0, -1})});
      g.AddOutput(reshape->output(0));
      *kind = {"reshape copy", Lower(MakeGroup(GroupKind::kCopy, {t, reshape}, {x})),
               [this](int64_t len) { return std::vector<Tensor>{RandomTensor({2, len, 6}, 7)}; }};
      return true;
    }
    case 7: {  // softmax(x * scale + mask)
      GraphValue* scores = In("scores", {batch, 2, 3, n});
      GraphValue* mask = In("mask", {batch, 1, 1, n});
      Node* mul = Op("Mul", {scores, Scalar(0.125f)});
      Node* add = Op("Add", {mul->output(0), mask});
      Node* softmax = Op("Softmax", {add->output(0)}, Attr("axis", int64_t{-1}));
      g.AddOutput(softmax->output(0));
      passes::Group group = MakeGroup(GroupKind::kSoftmax, {mul, add, softmax}, {scores, mask});
      group.softmax = {scores, 0.125f, mask};
      *kind = {"softmax", Lower(group), [this](int64_t len) {
                 return std::vector<Tensor>{RandomTensor({2, 2, 3, len}, 8), RandomTensor({2, 1, 1, len}, 9)};
               }};
      return true;
    }
    case 8: {  // residual + layer norm, the sum also stored
      GraphValue* x = In("x", {batch, n});
      GraphValue* r = In("r", {batch, n});
      GraphValue* gamma = In("gamma", {n});
      GraphValue* beta = In("beta", {n});
      Node* add = Op("Add", {x, r});
      Node* ln = Op("LayerNormalization", {add->output(0), gamma, beta}, Attr("epsilon", 1e-5f));
      g.AddOutput(ln->output(0));
      g.AddOutput(add->output(0));
      passes::Group group = MakeGroup(GroupKind::kLayerNorm, {add, ln}, {x, r, gamma, beta});
      group.layer_norm = {x, r, gamma, beta, 1e-5f, add->output(0)};
      *kind = {"residual + layer norm", Lower(group), [this](int64_t len) {
                 return std::vector<Tensor>{RandomTensor({3, len}, 10), RandomTensor({3, len}, 11),
                                            RandomTensor({len}, 12), RandomTensor({len}, 13)};
               }};
      return true;
    }
    case 9:
    case 10:
    case 11:
    case 12:
    case 13: {  // trailing-axis reductions with an epilogue
      const char* ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare"};
      const char* op = ops[index - 9];
      GraphValue* x = In("x", {batch, 3, n});
      // From opset 13 ReduceSum takes its axes as an input, the others until 18 as an attribute.
      Node* reduce = std::string(op) == "ReduceSum" ? Op(op, {x, LowerTest::Ints({2})}, Attr("keepdims", int64_t{1}))
                                                    : Op(op, {x}, attr_axes({2}));
      Node* epilogue = Op("Mul", {reduce->output(0), Scalar(0.5f)});
      g.AddOutput(epilogue->output(0));
      passes::Group group = MakeGroup(GroupKind::kReduction, {reduce, epilogue}, {x});
      group.reduction = {reduce, 1, true};
      *kind = {op, Lower(group), [this](int64_t len) { return std::vector<Tensor>{RandomTensor({2, 3, len}, 14)}; }};
      return true;
    }
    case 14: {  // RMSNorm as exporters write it: x / sqrt(mean(x*x) + eps) * w
      GraphValue* x = In("x", {batch, seq, n});
      GraphValue* w = In("w", {n});
      Node* sq = Op("Mul", {x, x});
      Node* mean = Op("ReduceMean", {sq->output(0)}, attr_axes({2}));
      Node* eps = Op("Add", {mean->output(0), Scalar(1e-6f)});
      Node* root = Op("Sqrt", {eps->output(0)});
      Node* div = Op("Div", {x, root->output(0)});
      Node* scale = Op("Mul", {div->output(0), w});
      g.AddOutput(scale->output(0));
      std::vector<LoweredStep> steps = Lower(Elementwise({sq}, {x}, {sq->output(0)}));
      passes::Group reduction = MakeGroup(GroupKind::kReduction, {mean, eps, root}, {sq->output(0)});
      reduction.outputs = {root->output(0)};
      reduction.reduction = {mean, 1, true};
      for (LoweredStep& s : Lower(reduction)) steps.push_back(std::move(s));
      for (LoweredStep& s : Lower(Elementwise({div, scale}, {x, root->output(0), w}, g.outputs()))) {
        steps.push_back(std::move(s));
      }
      *kind = {"RMSNorm (reduction + elementwise)", std::move(steps), [this](int64_t len) {
                 return std::vector<Tensor>{RandomTensor({2, 3, len}, 15), RandomTensor({len}, 16)};
               }};
      return true;
    }
    case 15: {  // RoPE, rotate-half form: x*cos + concat(-x2, x1)*sin
      GraphValue* x = In("x", {batch, n, 8});
      GraphValue* cos = In("cos", {n, 8});
      GraphValue* sin = In("sin", {n, 8});
      Node* x1 = Op("Slice", {x, LowerTest::Ints({0}), LowerTest::Ints({4}), LowerTest::Ints({2})});
      Node* x2 = Op("Slice", {x, LowerTest::Ints({4}), LowerTest::Ints({8}), LowerTest::Ints({2})});
      Node* neg = Op("Neg", {x2->output(0)});
      Node* rot = Op("Concat", {neg->output(0), x1->output(0)}, Attr("axis", int64_t{2}));
      Node* a = Op("Mul", {x, cos});
      Node* b = Op("Mul", {rot->output(0), sin});
      Node* out = Op("Add", {a->output(0), b->output(0)});
      g.AddOutput(out->output(0));
      std::vector<LoweredStep> steps;
      for (auto [node, start] : {std::pair{x1, 0}, std::pair{x2, 4}}) {
        passes::Group slice = MakeGroup(GroupKind::kSlice, {node}, {x});
        slice.outputs = {node->output(0)};
        slice.slice.starts = {0, 0, start};
        slice.slice.steps = {1, 1, 1};
        for (LoweredStep& s : Lower(slice)) steps.push_back(std::move(s));
      }
      for (LoweredStep& s : Lower(Elementwise({neg}, {x2->output(0)}, {neg->output(0)}))) steps.push_back(std::move(s));
      passes::Group concat = MakeGroup(GroupKind::kConcat, {rot}, {neg->output(0), x1->output(0)});
      concat.outputs = {rot->output(0)};
      concat.concat.axis = 2;
      for (LoweredStep& s : Lower(concat)) steps.push_back(std::move(s));
      for (LoweredStep& s : Lower(Elementwise({a, b, out}, {x, cos, sin, rot->output(0)}, g.outputs()))) {
        steps.push_back(std::move(s));
      }
      *kind = {"RoPE (slices, concat, elementwise)", std::move(steps), [this](int64_t len) {
                 return std::vector<Tensor>{RandomTensor({2, len, 8}, 17), RandomTensor({len, 8}, 18),
                                            RandomTensor({len, 8}, 19)};
               }};
      return true;
    }
    case 16: {  // KV-cache concat, past of length n (0 included)
      GraphValue* cache = In("past_k", {batch, 2, n, 8});
      GraphValue* cur = In("k", {batch, 2, seq, 8});
      Node* concat = Op("Concat", {cache, cur}, Attr("axis", int64_t{2}));
      g.AddOutput(concat->output(0));
      passes::Group group = MakeGroup(GroupKind::kConcat, {concat}, {cache, cur});
      group.concat.axis = 2;
      *kind = {"KV-cache concat", Lower(group), [this](int64_t len) {
                 return std::vector<Tensor>{RandomTensor({2, 2, len, 8}, 20), RandomTensor({2, 2, 3, 8}, 21)};
               }};
      return true;
    }
    case 17: {  // strided slice
      GraphValue* x = In("x", {batch, n, 12});
      Node* slice = Op("Slice", {x, LowerTest::Ints({1}), LowerTest::Ints({11}), LowerTest::Ints({2}),
                                 LowerTest::Ints({3})});
      g.AddOutput(slice->output(0));
      passes::Group group = MakeGroup(GroupKind::kSlice, {slice}, {x});
      group.slice.starts = {0, 0, 1};
      group.slice.steps = {1, 1, 3};
      *kind = {"strided slice", Lower(group),
               [this](int64_t len) { return std::vector<Tensor>{RandomTensor({2, len, 12}, 22)}; }};
      return true;
    }
    case 18: {  // embedding gather (the hand-written CUDA kernel)
      GraphValue* ids = In("ids", {batch, n}, DType::kI64);
      GraphValue* table = Const({30, 8}, 23);
      Node* gather = Op("Gather", {table, ids});
      g.AddOutput(gather->output(0));
      *kind = {"embedding gather", Lower(MakeGroup(GroupKind::kGather, {gather}, {table, ids})),
               [](int64_t len) { return std::vector<Tensor>{KernelKindsTest::Ints({2, len}, 30)}; }, false};
      return true;
    }
    case 19: {  // a dense GEMM whose erf GELU and residual run in the epilogue kernel
      GraphValue* x = In("x", {batch, n, 32});
      GraphValue* res = In("res", {batch, n, 24});
      GraphValue* w = Const({32, 24}, 24);
      GraphValue* bias = Const({24}, 25);
      Node* mm = Op("MatMul", {x, w});
      Node* add = Op("Add", {mm->output(0), bias});
      Node* gelu = Op("Gelu", {add->output(0)});
      Node* residual = Op("Add", {gelu->output(0), res});
      g.AddOutput(residual->output(0));
      passes::Group group = MakeGroup(GroupKind::kMatmul, {mm, add, gelu, residual}, {x, w, bias, res});
      group.matmul.a = x;
      group.matmul.b = w;
      group.matmul.b_is_2d = true;
      group.matmul.bias = bias;
      group.matmul.activation = passes::GeluForm::kErf;
      group.matmul.residual = res;
      *kind = {"GEMM + epilogue kernel (erf GELU, residual)", Lower(group), [this](int64_t len) {
                 return std::vector<Tensor>{RandomTensor({2, len, 32}, 26), RandomTensor({2, len, 24}, 27)};
               }};
      return true;
    }
    case 20: {  // ScatterND: the index check, the copy, the scatter (tuples repeat, and come negative)
      GraphValue* data = In("data", {batch, 8, n});
      GraphValue* where = In("where", {6, 2}, DType::kI64);
      GraphValue* rows = In("rows", {6, n});
      Node* scatter = Op("ScatterND", {data, where, rows});
      g.AddOutput(scatter->output(0));
      *kind = {"ScatterND (check, copy, scatter)", Lower(MakeGroup(GroupKind::kOther, {scatter}, {data, where, rows})),
               [](int64_t len) {
                 // (0,3) three times (as (0,-5) once), (1,7) twice (as (1,-1) once), (0,7) as (-2,7).
                 Tensor tuples = Tensor::FromVector<int64_t>(DType::kI64, {6, 2}, {0, 3, 1, -1, 0, 3, -2, 7, 1, 7, 0, -5});
                 return std::vector<Tensor>{RandomTensor({2, 8, len}, 28), tuples, RandomTensor({6, len}, 29)};
               }};
      return true;
    }
    case 21: {  // residual + RMSNorm as one row kernel (what rms-norm-recognition makes of case 14), the sum stored
      GraphValue* x = In("x", {batch, n});
      GraphValue* r = In("r", {batch, n});
      GraphValue* gamma = In("gamma", {n});
      Node* add = Op("Add", {x, r});
      Node* rms = Op("RMSNormalization", {add->output(0), gamma}, Attr("epsilon", 1e-6f));
      g.AddOutput(rms->output(0));
      g.AddOutput(add->output(0));
      passes::Group group = MakeGroup(GroupKind::kLayerNorm, {add, rms}, {x, r, gamma});
      group.layer_norm = {x, r, gamma, nullptr, 1e-6f, add->output(0), /*rms=*/true};
      *kind = {"residual + RMSNorm (one row kernel)", Lower(group), [this](int64_t len) {
                 return std::vector<Tensor>{RandomTensor({3, len}, 30), RandomTensor({3, len}, 31),
                                            RandomTensor({len}, 32)};
               }};
      return true;
    }
    case 22: {  // RoPE as one row kernel (what rotary-embedding-recognition makes of case 15): two half-row
                // loops of 20 (a vector body and a tail each); cos per position, sin per batch row
      GraphValue* x = In("x", {batch, n, 40});
      GraphValue* cos = In("cos", {n, 40});
      GraphValue* sin = In("sin", {batch, 1, 40});
      Node* rope = Op("RotateHalfMulAdd", {x, cos, sin});
      g.AddOutput(rope->output(0));
      passes::Group group = MakeGroup(GroupKind::kRotary, {rope}, {x, cos, sin});
      group.outputs = {rope->output(0)};
      group.rotary = {x, cos, sin, /*half=*/20};
      *kind = {"RoPE (one row kernel)", Lower(group), [this](int64_t len) {
                 return std::vector<Tensor>{RandomTensor({2, len, 40}, 33), RandomTensor({len, 40}, 34),
                                            RandomTensor({2, 1, 40}, 35)};
               }};
      return true;
    }
    case 23: {  // GPT-J's partial RoPE as one row kernel: 36 of 44 channels rotate in interleaved pairs
                // (a vector body and a tail; the partner a gather), 8 are copied; cos per position, sin per batch row
      GraphValue* x = In("x", {batch, n, 44});
      GraphValue* cos = In("cos", {n, 36});
      GraphValue* sin = In("sin", {batch, 1, 36});
      Node* rope = Op("RotateEveryTwoMulAdd", {x, cos, sin}, Attr("rotary_dim", int64_t{36}));
      g.AddOutput(rope->output(0));
      passes::Group group = MakeGroup(GroupKind::kRotary, {rope}, {x, cos, sin});
      group.outputs = {rope->output(0)};
      group.rotary = {x, cos, sin, /*half=*/18, /*every_two=*/true};
      *kind = {"GPT-J RoPE (one row kernel)", Lower(group), [this](int64_t len) {
                 return std::vector<Tensor>{RandomTensor({2, len, 44}, 36), RandomTensor({len, 36}, 37),
                                            RandomTensor({2, 1, 36}, 38)};
               }};
      return true;
    }
    case 24: {  // T5's relative-position bias in the softmax (relative-position-recognition): 3 query rows
                // over n keys, the bias per head and difference j - i read at an index of the loop indices
      GraphValue* scores = In("scores", {2, 2, 3, n});
      GraphValue* pad = In("pad", {2, 1, 1, n}, DType::kBool);
      GraphValue* bias = In("bias", {1, 2, n + 2});
      GraphValue* three = g.AddConstant("", Tensor::ScalarI64(3));
      GraphValue* keys = Op("Gather", {Op("Shape", {scores})->output(0), three})->output(0);
      Node* expand = Op("RelativePositionExpand", {bias, g.AddConstant("", Tensor::ScalarI64(3)), keys},
                        Attr("axis", int64_t{2}));
      Node* where = Op("Where", {pad, expand->output(0), Scalar(-1e9f)});
      Node* add = Op("Add", {scores, where->output(0)});
      Node* softmax = Op("Softmax", {add->output(0)}, Attr("axis", int64_t{-1}));
      g.AddOutput(softmax->output(0));
      passes::Group group = MakeGroup(GroupKind::kSoftmax, {expand, where, add, softmax}, {scores, pad, bias});
      group.softmax.x = scores;
      group.softmax.mask = where->output(0);
      *kind = {"softmax + relative-position bias", Lower(group), [this](int64_t len) {
                 Tensor mask = Ints({2, 1, 1, len}, 5, DType::kI64);
                 Tensor keep = Tensor::Zeros(DType::kBool, {2, 1, 1, len}).value();
                 for (int64_t i = 0; i < 2 * len; ++i) keep.mutable_data<uint8_t>()[i] = mask.GetAsInt64(i) != 0;
                 return std::vector<Tensor>{RandomTensor({2, 2, 3, len}, 39), keep, RandomTensor({1, 2, len + 2}, 40)};
               }};
      return true;
    }
    case 25: {  // DeBERTa's relative-position gather: GatherElements over 16 position scores with indices
                // Expand(positions[j - i + 2]) computed in the kernel; the index check reads the positions
      GraphValue* scores = In("scores", {2, 3, 16});
      GraphValue* positions = In("positions", {1, n + 2}, DType::kI64);
      GraphValue* like = In("like", {2, 3, n});  // its shape only
      GraphValue* two = g.AddConstant("", Tensor::ScalarI64(2));
      GraphValue* keys = Op("Gather", {Op("Shape", {like})->output(0), two})->output(0);
      Node* expand = Op("RelativePositionExpand", {positions, g.AddConstant("", Tensor::ScalarI64(3)), keys},
                        Attr("axis", int64_t{1}));
      Node* broadcast = Op("Expand", {expand->output(0), Op("Shape", {like})->output(0)});
      Node* gather = Op("GatherElements", {scores, broadcast->output(0)}, Attr("axis", int64_t{-1}));
      g.AddOutput(gather->output(0));
      passes::Group group = MakeGroup(GroupKind::kOther, {expand, broadcast, gather}, {scores, positions});
      *kind = {"gather elements at relative positions (index check on the positions)", Lower(group),
               [this](int64_t len) {
                 return std::vector<Tensor>{RandomTensor({2, 3, 16}, 41), Ints({1, len + 2}, 16),
                                            RandomTensor({2, 3, len}, 42)};
               }};
      return true;
    }
    case 26: {  // CausalSoftmax as GPT-Neo and BLOOM reach it: the keep stage (a band of 5) and the mask stage
                // by index predicates, an ALiBi bias added under a reshape [2·b, n, n] → [b, 2, n, n]
      const float lowest = std::numeric_limits<float>::lowest();
      GraphValue* scores = In("scores", {2 * batch, n, n});
      GraphValue* alibi = In("alibi", {2 * batch, 1, n});
      GraphValue* pad = In("pad", {batch, 1, 1, n});
      Node* add = Op("Add", {scores, alibi});
      // [batch, 2, n, n] (n may be 0: allowzero, and no -1)
      Node* b = Op("Slice", {Op("Shape", {pad})->output(0), LowerTest::Ints({0}), LowerTest::Ints({1})});
      Node* dims = Op("Slice", {Op("Shape", {add->output(0)})->output(0), LowerTest::Ints({1}), LowerTest::Ints({3})});
      Node* target = Op("Concat", {b->output(0), LowerTest::Ints({2}), dims->output(0)}, Attr("axis", int64_t{0}));
      Node* view = Op("Reshape", {add->output(0), target->output(0)}, Attr("allowzero", int64_t{1}));
      Attributes attrs = Attr("fill", lowest);
      attrs.Set("keep_fill", lowest);
      attrs.Set("keep_window", int64_t{5});
      Node* softmax = Op("CausalSoftmax", {view->output(0), pad}, attrs);
      g.AddOutput(softmax->output(0));
      passes::Group group = MakeGroup(GroupKind::kSoftmax, {add, view, softmax}, {scores, alibi, pad});
      group.softmax.x = view->output(0);
      group.softmax.mask = pad;
      group.softmax.bias = alibi;
      group.softmax.causal = true;
      group.softmax.fill = lowest;
      group.softmax.keep = true;
      group.softmax.keep_window = 5;
      group.softmax.keep_fill = lowest;
      *kind = {"causal softmax (keep stage, bias under a view)", Lower(group), [this](int64_t len) {
                 return std::vector<Tensor>{RandomTensor({4, len, len}, 39), RandomTensor({4, 1, len}, 40),
                                            RandomTensor({2, 1, 1, len}, 41)};
               }};
      return true;
    }
    case 27: {  // mean pooling over the sequence axis: the columns form (one pass in memory order, the
                // partial sums in the output), x * mask as its prologue, the division as its epilogue
      GraphValue* x = In("x", {batch, n, 24});
      GraphValue* mask = In("mask", {batch, n, 1});
      GraphValue* count = In("count", {batch, 24});
      Node* mul = Op("Mul", {x, mask});
      Node* sum = Op("ReduceSum", {mul->output(0), LowerTest::Ints({1})}, Attr("keepdims", int64_t{0}));
      Node* div = Op("Div", {sum->output(0), count});
      g.AddOutput(div->output(0));
      passes::Group group = MakeGroup(GroupKind::kReduction, {mul, sum, div}, {x, mask, count});
      group.reduction.reduce = sum;
      group.reduction.keepdims = false;
      group.reduction.axes = {1};
      *kind = {"masked sum over a middle axis (columns)", Lower(group), [this](int64_t len) {
                 return std::vector<Tensor>{RandomTensor({2, len, 24}, 43), RandomTensor({2, len, 1}, 44),
                                            RandomTensor({2, 24}, 45)};
               }};
      return true;
    }
    case 28:
    case 29:
    case 30: {  // lines across rows: ReduceMax over the outer and last axes (a strided line), LogSumExp over a
                // middle axis (two passes at the axis' stride), ReduceProd over the last axis (a product)
      const char* op = index == 28 ? "ReduceMax" : index == 29 ? "ReduceLogSumExp" : "ReduceProd";
      GraphValue* x = In("x", {batch, n, 7});
      std::vector<int64_t> axes = index == 28 ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{index == 29 ? 1 : 2};
      Node* reduce = Op(op, {x}, attr_axes(axes));
      g.AddOutput(reduce->output(0));
      passes::Group group = MakeGroup(GroupKind::kReduction, {reduce}, {x});
      group.reduction.reduce = reduce;
      if (index == 30) {
        group.reduction.reduced_axes = 1;
      } else {
        group.reduction.axes = axes;
      }
      *kind = {absl::StrCat(op, " over axes ", axes.size() == 2 ? "0, 2" : axes[0] == 1 ? "1" : "2"), Lower(group),
               [this](int64_t len) {
                 Tensor t = RandomTensor({2, len, 7}, 46);
                 for (int64_t i = 0; i < t.num_elements(); ++i) t.mutable_data<float>()[i] = 1.0f + 0.01f * t.data<float>()[i];
                 return std::vector<Tensor>{t};
               }};
      return true;
    }
    case 31:
    case 32: {  // ArgMax over the outer axis (a strided line; the last index among ties), ArgMin over the
                // last (the first index); NaN handling as the interpreter's
      const bool max = index == 31;
      GraphValue* x = In("x", {batch, n, 5});
      Attributes attrs = Attr("axis", int64_t{max ? 0 : 2});
      attrs.Set("keepdims", int64_t{max ? 0 : 1});
      attrs.Set("select_last_index", int64_t{max ? 1 : 0});
      Node* arg = Op(max ? "ArgMax" : "ArgMin", {x}, attrs);
      g.AddOutput(arg->output(0));
      passes::Group group = MakeGroup(GroupKind::kReduction, {arg}, {x});
      group.reduction.reduce = arg;
      group.reduction.keepdims = !max;
      if (max) {
        group.reduction.axes = {0};
      } else {
        group.reduction.reduced_axes = 1;
      }
      *kind = {max ? "ArgMax over the outer axis" : "ArgMin over the last axis", Lower(group), [](int64_t len) {
                 Tensor t = KernelKindsTest::Ints({2, len, 5}, 3, DType::kI64);
                 std::vector<float> v(t.num_elements());
                 for (int64_t i = 0; i < t.num_elements(); ++i) {
                   v[i] = i % 11 == 4 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(t.GetAsInt64(i));
                 }
                 return std::vector<Tensor>{Tensor::FromVector<float>(DType::kF32, {2, len, 5}, v)};
               }};
      return true;
    }
    case 33: {  // LogSoftmax over a middle axis: a line at the axis' stride
      GraphValue* x = In("x", {batch, n, 6});
      Node* log = Op("LogSoftmax", {x}, Attr("axis", int64_t{1}));
      g.AddOutput(log->output(0));
      passes::Group group = MakeGroup(GroupKind::kSoftmax, {log}, {x});
      group.softmax.x = x;
      group.softmax.log = true;
      group.softmax.axis = 1;
      group.softmax.axis_end = 2;
      *kind = {"log-softmax over a middle axis", Lower(group),
               [this](int64_t len) { return std::vector<Tensor>{RandomTensor({2, len, 6}, 47)}; }};
      return true;
    }
    case 34: {  // the parameterized activations in one elementwise DAG
      GraphValue* x = In("x", {batch, n});
      std::vector<GraphValue*> terms;
      for (const char* op : {"Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Mish"}) {
        terms.push_back(Op(op, {x})->output(0));
      }
      Node* sum = Op("Sum", terms);
      g.AddOutput(sum->output(0));
      std::vector<Node*> nodes = g.nodes();
      *kind = {"activations (Elu ... Mish)", Lower(Elementwise(nodes, {x}, g.outputs())), [this](int64_t len) {
                 Tensor t = RandomTensor({2, len}, 48);
                 for (int64_t i = 0; i < t.num_elements(); ++i) t.mutable_data<float>()[i] *= 8.0f;
                 return std::vector<Tensor>{t};
               }};
      return true;
    }
    case 35: {  // an integer ReduceMin over a middle axis: columns of i64 partial minima
      GraphValue* x = In("x", {batch, n, 9}, DType::kI64);
      Node* reduce = Op("ReduceMin", {x}, attr_axes({1}));
      g.AddOutput(reduce->output(0));
      passes::Group group = MakeGroup(GroupKind::kReduction, {reduce}, {x});
      group.reduction.reduce = reduce;
      group.reduction.axes = {1};
      *kind = {"integer ReduceMin over a middle axis (columns)", Lower(group),
               [](int64_t len) { return std::vector<Tensor>{KernelKindsTest::Ints({2, len, 9}, 1000)}; }};
      return true;
    }
    case 36: {  // an attention, as the pipeline fuses it: one AttentionCall (the CUDA attention kernel)
      GraphValue* q = In("q", {batch, 2, n, 8});
      GraphValue* k = In("k", {batch, 2, n, 8});
      GraphValue* v = In("v", {batch, 2, n, 8});
      GraphValue* mask = In("mask", {batch, 1, 1, n});
      Node* kt = Op("Transpose", {k}, Attr("perm", std::vector<int64_t>{0, 1, 3, 2}));
      Node* scores = Op("MatMul", {q, kt->output(0)});
      Node* scaled = Op("Mul", {scores->output(0), Scalar(0.35f)});
      Node* masked = Op("Add", {scaled->output(0), mask});
      Node* p = Op("Softmax", {masked->output(0)}, Attr("axis", int64_t{-1}));
      Node* out = Op("MatMul", {p->output(0), v});
      g.AddOutput(out->output(0));
      absl::StatusOr<passes::PipelineResult> planned = passes::RunPipeline(g, env);
      EXPECT_TRUE(planned.ok()) << planned.status();
      std::vector<LoweredStep> steps;
      int attentions = 0;
      for (const passes::Group& group : planned.ok() ? planned->fusion.groups : std::vector<passes::Group>{}) {
        attentions += group.kind == GroupKind::kAttention;
        for (LoweredStep& step : Lower(group)) steps.push_back(std::move(step));
      }
      EXPECT_EQ(attentions, 1);
      *kind = {"fused attention", std::move(steps), [](int64_t len) {
                 Tensor m = RandomTensor({2, 1, 1, len}, 52);
                 for (int64_t i = 0; i < len; i += 4) m.mutable_data<float>()[i] = -10000.0f;  // padded keys
                 return std::vector<Tensor>{RandomTensor({2, 2, len, 8}, 49), RandomTensor({2, 2, len, 8}, 50),
                                            RandomTensor({2, 2, len, 8}, 51), m};
               }};
      return true;
    }
    default: return false;
  }
}

constexpr int kLoweredKinds = 37;

TEST_F(KernelKindsTest, EveryKindMatchesTheInterpreterOnCpuAndUnderCudaEmulation) {
  int kinds = 0;
  for (int i = 0;; ++i) {
    KindCase kind;
    if (!Build(i, &kind)) break;
    ASSERT_FALSE(kind.steps.empty()) << kind.name;
    ++kinds;
    for (int64_t len : kLengths) ExpectAgree(kind, len);
  }
  EXPECT_EQ(kinds, kLoweredKinds);
}

// The kernels of every kind, the GEMM epilogue variants and the library,
// structurally distinct, with the kind each belongs to.
struct NamedKernel {
  std::string kind;
  Kernel kernel;
};

TEST_F(KernelKindsTest, EveryKindCompilesToCubinForSm80AndSm90) {
  std::vector<NamedKernel> kernels;
  std::set<std::string> kinds;
  auto add = [&](const std::string& kind, const Kernel& k) {
    kinds.insert(kind);
    for (const NamedKernel& have : kernels) {
      if (StructurallyEqual(have.kernel, k)) return;
    }
    kernels.push_back({kind, k});
  };
  for (int i = 0;; ++i) {
    KindCase kind;
    if (!Build(i, &kind)) break;
    for (const LoweredStep& step : kind.steps) {
      if (const auto* k = std::get_if<KernelCall>(&step)) add(kind.name, k->kernel);
      if (const auto* m = std::get_if<MatmulCall>(&step)) {
        if (auto plan = cuda::PlanGemm(m->config); plan.epilogue) add(kind.name, *plan.epilogue);
      }
      if (std::holds_alternative<GatherRowsCall>(step)) kinds.insert(kind.name);
      if (std::holds_alternative<AttentionCall>(step)) kinds.insert(kind.name);
    }
  }
  for (const Kernel& k : {SoftmaxKernel(0.125f), LayerNormKernel(1e-12f), BiasGeluKernel(GeluForm::kErf),
                          BiasGeluKernel(GeluForm::kTanh), BiasResidualKernel(), Transpose0213Kernel()}) {
    add("library " + k.name, k);
  }
  std::string module = cuda::CudaPrelude() + cuda::GatherRowsKernel().function + cuda::IndexCheckKernel().function +
                       cuda::AttentionKernel().function;
  std::vector<std::string> entries = {cuda::kGatherRowsEntry, cuda::kIndexCheckEntry, cuda::kAttentionEntry};
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::string entry = absl::StrCat("k", i, "_", kernels[i].kernel.name);
    absl::StatusOr<cuda::CudaKernelSource> source = cuda::EmitCudaKernel(kernels[i].kernel, entry);
    ASSERT_TRUE(source.ok()) << kernels[i].kind << ": " << source.status();
    module += source->function;
    entries.push_back(entry);
  }
  std::cout << "kernel kinds covered: " << kinds.size() << " (" << kLoweredKinds << " lowered kinds + 6 library kernels)"
            << "; distinct kernels: " << entries.size() << " (gather, index check and attention included)\n";
  EXPECT_EQ(kinds.size(), static_cast<size_t>(kLoweredKinds + 6));
  // Every emitted kernel also compiles as one host module.
  auto host = cuda::testing::HostModule::Compile(module);
  ASSERT_TRUE(host.ok()) << host.status();
  for (const std::string& entry : entries) EXPECT_TRUE((*host)->Entry(entry).ok()) << entry;
#ifdef SHAPESHIFT_HAVE_CUDA
  std::cout << "NVRTC " << cuda::NvrtcVersion() << ", ptxas -v per kernel:\n";
  for (const char* arch : {"sm_80", "sm_90"}) {
    absl::StatusOr<cuda::Cubin> cubin = cuda::CompileToCubin(module, "kernel_kinds", arch);
    ASSERT_TRUE(cubin.ok()) << cubin.status();
    EXPECT_GT(cubin->image.size(), 1000u);
    EXPECT_EQ(cubin->image.substr(0, 4), std::string("\x7f" "ELF", 4));
    ASSERT_EQ(cubin->reports.size(), entries.size()) << cubin->log;
    for (const cuda::PtxasReport& r : cubin->reports) {
      std::cout << "  " << r.ToString() << "\n";
      EXPECT_EQ(r.arch, arch);
      EXPECT_GT(r.registers, 0) << r.entry;
      EXPECT_LE(r.registers, 255) << r.entry;
      EXPECT_EQ(r.spill_store_bytes, 0) << r.ToString();
      EXPECT_EQ(r.spill_load_bytes, 0) << r.ToString();
      EXPECT_LE(r.shared_bytes, 48 * 1024) << r.ToString();  // static shared memory limit
      RecordProperty(absl::StrCat(arch, "_", r.entry), r.ToString());
    }
    std::set<std::string> reported;
    for (const cuda::PtxasReport& r : cubin->reports) reported.insert(r.entry);
    for (const std::string& entry : entries) EXPECT_TRUE(reported.count(entry)) << entry << " has no ptxas report";
  }
#else
  std::cout << "no CUDA toolkit in this build: NVRTC compilation not checked\n";
#endif
}

}  // namespace
}  // namespace shapeshift::codegen::lower::testing
