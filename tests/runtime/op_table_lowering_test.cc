// The op table's promise, held (graph/op_table.h): for every op the table
// marks compiled on the CPU, a small model around one node of that op, over
// symbolic dims, passes `check` and compiles, and the compiled program
// matches the interpreter at several shapes; for every op the table marks
// kNone, and every kPattern op used outside its pattern, `check` refuses the
// model naming the node and the op. The CUDA column is held the same way on
// the host-emulated device (tests/support/cuda): every op it marks compiled
// is compiled as a Device::kCuda Program — every kernel emitted as CUDA C,
// the module compiled by NVRTC to cubins for sm_80 and sm_90 where the
// toolkit is present — and run under the host emulation (threads forward
// and reversed) against the interpreter. Every row of the table needs a
// sample here: a new row without one fails the test, so the table cannot
// promise what nobody tried.
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "graph/interpreter.h"
#include "graph/op_table.h"
#include "graph/tensor_compare.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "runtime/specialization/compile_tiers.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/support/cuda/emulated_device.h"
#ifdef SHAPESHIFT_HAVE_CUDA
#include "codegen/cuda/nvrtc_compiler.h"
#endif

namespace shapeshift::runtime {
namespace {

using ::testing::HasSubstr;
using testing::BuiltModel;
using testing::ModelBuilder;

constexpr char kTarget[] = "target";  // the node of the op under test

// Builds the sample model of one op: graph inputs over [batch, seq, ...] and
// one node of the op, named kTarget, whose outputs are the graph outputs.
struct SampleContext {
  ModelBuilder& m;
  SymExpr b;
  SymExpr s;
  Value* Target(const std::string& op, std::vector<Value*> inputs, Attributes attrs = {}) {
    return m.NamedNode(kTarget, op, std::move(inputs), std::move(attrs))->output(0);
  }
  Value* X() { return m.In("x", {b, s, 8}); }
};

const std::vector<std::string>& FloatUnaryOps() {
  static const auto* ops = new std::vector<std::string>{
      "Sqrt", "Reciprocal", "Exp",  "Log",      "Tanh",     "Erf",      "Sigmoid",     "Floor",     "Ceil",
      "Round", "Sin",       "Cos",  "Tan",      "Asin",     "Acos",     "Atan",        "Sinh",      "Cosh",
      "Asinh", "Acosh",     "Atanh", "Softplus", "Softsign", "Elu",     "Selu",        "LeakyRelu", "HardSigmoid",
      "HardSwish", "Celu",  "Mish", "Gelu",     "Neg",      "Abs",      "Relu",        "Sign",      "Identity"};
  return *ops;
}

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// nullopt: no sample for this op (the test then fails naming it).
std::optional<std::vector<Value*>> BuildSample(const std::string& op, SampleContext& c) {
  ModelBuilder& m = c.m;
  auto A = [](const std::string& name, AttrValue v) { return ModelBuilder::Attr(name, std::move(v)); };
  if (Contains(FloatUnaryOps(), op)) return std::vector<Value*>{c.Target(op, {c.X()})};
  if (op == "Not") return std::vector<Value*>{c.Target(op, {m.In("x", {c.b, c.s, 8}, DType::kBool)})};
  if (op == "IsNaN" || op == "IsInf") return std::vector<Value*>{c.Target(op, {c.X()})};
  for (const char* binary : {"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "LessOrEqual",
                             "GreaterOrEqual", "PRelu"}) {
    if (op == binary) return std::vector<Value*>{c.Target(op, {c.X(), m.In("y", {8})})};
  }
  if (op == "Mod") {
    return std::vector<Value*>{c.Target(op, {c.X(), m.In("y", {8})}, A("fmod", int64_t{1}))};
  }
  for (const char* logical : {"And", "Or", "Xor"}) {
    if (op == logical) {
      return std::vector<Value*>{
          c.Target(op, {m.In("x", {c.b, c.s, 8}, DType::kBool), m.In("y", {c.s, 8}, DType::kBool)})};
    }
  }
  for (const char* variadic : {"Min", "Max", "Sum", "Mean"}) {
    if (op == variadic) return std::vector<Value*>{c.Target(op, {c.X(), m.In("y", {8}), m.In("z", {c.s, 1})})};
  }
  if (op == "Where") {
    return std::vector<Value*>{
        c.Target(op, {m.In("cond", {c.s, 8}, DType::kBool), c.X(), m.In("y", {c.b, 1, 8})})};
  }
  if (op == "Clip") return std::vector<Value*>{c.Target(op, {c.X(), m.Scalar(-0.5f), m.Scalar(0.75f)})};
  if (op == "Cast") return std::vector<Value*>{c.Target(op, {c.X()}, A("to", int64_t{7}))};  // INT64
  if (op == "Expand") {
    Value* shape = m.Op("Shape", {c.X()});
    return std::vector<Value*>{c.Target(op, {m.In("y", {8}), shape})};
  }
  if (op == "ConstantOfShape") return std::vector<Value*>{c.Target(op, {m.Op("Shape", {c.X()})})};
  if (op == "Range") {
    Value* seq = m.Op("Gather", {m.Op("Shape", {c.X()}), m.graph().AddConstant("", Tensor::ScalarI64(1))});
    Value* range = c.Target(op, {m.graph().AddConstant("", Tensor::ScalarI64(3)), seq,
                                 m.graph().AddConstant("", Tensor::ScalarI64(1))});
    return std::vector<Value*>{range};
  }
  if (op == "Reshape") return std::vector<Value*>{c.Target(op, {c.X(), m.Ints({-1, 4})})};
  if (op == "Flatten") return std::vector<Value*>{c.Target(op, {c.X()}, A("axis", int64_t{2}))};
  if (op == "Squeeze") return std::vector<Value*>{c.Target(op, {m.In("x", {c.b, 1, c.s}), m.Ints({1})})};
  if (op == "Unsqueeze") return std::vector<Value*>{c.Target(op, {c.X(), m.Ints({0})})};
  if (op == "Dropout") {
    // Used as a training-mode op: not the inference pattern simplify removes.
    Value* training = m.graph().AddConstant("", Tensor::FromVector<uint8_t>(DType::kBool, {}, {1}));
    return std::vector<Value*>{c.Target(op, {c.X(), m.Scalar(0.5f), training})};
  }
  if (op == "MatMul") return std::vector<Value*>{c.Target(op, {c.X(), m.Weights({8, 16})})};
  if (op == "Gemm") {
    return std::vector<Value*>{c.Target(op, {m.In("x", {c.s, 8}), m.Weights({8, 16}), m.Weights({16})})};
  }
  if (op == "Softmax" || op == "LogSoftmax") return std::vector<Value*>{c.Target(op, {c.X()}, A("axis", int64_t{-1}))};
  if (op == "CausalSoftmax") {  // S = seq queries over 8 keys: rows past 8 + window fully masked
    return std::vector<Value*>{c.Target(op, {c.X(), m.In("m", {c.b, 1, 8})},
                                        [&] {
                                          Attributes a = A("window", int64_t{3});
                                          a.Set("fill", -3.4028234663852886e38f);
                                          return a;
                                        }())};
  }
  if (op == "LayerNormalization") {
    return std::vector<Value*>{c.Target(op, {c.X(), m.Weights({8}, 1.0f), m.Weights({8}, 0.1f)}, A("epsilon", 1e-5f))};
  }
  if (op == "RMSNormalization") {
    return std::vector<Value*>{c.Target(op, {c.X(), m.Weights({8}, 1.0f)}, A("epsilon", 1e-5f))};
  }
  if (op == "RotateHalfMulAdd") {  // cos per position, sin per batch row: both broadcast to x
    return std::vector<Value*>{c.Target(op, {c.X(), m.In("cos", {c.s, 8}), m.In("sin", {c.b, 1, 8})})};
  }
  if (op == "RotateEveryTwoMulAdd") {  // the first 4 of 8 channels rotate, as above; the rest pass through
    return std::vector<Value*>{c.Target(op, {c.X(), m.In("cos", {c.s, 4}), m.In("sin", {c.b, 1, 4})},
                                        A("rotary_dim", int64_t{4}))};
  }
  if (op == "ReduceSum") return std::vector<Value*>{c.Target(op, {c.X(), m.Ints({-1})})};  // axes input from opset 13
  if (op.rfind("Reduce", 0) == 0) {
    return std::vector<Value*>{c.Target(op, {c.X()}, A("axes", std::vector<int64_t>{-1}))};
  }
  if (op == "ArgMax" || op == "ArgMin") return std::vector<Value*>{c.Target(op, {c.X()}, A("axis", int64_t{-1}))};
  if (op == "Transpose") {
    return std::vector<Value*>{c.Target(op, {c.X()}, A("perm", std::vector<int64_t>{0, 2, 1}))};
  }
  if (op == "Concat") {
    return std::vector<Value*>{c.Target(op, {c.X(), m.In("y", {c.b, c.s, 3})}, A("axis", int64_t{2}))};
  }
  if (op == "Slice") return std::vector<Value*>{c.Target(op, {c.X(), m.Ints({1}), m.Ints({6}), m.Ints({2})})};
  if (op == "Split") {
    Node* n = m.NamedNode(kTarget, op, {c.X(), m.In("sizes", {2}, DType::kI64)}, A("axis", int64_t{2}), 2);
    return std::vector<Value*>{n->output(0), n->output(1)};
  }
  if (op == "Tile") return std::vector<Value*>{c.Target(op, {c.X(), m.Ints({1, 2, 1})})};
  if (op == "Trilu") return std::vector<Value*>{c.Target(op, {m.In("x", {c.b, c.s, c.s})})};
  if (op == "RelativePositionExpand") {  // seq rows over 8 columns: t holds the seq + 7 differences, 4 channels each
    Value* rows = m.Op("Gather", {m.Op("Shape", {c.X()}), m.graph().AddConstant("", Tensor::ScalarI64(1))});
    Value* cols = m.graph().AddConstant("", Tensor::ScalarI64(8));
    return std::vector<Value*>{c.Target(op, {m.In("t", {c.b, c.s + 7, 4}), rows, cols}, A("axis", int64_t{1}))};
  }
  if (op == "Gather") {
    return std::vector<Value*>{c.Target(op, {m.Weights({16, 8}), m.In("ids", {c.b, c.s}, DType::kI64)})};
  }
  if (op == "GatherElements") {
    return std::vector<Value*>{c.Target(op, {c.X(), m.In("idx", {c.b, c.s, 8}, DType::kI64)}, A("axis", int64_t{2}))};
  }
  if (op == "GatherND") {
    // GPT-J's form: rows of a constant table by index tuples of length 1.
    return std::vector<Value*>{c.Target(op, {m.Weights({16, 8}), m.In("idx", {c.b, c.s, 1}, DType::kI64)})};
  }
  if (op == "ScatterND") {
    // A cache update: rows of x replaced at positions from the request.
    return std::vector<Value*>{
        c.Target(op, {m.In("x", {16, 8}), m.In("idx", {c.s, 1}, DType::kI64), m.In("rows", {c.s, 8})})};
  }
  if (op == "CumSum") return std::vector<Value*>{c.Target(op, {c.X(), m.graph().AddConstant("", Tensor::ScalarI64(1))})};
  if (op == "Shape" || op == "Size") return std::vector<Value*>{c.Target(op, {c.X()})};
  return std::nullopt;
}

// Deterministic request inputs: floats N(0,1), integers in [0, 8) (valid
// gather indices for every sample), bools at random.
std::vector<Tensor> MakeInputs(const Graph& graph, const Assignment& dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Tensor> out;
  for (const Value* in : graph.inputs()) {
    std::vector<int64_t> shape;
    for (SymExpr d : in->type().shape) shape.push_back(d.Evaluate(dims).value());
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    if (in->name() == "sizes") {
      out.push_back(Tensor::FromVector<int64_t>(DType::kI64, shape, {3, 5}));
      continue;
    }
    switch (in->type().dtype) {
      case DType::kF32: {
        std::normal_distribution<float> dist(0.0f, 1.0f);
        std::vector<float> v(n);
        for (float& x : v) x = dist(rng);
        out.push_back(Tensor::FromVector<float>(DType::kF32, shape, v));
        break;
      }
      case DType::kI64: {
        std::uniform_int_distribution<int64_t> dist(0, 7);
        std::vector<int64_t> v(n);
        for (int64_t& x : v) x = dist(rng);
        out.push_back(Tensor::FromVector<int64_t>(DType::kI64, shape, v));
        break;
      }
      default: {
        std::vector<uint8_t> v(n);
        for (uint8_t& x : v) x = rng() & 1;
        out.push_back(Tensor::FromVector<uint8_t>(DType::kBool, shape, v));
        break;
      }
    }
  }
  return out;
}

// The sample of `op` over batch in [1, 4], seq in [1, 64]; nullopt when
// there is none.
std::optional<BuiltModel> Sample(const std::string& op) {
  ModelBuilder m;
  SampleContext c{m, m.Dim("batch", 1, 4), m.Dim("seq", 1, 64)};
  std::optional<std::vector<Value*>> outputs = BuildSample(op, c);
  if (!outputs) return std::nullopt;
  for (Value* v : *outputs) m.graph().AddOutput(v);
  return m.Finish();
}

std::vector<std::string> Slots(const Graph& graph) {
  std::vector<std::string> slots;
  for (const Value* in : graph.inputs()) {
    for (SymExpr d : in->type().shape) {
      if (d.IsSymbol() && !Contains(slots, d.symbol_name())) slots.push_back(d.symbol_name());
    }
  }
  return slots;
}

bool Problem(const TierCheck& tier, const std::string& op) {
  for (const CompileProblem& p : tier.check.problems) {
    if (p.node == kTarget && p.op_type == op) return true;
  }
  return false;
}

std::string ProblemsText(const TierCheck& tier) {
  std::vector<std::string> parts;
  for (const CompileProblem& p : tier.check.problems) parts.push_back(absl::StrCat(p.node, " ", p.op_type, ": ", p.reason));
  return absl::StrJoin(parts, "; ");
}

// Ops the table never sees in a graph: the importer turns every Constant
// node into a graph constant.
bool HasNoSampleByDesign(const OpInfo& op) { return op.op_type == "Constant"; }

TEST(OpTableLoweringTest, EveryRowHasASample) {
  std::vector<std::string> missing;
  for (const OpInfo* op : AllOps()) {
    if (!HasNoSampleByDesign(*op) && !Sample(op->op_type)) missing.push_back(op->op_type);
  }
  EXPECT_TRUE(missing.empty()) << "ops without a sample: " << absl::StrJoin(missing, ", ");
}

// Every op marked compiled: check accepts its sample, the compile succeeds
// and the compiled program matches the interpreter at three shapes.
TEST(OpTableLoweringTest, CompiledOpsCompileAtSymbolicShapesAndMatchTheInterpreter) {
  int checked = 0;
  for (const OpInfo* op : AllOps()) {
    if (op->cpu != Lowering::kCompiled) continue;
    SCOPED_TRACE(op->op_type);
    std::optional<BuiltModel> model = Sample(op->op_type);
    ASSERT_TRUE(model.has_value());
    std::unique_ptr<Graph> reference = model->graph->Clone();
    const TierCheck tier = CheckTier(*model->graph, *model->env, Slots(*model->graph), Tier::kPolymorphic);
    ASSERT_TRUE(tier.check.compilable()) << "the table says compiled, check refuses: " << ProblemsText(tier);
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(ModelSource::Built(std::move(model->graph), std::move(model->env)));
    ASSERT_TRUE(session.ok()) << "check accepted it, the compile failed: " << session.status();
    for (auto [batch, seq] : {std::pair<int64_t, int64_t>{1, 1}, {2, 17}, {3, 64}}) {
      const Assignment dims{{"batch", batch}, {"seq", seq}};
      std::vector<Tensor> inputs = MakeInputs(*reference, dims, static_cast<uint32_t>(batch * 100 + seq));
      absl::StatusOr<std::vector<Tensor>> expected = Interpret(*reference, inputs);
      ASSERT_TRUE(expected.ok()) << expected.status();
      absl::StatusOr<std::vector<Tensor>> actual = (*session)->Run(inputs);
      ASSERT_TRUE(actual.ok()) << "batch=" << batch << " seq=" << seq << ": " << actual.status();
      const TensorComparison cmp = CompareTensorLists(*actual, *expected);
      EXPECT_TRUE(cmp.agree) << "batch=" << batch << " seq=" << seq << ": " << cmp.first_mismatch;
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
  std::printf("compiled and checked %d ops\n", checked);
}

// Every op without a compiled lowering (kNone, a kPattern op outside its
// pattern, a compile-time op whose value a kernel would have to compute):
// check refuses its sample, naming the node and the op, before compiling.
TEST(OpTableLoweringTest, OpsWithoutALoweringAreRefusedByCheckNamingTheNode) {
  int refused = 0;
  for (const OpInfo* op : AllOps()) {
    if (op->cpu == Lowering::kCompiled || HasNoSampleByDesign(*op)) continue;
    SCOPED_TRACE(op->op_type);
    std::optional<BuiltModel> model = Sample(op->op_type);
    ASSERT_TRUE(model.has_value());
    const TierCheck tier = CheckTier(*model->graph, *model->env, Slots(*model->graph), Tier::kPolymorphic);
    EXPECT_FALSE(tier.check.compilable()) << "the table says " << LoweringName(op->cpu) << ", check accepts it";
    EXPECT_TRUE(Problem(tier, op->op_type)) << ProblemsText(tier);
    if (op->cpu == Lowering::kPattern) EXPECT_THAT(ProblemsText(tier), HasSubstr(op->pattern));
    // The other direction: a lowering the table does not know about means
    // the table is stale (mark the row compiled), not that check is right.
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(ModelSource::Built(std::move(model->graph), std::move(model->env)));
    EXPECT_FALSE(session.ok()) << "the table says " << LoweringName(op->cpu)
                               << " but the compiler compiles this sample: update the op table";
    ++refused;
  }
  EXPECT_GT(refused, 0);
  std::printf("refused %d ops without a compiled lowering\n", refused);
}

// The host-emulated GPU, keeping the module source the device program
// loads so the test can hand the same text to NVRTC.
class RecordingDevice : public codegen::cuda::testing::EmulatedDevice {
 public:
  using EmulatedDevice::EmulatedDevice;
  absl::StatusOr<std::unique_ptr<codegen::cuda::DeviceModule>> LoadModule(const std::string& source,
                                                                          const std::string& name) override {
    sources.push_back(source);
    return EmulatedDevice::LoadModule(source, name);
  }
  std::vector<std::string> sources;
};

CompileOptions OnEmulatedGpu(std::shared_ptr<RecordingDevice> device) {
  CompileOptions options;
  options.device = Device::kCuda;
  options.cuda.device = std::move(device);
  options.cuda.graphs = false;  // every request runs the steps themselves
  return options;
}

#ifdef SHAPESHIFT_HAVE_CUDA
// NVRTC compiles the module the device program loaded, for both targets,
// with a ptxas report per kernel. Spills are recorded, not refused: they
// cost speed, not correctness (the kernel-kinds test holds the model
// kernels to none); the ones found are listed in codegen/cuda/README.md.
void ExpectCubins(const std::string& op, const std::string& module, int* max_registers,
                  std::vector<std::string>* spills) {
  const size_t kernels = std::vector<absl::string_view>(absl::StrSplit(module, "__global__")).size() - 1;
  for (const char* arch : {"sm_80", "sm_90"}) {
    absl::StatusOr<codegen::cuda::Cubin> cubin = codegen::cuda::CompileToCubin(module, op, arch);
    ASSERT_TRUE(cubin.ok()) << arch << ": " << cubin.status();
    EXPECT_EQ(cubin->reports.size(), kernels) << arch << ": " << cubin->log;
    for (const codegen::cuda::PtxasReport& r : cubin->reports) {
      EXPECT_EQ(r.arch, arch);
      EXPECT_GT(r.registers, 0) << r.ToString();
      EXPECT_LE(r.shared_bytes, 48 * 1024) << r.ToString();
      *max_registers = std::max(*max_registers, r.registers);
      if (r.spill_store_bytes + r.spill_load_bytes > 0) spills->push_back(absl::StrCat(op, ": ", r.ToString()));
    }
  }
}
#endif

// Every op the CUDA column marks compiled: `check --device cuda` accepts its
// sample, the device program compiles (its module through NVRTC too) and,
// under the host emulation with threads in both orders, matches the
// interpreter at the same three shapes as the CPU.
TEST(OpTableLoweringTest, CudaCompiledOpsEmitCompileWithNvrtcAndMatchTheInterpreterUnderEmulation) {
  int checked = 0, max_registers = 0;
  std::vector<std::string> spills;
  for (const OpInfo* op : AllOps()) {
    if (op->cuda != Lowering::kCompiled) continue;
    SCOPED_TRACE(op->op_type);
    for (bool reverse : {false, true}) {
      std::optional<BuiltModel> model = Sample(op->op_type);
      ASSERT_TRUE(model.has_value());
      std::unique_ptr<Graph> reference = model->graph->Clone();
      const TierCheck tier =
          CheckTier(*model->graph, *model->env, Slots(*model->graph), Tier::kPolymorphic, Device::kCuda);
      ASSERT_TRUE(tier.check.compilable()) << "the table says compiled for CUDA, check refuses: " << ProblemsText(tier);
      auto device = std::make_shared<RecordingDevice>(codegen::cuda::testing::EmulatedDeviceOptions{reverse});
      absl::StatusOr<std::unique_ptr<Session>> session =
          Session::Create(ModelSource::Built(std::move(model->graph), std::move(model->env)), OnEmulatedGpu(device));
      ASSERT_TRUE(session.ok()) << "check accepted it, the device compile failed: " << session.status();
      ASSERT_EQ((*session)->stats().program.device, "cuda");
      ASSERT_EQ(device->sources.size(), 1u) << "one module per device program";
#ifdef SHAPESHIFT_HAVE_CUDA
      if (!reverse) ExpectCubins(op->op_type, device->sources.front(), &max_registers, &spills);
#endif
      for (auto [batch, seq] : {std::pair<int64_t, int64_t>{1, 1}, {2, 17}, {3, 64}}) {
        const Assignment dims{{"batch", batch}, {"seq", seq}};
        std::vector<Tensor> inputs = MakeInputs(*reference, dims, static_cast<uint32_t>(batch * 100 + seq));
        absl::StatusOr<std::vector<Tensor>> expected = Interpret(*reference, inputs);
        ASSERT_TRUE(expected.ok()) << expected.status();
        absl::StatusOr<std::vector<Tensor>> actual = (*session)->Run(inputs);
        ASSERT_TRUE(actual.ok()) << "batch=" << batch << " seq=" << seq << ": " << actual.status();
        const TensorComparison cmp = CompareTensorLists(*actual, *expected);
        EXPECT_TRUE(cmp.agree) << "batch=" << batch << " seq=" << seq << (reverse ? " (threads reversed)" : "")
                               << ": " << cmp.first_mismatch;
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
#ifdef SHAPESHIFT_HAVE_CUDA
  std::printf("CUDA: compiled (NVRTC sm_80 and sm_90, at most %d registers) and emulated %d ops; %zu kernel(s) spill%s\n",
              max_registers, checked, spills.size(), spills.empty() ? "" : ":");
  for (const std::string& s : spills) std::printf("  %s\n", s.c_str());
#else
  std::printf("CUDA: emulated %d ops (no CUDA toolkit in this build: NVRTC not checked)\n", checked);
#endif
}

// Every op the CUDA column does not mark compiled: `check --device cuda`
// refuses its sample naming the node, and the device program does not
// compile it either (a stale column fails here, as for the CPU).
TEST(OpTableLoweringTest, OpsWithoutACudaLoweringAreRefusedForTheDevice) {
  int refused = 0;
  for (const OpInfo* op : AllOps()) {
    if (op->cuda == Lowering::kCompiled || HasNoSampleByDesign(*op)) continue;
    SCOPED_TRACE(op->op_type);
    std::optional<BuiltModel> model = Sample(op->op_type);
    ASSERT_TRUE(model.has_value());
    const TierCheck tier =
        CheckTier(*model->graph, *model->env, Slots(*model->graph), Tier::kPolymorphic, Device::kCuda);
    EXPECT_FALSE(tier.check.compilable()) << "the table says " << LoweringName(op->cuda) << ", check accepts it";
    EXPECT_TRUE(Problem(tier, op->op_type)) << ProblemsText(tier);
    if (op->cuda == Lowering::kNone) EXPECT_THAT(ProblemsText(tier), HasSubstr("CUDA"));
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(ModelSource::Built(std::move(model->graph), std::move(model->env)),
                        OnEmulatedGpu(std::make_shared<RecordingDevice>()));
    EXPECT_FALSE(session.ok()) << "the table says " << LoweringName(op->cuda)
                               << " for CUDA but the device program compiles this sample: update the op table";
    ++refused;
  }
  EXPECT_GT(refused, 0);
  std::printf("refused %d ops without a compiled CUDA lowering\n", refused);
}

}  // namespace
}  // namespace shapeshift::runtime
