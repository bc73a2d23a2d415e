#include "runtime/sym_tape.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "shapes/sym_expr_visitor.h"

namespace shapeshift::runtime {

SymTape::SymTape(std::vector<std::string> symbols) : symbols_(std::move(symbols)) {
  for (const std::string& name : symbols_) slot_of_[SymExpr::Symbol(name)] = num_slots_++;
}

// The instructions of one node, its operands' first (through Add, so a
// shared operand is computed once). `instr` arrives with its expression
// recorded for messages.
class SymTape::Recorder final : public SymExprVisitor<absl::StatusOr<int>, SymTape::Instr> {
 public:
  explicit Recorder(SymTape& tape) : tape_(tape) {}

 private:
  absl::StatusOr<int> VisitConst(const SymExpr& e, int64_t value, Instr instr) override {
    instr.constant = value;
    return Finish(e, instr);
  }
  absl::StatusOr<int> VisitSymbol(const SymExpr&, const std::string& name, Instr) override {
    return absl::InvalidArgumentError(absl::StrCat("symbol '", name, "' is not bound by any model input"));
  }
  absl::StatusOr<int> VisitAdd(const SymExpr& e, absl::Span<const SymExpr> terms, Instr instr) override {
    return Chain(e, terms, Op::kAdd, instr);
  }
  absl::StatusOr<int> VisitMul(const SymExpr& e, absl::Span<const SymExpr> factors, Instr instr) override {
    return Chain(e, factors, Op::kMul, instr);
  }
  absl::StatusOr<int> VisitFloorDiv(const SymExpr& e, const SymExpr& a, const SymExpr& b, Instr instr) override {
    return Binary(e, a, b, Op::kFloorDiv, instr);
  }
  absl::StatusOr<int> VisitMod(const SymExpr& e, const SymExpr& a, const SymExpr& b, Instr instr) override {
    return Binary(e, a, b, Op::kMod, instr);
  }
  absl::StatusOr<int> VisitMin(const SymExpr& e, const SymExpr& a, const SymExpr& b, Instr instr) override {
    return Binary(e, a, b, Op::kMin, instr);
  }
  absl::StatusOr<int> VisitMax(const SymExpr& e, const SymExpr& a, const SymExpr& b, Instr instr) override {
    return Binary(e, a, b, Op::kMax, instr);
  }

  // n-ary sums and products become a chain of binary instructions.
  absl::StatusOr<int> Chain(const SymExpr& e, absl::Span<const SymExpr> ops, Op op, const Instr& instr) {
    absl::StatusOr<int> acc = tape_.Add(ops[0]);
    if (!acc.ok()) return acc.status();
    int current = *acc;
    for (size_t i = 1; i < ops.size(); ++i) {
      absl::StatusOr<int> next = tape_.Add(ops[i]);
      if (!next.ok()) return next.status();
      int dst = tape_.num_slots_++;
      tape_.instrs_.push_back({op, dst, current, *next, 0, instr.expr});
      current = dst;
    }
    tape_.slot_of_[e] = current;
    return current;
  }

  absl::StatusOr<int> Binary(const SymExpr& e, const SymExpr& a, const SymExpr& b, Op op, Instr instr) {
    absl::StatusOr<int> x = tape_.Add(a);
    if (!x.ok()) return x.status();
    absl::StatusOr<int> y = tape_.Add(b);
    if (!y.ok()) return y.status();
    instr.a = *x;
    instr.b = *y;
    instr.op = op;
    return Finish(e, instr);
  }

  int Finish(const SymExpr& e, Instr instr) {
    instr.dst = tape_.num_slots_++;
    tape_.instrs_.push_back(instr);
    tape_.slot_of_[e] = instr.dst;
    return instr.dst;
  }

  SymTape& tape_;
};

absl::StatusOr<int> SymTape::Add(SymExpr expr) {
  if (auto it = slot_of_.find(expr); it != slot_of_.end()) return it->second;
  Instr instr{Op::kConst, 0, -1, -1, 0, static_cast<int>(exprs_.size())};
  exprs_.push_back(expr);
  return Recorder(*this).Visit(expr, instr);
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
