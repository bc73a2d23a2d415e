#include "runtime/sym_tape.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace shapeshift::runtime {

SymTape::SymTape(std::vector<std::string> symbols) : symbols_(std::move(symbols)) {
  for (const std::string& name : symbols_) slot_of_[SymExpr::Symbol(name)] = num_slots_++;
}

absl::StatusOr<int> SymTape::Add(SymExpr expr) {
  if (auto it = slot_of_.find(expr); it != slot_of_.end()) return it->second;
  Instr instr{Op::kConst, 0, -1, -1, 0, static_cast<int>(exprs_.size())};
  exprs_.push_back(expr);
  switch (expr.kind()) {
    case ExprKind::kConst:
      instr.constant = *expr.AsConst();
      break;
    case ExprKind::kSymbol:
      return absl::InvalidArgumentError(
          absl::StrCat("symbol '", expr.symbol_name(), "' is not bound by any model input"));
    case ExprKind::kAdd:
    case ExprKind::kMul: {
      // n-ary sums and products become a chain of binary instructions.
      absl::Span<const SymExpr> ops = expr.operands();
      absl::StatusOr<int> acc = Add(ops[0]);
      if (!acc.ok()) return acc.status();
      int current = *acc;
      for (size_t i = 1; i < ops.size(); ++i) {
        absl::StatusOr<int> next = Add(ops[i]);
        if (!next.ok()) return next.status();
        int dst = num_slots_++;
        instrs_.push_back({expr.kind() == ExprKind::kAdd ? Op::kAdd : Op::kMul, dst, current, *next, 0, instr.expr});
        current = dst;
      }
      slot_of_[expr] = current;
      return current;
    }
    case ExprKind::kFloorDiv:
    case ExprKind::kMod:
    case ExprKind::kMin:
    case ExprKind::kMax: {
      absl::StatusOr<int> a = Add(expr.operands()[0]);
      if (!a.ok()) return a.status();
      absl::StatusOr<int> b = Add(expr.operands()[1]);
      if (!b.ok()) return b.status();
      instr.a = *a;
      instr.b = *b;
      instr.op = expr.kind() == ExprKind::kFloorDiv ? Op::kFloorDiv
                 : expr.kind() == ExprKind::kMod    ? Op::kMod
                 : expr.kind() == ExprKind::kMin    ? Op::kMin
                                                    : Op::kMax;
      break;
    }
  }
  instr.dst = num_slots_++;
  instrs_.push_back(instr);
  slot_of_[expr] = instr.dst;
  return instr.dst;
}

absl::Status SymTape::EvaluationError(const Instr& in, absl::string_view what) const {
  return absl::OutOfRangeError(absl::StrCat(what, " evaluating the size `", exprs_[in.expr].ToString(), "`"));
}

absl::Status SymTape::Evaluate(absl::Span<int64_t> slots) const {
  if (static_cast<int>(slots.size()) < num_slots_) {
    return absl::InvalidArgumentError("SymTape::Evaluate: slot array too small");
  }
  int64_t* s = slots.data();
  for (const Instr& in : instrs_) {
    switch (in.op) {
      case Op::kConst: s[in.dst] = in.constant; break;
      case Op::kAdd:
        if (__builtin_add_overflow(s[in.a], s[in.b], &s[in.dst])) return EvaluationError(in, "int64 overflow");
        break;
      case Op::kMul:
        if (__builtin_mul_overflow(s[in.a], s[in.b], &s[in.dst])) return EvaluationError(in, "int64 overflow");
        break;
      case Op::kMin: s[in.dst] = std::min(s[in.a], s[in.b]); break;
      case Op::kMax: s[in.dst] = std::max(s[in.a], s[in.b]); break;
      case Op::kFloorDiv:
      case Op::kMod:
        if (s[in.b] == 0) return EvaluationError(in, "division by zero");
        if (in.op == Op::kFloorDiv) {
          if (s[in.a] == std::numeric_limits<int64_t>::min() && s[in.b] == -1) {
            return EvaluationError(in, "int64 overflow");
          }
          s[in.dst] = FloorDivInt(s[in.a], s[in.b]);
        } else {
          s[in.dst] = FloorModInt(s[in.a], s[in.b]);
        }
        break;
    }
  }
  return absl::OkStatus();
}

}  // namespace shapeshift::runtime
