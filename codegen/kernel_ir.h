// Kernel IR: the backend-neutral description of one generated kernel.
//
// Fused memory-bound groups (layer norm, softmax with mask, GELU, bias +
// residual, transposes) are described here once and lowered by every backend
// (cpu/ through LLVM, cuda/ through CUDA C). The IR is deliberately small:
// loop nests whose bounds are SymExprs over the kernel's dimension symbols,
// loads/stores with SymExpr (affine or not) indexing, scalar expression trees,
// immutable lets, and accumulators for reductions. A "row" pattern (softmax,
// layer norm) is an accumulator reduced by one inner loop and read by the
// following loops over the same row.
//
// Shape polymorphism: nothing in the IR is a concrete size unless the
// SymExpr is a constant, so a kernel compiled once serves every shape in its
// domain; backends must handle any loop length (remainder loops).
//
// Contract every backend relies on (checked where cheap, by Verify()):
//  - The kernel body runs inside one parallel loop `parallel_var` over
//    [0, parallel_extent). Distinct parallel iterations write disjoint
//    locations.
//  - Innermost loops may be vectorized: an iteration never reads a location
//    that another iteration of the same innermost loop writes.
//  - Buffers are dense arrays of their dtype; indices count elements.
//
// Structural identity: StructuralHash/StructurallyEqual ignore the kernel's
// and buffers' names, so the same fused layer norm in 12 layers is compiled
// once (KernelCache in cpu/).
#ifndef SHAPESHIFT_CODEGEN_KERNEL_IR_H_
#define SHAPESHIFT_CODEGEN_KERNEL_IR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "shapes/sym_expr.h"

namespace shapeshift::codegen {

// Element types of buffers and values. kBool is stored as one byte (0 or 1).
enum class ScalarType : uint8_t { kF32, kI64, kI32, kBool };
absl::string_view ScalarTypeName(ScalarType t);  // "f32", "i64", "i32", "bool"
int64_t ScalarTypeSize(ScalarType t);            // bytes in memory

// kSin/kCos are libm's sinf/cosf (full argument reduction: exact for every
// f32, 1e30 included); kFloor/kCeil/kRound round to an integral f32, kRound
// half to even (ONNX Round). NaN and infinities pass through all three.
enum class UnaryOp : uint8_t {
  kNeg, kAbs, kExp, kLog, kSqrt, kRsqrt, kTanh, kErf, kSigmoid, kRecip,
  kSin, kCos, kFloor, kCeil, kRound,
};
// f32 kMax/kMin (and ReduceOp::kMax) propagate NaN: a NaN in either
// operand gives NaN, as ONNX Runtime's Max/Min/Relu and numpy.maximum do
// (not IEEE maxNum, which returns the other operand; Relu(NaN) would be 0).
// Compares are ordered (false when either side is NaN) except kNe.
// Integer kDiv truncates toward zero (ONNX Div, C) and kRem is the
// remainder of that division (sign of the dividend; f32 kRem is C fmod).
// Neither may trap: an integer division by zero gives 0 (quotient and
// remainder), and lowest / -1 wraps to lowest (remainder 0). The reference
// interpreter reports those divisions by zero as an error instead; a kernel
// has no error channel, so it computes a defined value rather than raising
// SIGFPE.
enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kMax, kMin, kRem };
enum class CompareOp : uint8_t { kLt, kLe, kGt, kGe, kEq, kNe };
// kProd multiplies (ReduceProd); like kSum it may combine in any order.
enum class ReduceOp : uint8_t { kSum, kMax, kProd };
absl::string_view UnaryOpName(UnaryOp op);
absl::string_view BinaryOpName(BinaryOp op);
absl::string_view CompareOpName(CompareOp op);
absl::string_view ReduceOpName(ReduceOp op);

enum class BufferRole : uint8_t { kInput, kOutput };

struct BufferParam {
  std::string name;  // for printing and error messages only
  ScalarType dtype;
  BufferRole role;
};

// A buffer as seen from inside the kernel: its position in the buffer array.
struct BufferRef {
  int index = -1;
  ScalarType dtype = ScalarType::kF32;
};

// ---- Scalar expressions ----------------------------------------------------

enum class ValueKind : uint8_t {
  kConst,    // f_value for f32, i_value for integers/bool
  kLoad,     // buffer[index]
  kLoadAt,   // buffer[operands[0]]: an index computed from data (an i64 value),
             // for gathers; the lowering keeps it inside the buffer
  kIndex,    // the integer value of `index` (e.g. a loop variable), as i64
  kVar,      // a Let or an accumulator in scope, by name
  kUnary,
  kBinary,
  kCompare,  // result kBool
  kSelect,   // operands {cond, if_true, if_false}
  kCast,     // operands {x}; result `type`
};

struct ValueNode;
// Immutable, shared expression tree (a DAG when a subtree is reused: the
// element emitter reuses a value read twice, e.g. by `x * x` or a residual).
// Walk it with PostOrder (below), never as a tree: a chain of k reuses is
// 2^k nodes as a tree.
using Value = std::shared_ptr<const ValueNode>;

struct ValueNode {
  ValueKind kind = ValueKind::kConst;
  ScalarType type = ScalarType::kF32;
  double f_value = 0;
  int64_t i_value = 0;
  int buffer = -1;         // kLoad, kLoadAt
  SymExpr index;           // kLoad, kIndex
  std::string name;        // kVar
  uint8_t op = 0;          // UnaryOp / BinaryOp / CompareOp, by kind
  std::vector<Value> operands;
};

// The distinct nodes of `root`'s DAG, each once, every operand before the
// nodes that read it (first-use order, so the result is deterministic).
// Iterative and linear in the DAG's size, however deep or shared it is.
// Null operands are skipped (Verify reports them). The pointers point into
// `root` and its nodes' operand lists, so they live as long as `root`.
std::vector<const Value*> PostOrder(const Value& root);

Value F32(double v);
Value I64(int64_t v);
Value Load(BufferRef buffer, SymExpr index);
// buffer[index] where `index` (i64) is data, e.g. an id read from another
// buffer. Backends cannot prove it in bounds: the lowering that builds it
// must clamp it (codegen/lower/indexing.h) after the runtime has checked it.
Value LoadAt(BufferRef buffer, Value index);
Value IndexValue(SymExpr index);
Value Var(absl::string_view name, ScalarType type);
Value Unary(UnaryOp op, Value x);
Value Binary(BinaryOp op, Value a, Value b);  // result type: a's type
Value Compare(CompareOp op, Value a, Value b);
Value Select(Value cond, Value if_true, Value if_false);
Value Cast(ScalarType to, Value x);

// Readable operator sugar for building kernels by hand and in lowering.
Value operator+(Value a, Value b);
Value operator-(Value a, Value b);
Value operator*(Value a, Value b);
Value operator/(Value a, Value b);
Value Exp(Value x);
Value Max(Value a, Value b);

// ---- Statements -------------------------------------------------------------

enum class StmtKind : uint8_t {
  kLoop,         // for var in [begin, end): body
  kStore,        // buffer[index] = value
  kStoreAt,      // buffer[at] = value, `at` an i64 index computed from data (scatters)
  kLet,          // name = value (immutable, visible to following statements)
  kAccumulator,  // declares accumulator `name` = value (initial), mutable
  kAccumulate,   // name = reduce(name, value)
};

struct Stmt {
  StmtKind kind = StmtKind::kLet;
  std::string name;  // loop variable, let or accumulator name
  SymExpr begin, end;
  std::vector<Stmt> body;
  int buffer = -1;
  SymExpr index;
  Value value;
  Value at;  // kStoreAt
  ReduceOp reduce = ReduceOp::kSum;
};

Stmt Loop(absl::string_view var, SymExpr begin, SymExpr end, std::vector<Stmt> body);
Stmt Store(BufferRef buffer, SymExpr index, Value value);
// buffer[at] = value with a data-dependent `at` (i64). The lowering that
// builds it keeps `at` inside the buffer and the writes of distinct
// parallel iterations (and of one innermost loop's iterations) disjoint.
Stmt StoreAt(BufferRef buffer, Value at, Value value);
Stmt Let(absl::string_view name, Value value);
Stmt Accumulator(absl::string_view name, Value init);
Stmt Accumulate(absl::string_view name, ReduceOp op, Value value);

// ---- Kernel -----------------------------------------------------------------

struct Kernel {
  std::string name;
  std::vector<BufferParam> buffers;  // order = the buffer array at run time
  // Dimension symbols, in the order of the int64 `dims` array at run time.
  std::vector<std::string> dims;
  std::string parallel_var = "p";
  SymExpr parallel_extent = 1;
  std::vector<Stmt> body;

  BufferRef AddBuffer(absl::string_view name, ScalarType dtype, BufferRole role);
  BufferRef AddInput(absl::string_view name, ScalarType dtype = ScalarType::kF32) {
    return AddBuffer(name, dtype, BufferRole::kInput);
  }
  BufferRef AddOutput(absl::string_view name, ScalarType dtype = ScalarType::kF32) {
    return AddBuffer(name, dtype, BufferRole::kOutput);
  }
  // Declares a dimension symbol and returns it as an expression.
  SymExpr AddDim(absl::string_view name);
  SymExpr ParallelVar() const { return SymExpr::Symbol(parallel_var); }
};

// Checks scoping (every symbol in an index/bound is a dim or an enclosing
// loop variable; every Var is a let/accumulator in scope), types (operands
// agree, math ops on f32, conditions are bool, loads/stores match the
// buffer dtype), buffer roles (stores only into outputs) and name clashes.
// The message names the kernel and the offending statement.
absl::Status Verify(const Kernel& kernel);

// Readable text, one statement per line, e.g.
//   kernel softmax(in x: f32, out y: f32) dims(rows, n)
//   parallel p in [0, rows):
//     acc m = -inf
//     for j in [0, n):
//       m = max(m, x[p*n + j])
std::string Print(const Kernel& kernel);

// Identity of the computation, ignoring kernel and buffer names.
size_t StructuralHash(const Kernel& kernel);
bool StructurallyEqual(const Kernel& a, const Kernel& b);

struct KernelStructuralHash {
  size_t operator()(const Kernel& k) const { return StructuralHash(k); }
};
struct KernelStructuralEq {
  bool operator()(const Kernel& a, const Kernel& b) const { return StructurallyEqual(a, b); }
};

}  // namespace shapeshift::codegen

#endif  // SHAPESHIFT_CODEGEN_KERNEL_IR_H_
