#include "shapes/internal/z3_translator.h"

#include <string>

#include "shapes/sym_expr_visitor.h"

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

namespace {

// One node's term from its operands' (cached by the translator).
class Z3Term final : public SymExprVisitor<z3::expr> {
 public:
  Z3Term(Z3Translator& t, z3::context& ctx) : t_(t), ctx_(ctx) {}

 private:
  z3::expr VisitConst(const SymExpr&, int64_t value) override { return ctx_.int_val(value); }
  z3::expr VisitSymbol(const SymExpr&, const std::string& name) override { return t_.Symbol(name); }
  z3::expr VisitAdd(const SymExpr&, absl::Span<const SymExpr> terms) override { return Chain(terms, /*add=*/true); }
  z3::expr VisitMul(const SymExpr&, absl::Span<const SymExpr> factors) override { return Chain(factors, /*add=*/false); }
  z3::expr VisitFloorDiv(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
    z3::expr x = t_.Translate(a);
    z3::expr y = t_.Translate(b);
    return t_.FloorDivTerm(x, y, b);
  }
  z3::expr VisitMod(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
    z3::expr x = t_.Translate(a);
    z3::expr y = t_.Translate(b);
    return t_.FloorModTerm(x, y, b);
  }
  z3::expr VisitMin(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
    z3::expr x = t_.Translate(a);
    z3::expr y = t_.Translate(b);
    return z3::ite(x <= y, x, y);
  }
  z3::expr VisitMax(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
    z3::expr x = t_.Translate(a);
    z3::expr y = t_.Translate(b);
    return z3::ite(x >= y, x, y);
  }

  // Left to right, as the terms are stored.
  z3::expr Chain(absl::Span<const SymExpr> ops, bool add) {
    z3::expr result = ctx_.int_val(add ? 0 : 1);
    bool first = true;
    for (const SymExpr& op : ops) {
      z3::expr t = t_.Translate(op);
      result = first ? t : (add ? result + t : result * t);
      first = false;
    }
    return result;
  }

  Z3Translator& t_;
  z3::context& ctx_;
};

}  // namespace

z3::expr Z3Translator::Translate(SymExpr e) {
  if (auto it = cache_.find(e); it != cache_.end()) return it->second;
  z3::expr result = Z3Term(*this, *ctx_).Visit(e);
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
