#include "graph/op_table.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "graph/ops/rules.h"
#include "graph/reference/kernel_util.h"

namespace shapeshift {
namespace {

constexpr int kVar = OpInfo::kVariadic;
constexpr uint32_t In(int i) { return 1u << i; }

using C = OpClass;
using L = Lowering;

struct Row {
  const char* op;
  OpClass op_class;
  int min_in, max_in, min_out, max_out;
  ShapeRule infer;
  uint32_t shape_operands;
  Lowering cpu;
  const char* pattern = "";
};

// The table. Columns: op, class, inputs min..max, outputs min..max, shape
// rule, shape-operand inputs, CPU lowering (and, for kPattern, the forms
// compiled). The CUDA column follows (CudaLowering below).
const Row kRows[] = {
    // Float math, one input.
    {"Sqrt", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Reciprocal", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Exp", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Log", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Tanh", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Erf", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Sigmoid", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Floor", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Ceil", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Round", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Sin", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Cos", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Tan", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kNone},
    {"Asin", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kNone},
    {"Acos", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kNone},
    {"Atan", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kNone},
    {"Sinh", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kNone},
    {"Cosh", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kNone},
    {"Asinh", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kNone},
    {"Acosh", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kNone},
    {"Atanh", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kNone},
    {"Softplus", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Softsign", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Elu", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Selu", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"LeakyRelu", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"HardSigmoid", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"HardSwish", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Celu", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Mish", C::kElementwise, 1, 1, 1, 1, rules::FloatUnary, 0, L::kCompiled},
    {"Gelu", C::kElementwise, 1, 1, 1, 1, rules::Gelu, 0, L::kCompiled},
    // Numeric and boolean, one input.
    {"Neg", C::kElementwise, 1, 1, 1, 1, rules::NumericUnary, 0, L::kCompiled},
    {"Abs", C::kElementwise, 1, 1, 1, 1, rules::NumericUnary, 0, L::kCompiled},
    {"Relu", C::kElementwise, 1, 1, 1, 1, rules::NumericUnary, 0, L::kCompiled},
    {"Sign", C::kElementwise, 1, 1, 1, 1, rules::NumericUnary, 0, L::kCompiled},
    {"Not", C::kElementwise, 1, 1, 1, 1, rules::BoolUnary, 0, L::kCompiled},
    {"IsNaN", C::kElementwise, 1, 1, 1, 1, rules::FloatPredicate, 0, L::kCompiled},
    {"IsInf", C::kElementwise, 1, 1, 1, 1, rules::FloatPredicate, 0, L::kCompiled},
    // Broadcasting binary and variadic.
    {"Add", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Sub", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Mul", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Div", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Pow", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Mod", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Equal", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Less", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Greater", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"LessOrEqual", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"GreaterOrEqual", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"And", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Or", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Xor", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"PRelu", C::kElementwise, 2, 2, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Min", C::kElementwise, 1, kVar, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Max", C::kElementwise, 1, kVar, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Sum", C::kElementwise, 1, kVar, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Mean", C::kElementwise, 1, kVar, 1, 1, rules::Broadcasting, 0, L::kCompiled},
    {"Where", C::kElementwise, 3, 3, 1, 1, rules::Where, 0, L::kCompiled},
    {"Clip", C::kElementwise, 1, 3, 1, 1, rules::Clip, 0, L::kCompiled},
    {"Cast", C::kElementwise, 1, 1, 1, 1, rules::Cast, 0, L::kCompiled},
    // Generators: elementwise over the output index.
    {"Expand", C::kElementwise, 2, 2, 1, 1, rules::Expand, In(1), L::kCompiled},
    {"ConstantOfShape", C::kElementwise, 1, 1, 1, 1, rules::ConstantOfShape, In(0), L::kCompiled},
    {"Range", C::kElementwise, 3, 3, 1, 1, rules::Range, In(0) | In(1) | In(2), L::kCompiled},
    // Views.
    {"Identity", C::kView, 1, 1, 1, 1, rules::NumericUnary, 0, L::kCompiled},
    {"Reshape", C::kView, 2, 2, 1, 1, rules::Reshape, In(1), L::kCompiled},
    {"Flatten", C::kView, 1, 1, 1, 1, rules::Flatten, 0, L::kCompiled},
    {"Squeeze", C::kView, 1, 2, 1, 1, rules::Squeeze, In(1), L::kCompiled},
    {"Unsqueeze", C::kView, 1, 2, 1, 1, rules::Unsqueeze, In(1), L::kCompiled},
    {"Dropout", C::kOther, 1, 3, 1, 2, rules::Dropout, 0, L::kPattern,
     "at inference (training_mode absent or false), where `simplify` removes it"},
    // Matmuls.
    {"MatMul", C::kMatmul, 2, 2, 1, 1, rules::MatMul, 0, L::kCompiled},
    {"Gemm", C::kMatmul, 2, 3, 1, 1, rules::Gemm, 0, L::kCompiled},
    // Row kernels.
    {"Softmax", C::kNormalization, 1, 1, 1, 1, rules::SoftmaxLike, 0, L::kCompiled},
    {"LogSoftmax", C::kNormalization, 1, 1, 1, 1, rules::SoftmaxLike, 0, L::kCompiled},
    {"LayerNormalization", C::kNormalization, 2, 3, 1, 3, rules::LayerNormalization, 0, L::kCompiled},
    // Opset 23; also what `rms-norm-recognition` rewrites Llama's decomposed form into.
    {"RMSNormalization", C::kNormalization, 2, 2, 1, 1, rules::LayerNormalization, 0, L::kCompiled},
    // Not an ONNX op: X' * A + rotate_half(X') * B over X' = X[..., :rotary_dim]
    // (default: all of X's last axis), X's other channels passed through; what
    // `rotary-embedding-recognition` rewrites Llama's and GPT-NeoX's RoPE into
    // (a row op: each output row reads its whole input row, so fusion never
    // treats it as elementwise).
    {"RotateHalfMulAdd", C::kNormalization, 3, 3, 1, 1, rules::RotateHalfMulAdd, 0, L::kCompiled},
    // Not an ONNX op: GPT-J's interleaved RoPE, X' * A + rotate_every_two(X') * B
    // over X' = X[..., :rotary_dim], X's other channels passed through.
    {"RotateEveryTwoMulAdd", C::kNormalization, 3, 3, 1, 1, rules::RotateEveryTwoMulAdd, 0, L::kCompiled},
    // Not an ONNX op: the softmax over X's last axis of X + (allowed(i, j) ?
    // M : fill), allowed a causal (optionally sliding-window) predicate of
    // the query and key indices, what `causal-mask-recognition` rewrites a
    // decoder's Softmax(scores + Where(causal [and padding], 0, fill)) into;
    // with a bool M, of (allowed and M) ? X : fill (masked_fill's form, MPT's
    // Softmax(Where(not (causal and padding), fill, scores))). With
    // keep_fill, X is first replaced by keep(i, j) ? X : keep_fill, keep a
    // second causal predicate (its own keep_window): GPT-Neo's
    // Where(bias[..., T-S:T, :T], scores, min) before the additive mask.
    {"CausalSoftmax", C::kNormalization, 1, 2, 1, 1, rules::CausalSoftmax, 0, L::kCompiled},
    // Reductions (axes: attribute, or input 1 from opset 13/18).
    {"ReduceMean", C::kReduction, 1, 2, 1, 1, rules::Reduce, In(1), L::kCompiled},
    {"ReduceSum", C::kReduction, 1, 2, 1, 1, rules::Reduce, In(1), L::kCompiled},
    {"ReduceMax", C::kReduction, 1, 2, 1, 1, rules::Reduce, In(1), L::kCompiled},
    {"ReduceMin", C::kReduction, 1, 2, 1, 1, rules::Reduce, In(1), L::kCompiled},
    {"ReduceSumSquare", C::kReduction, 1, 2, 1, 1, rules::Reduce, In(1), L::kCompiled},
    {"ReduceProd", C::kReduction, 1, 2, 1, 1, rules::Reduce, In(1), L::kCompiled},
    {"ReduceL1", C::kReduction, 1, 2, 1, 1, rules::Reduce, In(1), L::kCompiled},
    {"ReduceL2", C::kReduction, 1, 2, 1, 1, rules::Reduce, In(1), L::kCompiled},
    {"ReduceLogSum", C::kReduction, 1, 2, 1, 1, rules::Reduce, In(1), L::kCompiled},
    {"ReduceLogSumExp", C::kReduction, 1, 2, 1, 1, rules::Reduce, In(1), L::kCompiled},
    {"ArgMax", C::kReduction, 1, 1, 1, 1, rules::ArgReduce, 0, L::kCompiled},
    {"ArgMin", C::kReduction, 1, 1, 1, 1, rules::ArgReduce, 0, L::kCompiled},
    // Layout.
    {"Transpose", C::kLayout, 1, 1, 1, 1, rules::Transpose, 0, L::kCompiled},
    {"Concat", C::kLayout, 1, kVar, 1, 1, rules::Concat, 0, L::kCompiled},
    {"Slice", C::kLayout, 1, 5, 1, 1, rules::Slice, In(1) | In(2) | In(3) | In(4), L::kCompiled},
    {"Split", C::kLayout, 1, 2, 1, kVar, rules::Split, In(1), L::kPattern,
     "when its part sizes are known at compile time (`split-to-slices` turns it into Slices)"},
    {"Tile", C::kLayout, 2, 2, 1, 1, rules::Tile, In(1), L::kCompiled},
    {"Trilu", C::kLayout, 1, 2, 1, 1, rules::Trilu, In(1), L::kCompiled},
    // Not an ONNX op: out[.., i, j, ..] = X[.., j - i + S - 1, ..], a tensor
    // whose elements depend only on j - i, built from its S + T - 1 distinct
    // values (`relative-position-recognition`: T5's and DeBERTa's
    // relative-position buckets); S and T are shape operands.
    {"RelativePositionExpand", C::kLayout, 3, 3, 1, 1, rules::RelativePositionExpand, In(1) | In(2), L::kCompiled},
    // Indexing.
    {"Gather", C::kIndexing, 2, 2, 1, 1, rules::Gather, 0, L::kCompiled},
    {"GatherElements", C::kIndexing, 2, 2, 1, 1, rules::GatherElements, 0, L::kCompiled},
    {"GatherND", C::kIndexing, 2, 2, 1, 1, rules::GatherND, 0, L::kCompiled},
    {"ScatterND", C::kIndexing, 3, 3, 1, 1, rules::ScatterND, 0, L::kCompiled},
    // Scans.
    {"CumSum", C::kScan, 2, 2, 1, 1, rules::SoftmaxLike, In(1), L::kCompiled},
    // Shape values.
    {"Shape", C::kShapeValue, 1, 1, 1, 1, rules::Shape, 0, L::kCompileTime},
    {"Size", C::kShapeValue, 1, 1, 1, 1, rules::Size, 0, L::kCompileTime},
    {"Constant", C::kShapeValue, 0, 0, 1, 1, rules::Constant, 0, L::kCompileTime},
};

// Ops the CPU compiles whose lowered kernels the CUDA emitter cannot spell
// faithfully (codegen/cuda/cuda_emitter.cc refuses an IR operation it has no
// CUDA text for; a kernel it could print with a different meaning, say
// writes reordered across threads, belongs here). None today: ScatterND was
// here until the emitter kept its loop over index tuples in order on one
// thread (duplicate tuples: the last one wins, as in the interpreter and
// ONNX Runtime). Add an op when its CPU lowering gains an IR operation or a
// loop shape before the emitter does; runtime/program_compile.cc
// (CheckCudaColumn) then refuses it for Device::kCuda naming the node.
bool CpuOnly(absl::string_view op) {
  static const absl::flat_hash_set<std::string>* const kCpuOnly = new absl::flat_hash_set<std::string>{};
  return kCpuOnly->contains(op);
}

// A Device::kCuda Program (runtime/device/) runs exactly the steps the CPU
// path lowers — the same passes and codegen/lower, then every kernel as
// CUDA C through NVRTC, every matmul as a cuBLASLt GEMM plan, every gather
// as the CUDA gather kernel — so its column is the CPU's, except for the
// ops above. tests/runtime/op_table_lowering_test.cc holds both columns to
// it: every op marked compiled for CUDA is emitted, compiled by NVRTC for
// sm_80 and sm_90 and run under the host emulation against the
// interpreter. (Never on a GPU yet: codegen/cuda/README.md.)
Lowering CudaLowering(const Row& r) { return CpuOnly(r.op) && r.cpu == Lowering::kCompiled ? Lowering::kNone : r.cpu; }

struct Table {
  absl::flat_hash_map<std::string, OpInfo> by_name;
  std::vector<const OpInfo*> sorted;
};

const Table& TheTable() {
  static const Table* table = [] {
    auto* t = new Table;
    for (const Row& r : kRows) {
      OpInfo info;
      info.op_type = r.op;
      info.op_class = r.op_class;
      info.min_inputs = r.min_in;
      info.max_inputs = r.max_in;
      info.min_outputs = r.min_out;
      info.max_outputs = r.max_out;
      info.infer = r.infer;
      info.shape_operands = r.shape_operands;
      info.cpu = r.cpu;
      info.cuda = CudaLowering(r);
      info.pattern = r.pattern;
      info.reference = reference::FindKernelEntry(r.op);
      t->by_name.emplace(info.op_type, std::move(info));
    }
    for (const auto& [name, info] : t->by_name) t->sorted.push_back(&info);
    std::sort(t->sorted.begin(), t->sorted.end(),
              [](const OpInfo* a, const OpInfo* b) { return a->op_type < b->op_type; });
    return t;
  }();
  return *table;
}

}  // namespace

const OpInfo* FindOp(absl::string_view op_type) {
  const auto& map = TheTable().by_name;
  auto it = map.find(op_type);
  return it == map.end() ? nullptr : &it->second;
}

const std::vector<const OpInfo*>& AllOps() { return TheTable().sorted; }

const char* OpClassName(OpClass c) {
  switch (c) {
    case OpClass::kElementwise: return "elementwise";
    case OpClass::kView: return "view";
    case OpClass::kMatmul: return "matmul";
    case OpClass::kNormalization: return "normalization";
    case OpClass::kReduction: return "reduction";
    case OpClass::kLayout: return "layout";
    case OpClass::kIndexing: return "indexing";
    case OpClass::kScan: return "scan";
    case OpClass::kShapeValue: return "shape-value";
    case OpClass::kOther: return "other";
  }
  return "?";
}

const char* LoweringName(Lowering l) {
  switch (l) {
    case Lowering::kNone: return "none";
    case Lowering::kCompiled: return "compiled";
    case Lowering::kPattern: return "pattern";
    case Lowering::kCompileTime: return "compile-time";
  }
  return "?";
}

}  // namespace shapeshift
