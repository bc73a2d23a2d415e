// Random expressions and predicates for the shape engine's property tests.
//
// A RawExpr is the expression *as built*, before any canonicalization: the
// tests evaluate it directly (the reference semantics) and compare with the
// SymExpr the operators produce. Seeded from SHAPESHIFT_TEST_SEED (default 1)
// so a failure is reproducible.
#ifndef SHAPESHIFT_TESTS_SHAPES_RANDOM_EXPR_H_
#define SHAPESHIFT_TESTS_SHAPES_RANDOM_EXPR_H_

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "shapes/predicate.h"
#include "shapes/sym_expr.h"

namespace shapeshift::testing {

inline uint64_t TestSeed() {
  const char* s = std::getenv("SHAPESHIFT_TEST_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : 1;
}

enum class RawOp { kConst, kSymbol, kAdd, kSub, kMul, kFloorDiv, kMod, kMin, kMax };

struct RawExpr {
  RawOp op = RawOp::kConst;
  int64_t value = 0;
  std::string name;
  std::shared_ptr<RawExpr> a, b;

  // Reference evaluation: the operation tree as written, floor semantics,
  // std::nullopt on division by zero or int64 overflow.
  std::optional<int64_t> Eval(const Assignment& v) const {
    if (op == RawOp::kConst) return value;
    if (op == RawOp::kSymbol) return v.at(name);
    std::optional<int64_t> x = a->Eval(v), y = b->Eval(v);
    if (!x || !y) return std::nullopt;
    int64_t r;
    switch (op) {
      case RawOp::kAdd:
        if (__builtin_add_overflow(*x, *y, &r)) return std::nullopt;
        return r;
      case RawOp::kSub:
        if (__builtin_sub_overflow(*x, *y, &r)) return std::nullopt;
        return r;
      case RawOp::kMul:
        if (__builtin_mul_overflow(*x, *y, &r)) return std::nullopt;
        return r;
      case RawOp::kFloorDiv:
        if (*y == 0 || (*y == -1 && *x == std::numeric_limits<int64_t>::min())) return std::nullopt;
        return FloorDivInt(*x, *y);
      case RawOp::kMod:
        if (*y == 0) return std::nullopt;
        return FloorModInt(*x, *y);
      case RawOp::kMin:
        return std::min(*x, *y);
      default:
        return std::max(*x, *y);
    }
  }

  // The SymExpr the public operators build from this tree.
  SymExpr Build() const {
    switch (op) {
      case RawOp::kConst: return SymExpr(value);
      case RawOp::kSymbol: return SymExpr::Symbol(name);
      case RawOp::kAdd: return a->Build() + b->Build();
      case RawOp::kSub: return a->Build() - b->Build();
      case RawOp::kMul: return a->Build() * b->Build();
      case RawOp::kFloorDiv: return FloorDiv(a->Build(), b->Build());
      case RawOp::kMod: return Mod(a->Build(), b->Build());
      case RawOp::kMin: return Min(a->Build(), b->Build());
      default: return Max(a->Build(), b->Build());
    }
  }
};

class RandomExprs {
 public:
  explicit RandomExprs(uint64_t seed, std::vector<std::string> symbols = {"a", "b", "c"})
      : rng_(seed), symbols_(std::move(symbols)) {}

  // Only constant multipliers and divisors: the linear (plus floordiv/mod by
  // constants) fragment most shape expressions live in, which Z3 decides.
  void set_linear(bool linear) { linear_ = linear; }

  std::mt19937_64& rng() { return rng_; }
  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  std::shared_ptr<RawExpr> Expr(int depth) {
    auto e = std::make_shared<RawExpr>();
    if (depth == 0 || Uniform(0, 3) == 0) {
      if (Uniform(0, 2) == 0) {
        e->op = RawOp::kConst;
        e->value = Uniform(-9, 9);
      } else {
        e->op = RawOp::kSymbol;
        e->name = symbols_[Uniform(0, symbols_.size() - 1)];
      }
      return e;
    }
    e->op = static_cast<RawOp>(Uniform(2, 8));
    e->a = Expr(depth - 1);
    const bool divides = e->op == RawOp::kFloorDiv || e->op == RawOp::kMod;
    if (linear_ && e->op == RawOp::kMul) {
      e->b = std::make_shared<RawExpr>();
      e->b->value = Uniform(-9, 9);
    } else if (divides && (linear_ || Uniform(0, 2) != 0)) {
      // Mostly constant divisors (the common case in shapes), both signs.
      e->b = std::make_shared<RawExpr>();
      e->b->value = Uniform(1, 9) * (Uniform(0, 3) == 0 ? -1 : 1);
    } else {
      e->b = Expr(depth - 1);
    }
    return e;
  }

  Assignment Values(int64_t lo, int64_t hi) {
    Assignment v;
    for (const std::string& s : symbols_) v[s] = Uniform(lo, hi);
    return v;
  }

  // A random atom or small boolean combination over random expressions.
  Predicate Pred(int depth, int expr_depth) {
    if (depth == 0 || Uniform(0, 2) == 0) {
      SymExpr l = Expr(expr_depth)->Build(), r = Expr(expr_depth)->Build();
      switch (Uniform(0, 6)) {
        case 0: return Predicate::Eq(l, r);
        case 1: return Predicate::Ne(l, r);
        case 2: return Predicate::Lt(l, r);
        case 3: return Predicate::Le(l, r);
        case 4: return Predicate::Gt(l, r);
        case 5: return Predicate::Ge(l, r);
        default: return Predicate::Divisible(l, Uniform(1, 16));
      }
    }
    switch (Uniform(0, 2)) {
      case 0: return Predicate::And({Pred(depth - 1, expr_depth), Pred(depth - 1, expr_depth)});
      case 1: return Predicate::Or({Pred(depth - 1, expr_depth), Pred(depth - 1, expr_depth)});
      default: return Predicate::Not(Pred(depth - 1, expr_depth));
    }
  }

 private:
  std::mt19937_64 rng_;
  std::vector<std::string> symbols_;
  bool linear_ = false;
};

// Whether `e` divides (FloorDiv or Mod) by the constant 0 somewhere: such an
// expression has no value, and its printed text (`x % 0`) is a parse error
// by design (shapes/parser.cc), so it cannot round-trip.
inline bool HasZeroDivisor(const SymExpr& e) {
  if ((e.kind() == ExprKind::kFloorDiv || e.kind() == ExprKind::kMod) && e.operands()[1].AsConst() == 0) {
    return true;
  }
  for (const SymExpr& operand : e.operands()) {
    if (HasZeroDivisor(operand)) return true;
  }
  return false;
}

inline bool HasZeroDivisor(const Predicate& p) {
  if (p.IsAtom()) return HasZeroDivisor(p.lhs()) || HasZeroDivisor(p.rhs());
  for (const Predicate& child : p.children()) {
    if (HasZeroDivisor(child)) return true;
  }
  return false;
}

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_SHAPES_RANDOM_EXPR_H_
