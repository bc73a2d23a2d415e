// Constructors for kernel IR nodes. They only build; Verify() checks.
#include "codegen/kernel_ir.h"

#include <utility>

#include "absl/container/flat_hash_set.h"

namespace shapeshift::codegen {

absl::string_view ScalarTypeName(ScalarType t) {
  switch (t) {
    case ScalarType::kF32: return "f32";
    case ScalarType::kI64: return "i64";
    case ScalarType::kI32: return "i32";
    case ScalarType::kBool: return "bool";
  }
  return "?";
}

int64_t ScalarTypeSize(ScalarType t) {
  switch (t) {
    case ScalarType::kF32: return 4;
    case ScalarType::kI64: return 8;
    case ScalarType::kI32: return 4;
    case ScalarType::kBool: return 1;
  }
  return 0;
}

absl::string_view UnaryOpName(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg: return "neg";
    case UnaryOp::kAbs: return "abs";
    case UnaryOp::kExp: return "exp";
    case UnaryOp::kLog: return "log";
    case UnaryOp::kSqrt: return "sqrt";
    case UnaryOp::kRsqrt: return "rsqrt";
    case UnaryOp::kTanh: return "tanh";
    case UnaryOp::kErf: return "erf";
    case UnaryOp::kSigmoid: return "sigmoid";
    case UnaryOp::kRecip: return "recip";
    case UnaryOp::kSin: return "sin";
    case UnaryOp::kCos: return "cos";
    case UnaryOp::kFloor: return "floor";
    case UnaryOp::kCeil: return "ceil";
    case UnaryOp::kRound: return "round";
  }
  return "?";
}

absl::string_view BinaryOpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "+";
    case BinaryOp::kSub: return "-";
    case BinaryOp::kMul: return "*";
    case BinaryOp::kDiv: return "/";
    case BinaryOp::kMax: return "max";
    case BinaryOp::kMin: return "min";
    case BinaryOp::kRem: return "rem";
  }
  return "?";
}

absl::string_view CompareOpName(CompareOp op) {
  switch (op) {
    case CompareOp::kLt: return "<";
    case CompareOp::kLe: return "<=";
    case CompareOp::kGt: return ">";
    case CompareOp::kGe: return ">=";
    case CompareOp::kEq: return "==";
    case CompareOp::kNe: return "!=";
  }
  return "?";
}

absl::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProd: return "prod";
  }
  return "?";
}

namespace {
Value Make(ValueNode node) { return std::make_shared<const ValueNode>(std::move(node)); }

ValueNode NewNode(ValueKind kind, ScalarType type) {
  ValueNode n;
  n.kind = kind;
  n.type = type;
  return n;
}

Stmt NewStmt(StmtKind kind) {
  Stmt s;
  s.kind = kind;
  return s;
}
}  // namespace

std::vector<const Value*> PostOrder(const Value& root) {
  std::vector<const Value*> order;
  if (!root) return order;
  absl::flat_hash_set<const ValueNode*> seen = {root.get()};
  // (node, next operand to visit)
  std::vector<std::pair<const Value*, size_t>> stack = {{&root, 0}};
  while (!stack.empty()) {
    auto& [value, next] = stack.back();
    const std::vector<Value>& operands = (*value)->operands;
    if (next < operands.size()) {
      const Value& operand = operands[next++];
      if (operand && seen.insert(operand.get()).second) stack.push_back({&operand, 0});
      continue;
    }
    order.push_back(value);
    stack.pop_back();
  }
  return order;
}

Value F32(double v) {
  ValueNode n = NewNode(ValueKind::kConst, ScalarType::kF32);
  n.f_value = v;
  return Make(std::move(n));
}

Value I64(int64_t v) {
  ValueNode n = NewNode(ValueKind::kConst, ScalarType::kI64);
  n.i_value = v;
  return Make(std::move(n));
}

Value Load(BufferRef buffer, SymExpr index) {
  ValueNode n = NewNode(ValueKind::kLoad, buffer.dtype);
  n.buffer = buffer.index;
  n.index = index;
  return Make(std::move(n));
}

Value LoadAt(BufferRef buffer, Value index) {
  ValueNode n = NewNode(ValueKind::kLoadAt, buffer.dtype);
  n.buffer = buffer.index;
  n.operands = {std::move(index)};
  return Make(std::move(n));
}

Value IndexValue(SymExpr index) {
  ValueNode n = NewNode(ValueKind::kIndex, ScalarType::kI64);
  n.index = index;
  return Make(std::move(n));
}

Value Var(absl::string_view name, ScalarType type) {
  ValueNode n = NewNode(ValueKind::kVar, type);
  n.name = std::string(name);
  return Make(std::move(n));
}

Value Unary(UnaryOp op, Value x) {
  ValueNode n = NewNode(ValueKind::kUnary, x ? x->type : ScalarType::kF32);
  n.op = static_cast<uint8_t>(op);
  n.operands = {std::move(x)};
  return Make(std::move(n));
}

Value Binary(BinaryOp op, Value a, Value b) {
  ValueNode n = NewNode(ValueKind::kBinary, a ? a->type : ScalarType::kF32);
  n.op = static_cast<uint8_t>(op);
  n.operands = {std::move(a), std::move(b)};
  return Make(std::move(n));
}

Value Compare(CompareOp op, Value a, Value b) {
  ValueNode n = NewNode(ValueKind::kCompare, ScalarType::kBool);
  n.op = static_cast<uint8_t>(op);
  n.operands = {std::move(a), std::move(b)};
  return Make(std::move(n));
}

Value Select(Value cond, Value if_true, Value if_false) {
  ValueNode n = NewNode(ValueKind::kSelect, if_true ? if_true->type : ScalarType::kF32);
  n.operands = {std::move(cond), std::move(if_true), std::move(if_false)};
  return Make(std::move(n));
}

Value Cast(ScalarType to, Value x) {
  ValueNode n = NewNode(ValueKind::kCast, to);
  n.operands = {std::move(x)};
  return Make(std::move(n));
}

Value operator+(Value a, Value b) { return Binary(BinaryOp::kAdd, std::move(a), std::move(b)); }
Value operator-(Value a, Value b) { return Binary(BinaryOp::kSub, std::move(a), std::move(b)); }
Value operator*(Value a, Value b) { return Binary(BinaryOp::kMul, std::move(a), std::move(b)); }
Value operator/(Value a, Value b) { return Binary(BinaryOp::kDiv, std::move(a), std::move(b)); }
Value Exp(Value x) { return Unary(UnaryOp::kExp, std::move(x)); }
Value Max(Value a, Value b) { return Binary(BinaryOp::kMax, std::move(a), std::move(b)); }

Stmt Loop(absl::string_view var, SymExpr begin, SymExpr end, std::vector<Stmt> body) {
  Stmt s = NewStmt(StmtKind::kLoop);
  s.name = std::string(var);
  s.begin = begin;
  s.end = end;
  s.body = std::move(body);
  return s;
}

Stmt Store(BufferRef buffer, SymExpr index, Value value) {
  Stmt s = NewStmt(StmtKind::kStore);
  s.buffer = buffer.index;
  s.index = index;
  s.value = std::move(value);
  return s;
}

Stmt StoreAt(BufferRef buffer, Value at, Value value) {
  Stmt s = NewStmt(StmtKind::kStoreAt);
  s.buffer = buffer.index;
  s.at = std::move(at);
  s.value = std::move(value);
  return s;
}

Stmt Let(absl::string_view name, Value value) {
  Stmt s = NewStmt(StmtKind::kLet);
  s.name = std::string(name);
  s.value = std::move(value);
  return s;
}

Stmt Accumulator(absl::string_view name, Value init) {
  Stmt s = NewStmt(StmtKind::kAccumulator);
  s.name = std::string(name);
  s.value = std::move(init);
  return s;
}

Stmt Accumulate(absl::string_view name, ReduceOp op, Value value) {
  Stmt s = NewStmt(StmtKind::kAccumulate);
  s.name = std::string(name);
  s.value = std::move(value);
  s.reduce = op;
  return s;
}

BufferRef Kernel::AddBuffer(absl::string_view name, ScalarType dtype, BufferRole role) {
  buffers.push_back(BufferParam{std::string(name), dtype, role});
  return BufferRef{static_cast<int>(buffers.size()) - 1, dtype};
}

SymExpr Kernel::AddDim(absl::string_view name) {
  dims.emplace_back(name);
  return SymExpr::Symbol(name);
}

}  // namespace shapeshift::codegen
