// The op table: every ONNX op (default domain) shapeshift knows, with its
// traits, in one place that every layer reads — the importer (is it
// supported?), shape inference (arity, shape rule), the interpreter (its
// reference kernel), the passes and fusion (elementwise? a view? which inputs
// are shape operands?), lowering, `inspect` and `check` (is there a compiled
// lowering?). Two layers that each kept their own list disagreed about what
// the compiler supports; with one table they cannot.
//
// The lowering columns are the table's promise; the code that keeps it lives
// in codegen/. Tests hold both sides to it: every op marked compiled is
// compiled at symbolic shapes and compared with the interpreter, and every op
// marked kNone is refused by `check` naming the node
// (tests/graph/op_table_test.cc, tests/runtime/op_table_lowering_test.cc).
//
// Opset differences (attributes that became inputs: Slice starts/ends at 10,
// Squeeze/Unsqueeze axes and ReduceSum axes and Split sizes at 13, the other
// Reduce* axes at 18, Clip min/max at 11) are handled inside the rules and
// kernels, which read the node's opset.
#ifndef SHAPESHIFT_GRAPH_OP_TABLE_H_
#define SHAPESHIFT_GRAPH_OP_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace shapeshift {

class InferenceContext;
using ShapeRule = absl::Status (*)(InferenceContext&);

namespace reference {
struct KernelEntry;
}  // namespace reference

// What an op does to data, as fusion and memory planning see it.
enum class OpClass : uint8_t {
  kElementwise,    // each output element from the same (broadcast) index of the inputs:
                   // math, comparisons, Where, Clip, Cast, and the generators Expand,
                   // ConstantOfShape and Range (computed from the output index)
  kView,           // the same elements in a new shape (Reshape, Squeeze, ...): no data moves
  kMatmul,         // MatMul, Gemm
  kNormalization,  // row kernels: Softmax, LogSoftmax, LayerNormalization, RMSNormalization,
                   // RotateHalfMulAdd, RotateEveryTwoMulAdd (fused RoPE), CausalSoftmax
                   // (index-masked): not ONNX ops
  kReduction,      // Reduce*, ArgMax, ArgMin
  kLayout,         // data moves without arithmetic: Transpose, Concat, Slice, Split, Tile, Trilu,
                   // RelativePositionExpand (not an ONNX op)
  kIndexing,       // data-dependent addressing: Gather, GatherElements, GatherND
  kScan,           // CumSum
  kShapeValue,     // Shape, Size, Constant: values known while compiling
  kOther,          // Dropout (an identity at inference, removed by `simplify`)
};

// Whether a backend compiles the op.
enum class Lowering : uint8_t {
  kNone,         // no compiled lowering: `check` refuses the model naming the node
  kCompiled,     // compiled at symbolic shapes (per-node conditions, e.g. dtypes,
                 // are reported by `check` from the lowering itself)
  kPattern,      // compiled only in the forms `OpInfo::pattern` names (a pass rewrites
                 // them into compiled ops); any other use is refused by `check`
  kCompileTime,  // evaluated while compiling (shape values); a model that needs it
                 // computed by a kernel is refused by `check`
};

struct OpInfo {
  std::string op_type;
  OpClass op_class = OpClass::kOther;
  int min_inputs = 1;
  int max_inputs = 1;  // kVariadic for no limit
  int min_outputs = 1;
  int max_outputs = 1;
  ShapeRule infer = nullptr;
  // Bit i set: input i is a shape operand — read at compile time from
  // Value::elements() (Reshape's shape, Slice's starts/ends/axes/steps,
  // Range's start/limit/delta, Reduce* axes, ...), never as a buffer.
  uint32_t shape_operands = 0;
  Lowering cpu = Lowering::kNone;
  Lowering cuda = Lowering::kNone;
  // For kPattern: the forms that are compiled, as a clause that completes
  // "op X is compiled only ..." in `check`'s messages.
  const char* pattern = "";
  // The interpreter's kernel (graph/reference/); every op has one.
  const reference::KernelEntry* reference = nullptr;

  bool IsShapeOperand(int input) const {
    return input >= 0 && input < 32 && (shape_operands >> input & 1u) != 0;
  }

  static constexpr int kVariadic = 1 << 20;
};

// nullptr when `op_type` is not in the table (not supported at all).
const OpInfo* FindOp(absl::string_view op_type);
// Every row, sorted by op type.
const std::vector<const OpInfo*>& AllOps();

const char* OpClassName(OpClass c);
const char* LoweringName(Lowering l);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_OP_TABLE_H_
