#include "shapes/internal/z3_translator.h"

namespace shapeshift::internal {

z3::expr Z3Translator::Symbol(const std::string& name) {
  return ctx_->int_const(name.c_str());
}

// Z3's div is Euclidean: the remainder is always non-negative. For b > 0
// that is floor division. For b < 0, floor(a / b) == floor(-a / -b), which
// is Euclidean again because -b > 0. So:
//   floordiv(a, b) = b >= 0 ? div(a, b) : div(-a, -b)
//   mod(a, b)      = b >= 0 ? mod(a, b) : -mod(-a, -b)
// With a constant divisor the branch is resolved here, keeping the formula
// linear for the solver.
z3::expr Z3Translator::FloorDivTerm(const z3::expr& a, const z3::expr& b, SymExpr divisor) {
  if (auto d = divisor.AsConst()) return *d >= 0 ? a / b : (-a) / (-b);
  return z3::ite(b >= 0, a / b, (-a) / (-b));
}

z3::expr Z3Translator::FloorModTerm(const z3::expr& a, const z3::expr& b, SymExpr divisor) {
  if (auto d = divisor.AsConst()) return *d >= 0 ? z3::mod(a, b) : -z3::mod(-a, -b);
  return z3::ite(b >= 0, z3::mod(a, b), -z3::mod(-a, -b));
}

z3::expr Z3Translator::Translate(SymExpr e) {
  if (auto it = cache_.find(e); it != cache_.end()) return it->second;
  z3::expr result(*ctx_);
  switch (e.kind()) {
    case ExprKind::kConst:
      result = ctx_->int_val(static_cast<int64_t>(*e.AsConst()));
      break;
    case ExprKind::kSymbol:
      result = Symbol(e.symbol_name());
      break;
    case ExprKind::kAdd:
    case ExprKind::kMul: {
      const bool add = e.kind() == ExprKind::kAdd;
      result = ctx_->int_val(add ? 0 : 1);
      bool first = true;
      for (SymExpr op : e.operands()) {
        z3::expr t = Translate(op);
        result = first ? t : (add ? result + t : result * t);
        first = false;
      }
      break;
    }
    case ExprKind::kFloorDiv:
    case ExprKind::kMod: {
      SymExpr divisor = e.operands()[1];
      z3::expr a = Translate(e.operands()[0]);
      z3::expr b = Translate(divisor);
      result = e.kind() == ExprKind::kFloorDiv ? FloorDivTerm(a, b, divisor)
                                               : FloorModTerm(a, b, divisor);
      break;
    }
    case ExprKind::kMin:
    case ExprKind::kMax: {
      z3::expr a = Translate(e.operands()[0]);
      z3::expr b = Translate(e.operands()[1]);
      result = e.kind() == ExprKind::kMin ? z3::ite(a <= b, a, b) : z3::ite(a >= b, a, b);
      break;
    }
  }
  cache_.emplace(e, result);
  return result;
}

z3::expr Z3Translator::Translate(const Predicate& p) {
  switch (p.kind()) {
    case PredKind::kTrue:
      return ctx_->bool_val(true);
    case PredKind::kFalse:
      return ctx_->bool_val(false);
    case PredKind::kEq:
      return Translate(p.lhs()) == Translate(p.rhs());
    case PredKind::kNe:
      return Translate(p.lhs()) != Translate(p.rhs());
    case PredKind::kLt:
      return Translate(p.lhs()) < Translate(p.rhs());
    case PredKind::kLe:
      return Translate(p.lhs()) <= Translate(p.rhs());
    case PredKind::kGt:
      return Translate(p.lhs()) > Translate(p.rhs());
    case PredKind::kGe:
      return Translate(p.lhs()) >= Translate(p.rhs());
    case PredKind::kDivisible:
      return FloorModTerm(Translate(p.lhs()), Translate(p.rhs()), p.rhs()) == 0;
    case PredKind::kNot:
      return !Translate(p.children()[0]);
    case PredKind::kAnd:
    case PredKind::kOr: {
      z3::expr_vector parts(*ctx_);
      for (const Predicate& c : p.children()) parts.push_back(Translate(c));
      return p.kind() == PredKind::kAnd ? z3::mk_and(parts) : z3::mk_or(parts);
    }
  }
  return ctx_->bool_val(false);
}

}  // namespace shapeshift::internal
