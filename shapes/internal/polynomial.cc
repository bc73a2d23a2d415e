#include "shapes/internal/polynomial.h"

#include <algorithm>

#include "shapes/internal/expr_node.h"

namespace shapeshift::internal {
namespace {

// Adds `coeff * mono` into `p`; false on overflow.
bool Accumulate(Polynomial* p, const Monomial& mono, int64_t coeff) {
  auto [it, inserted] = p->try_emplace(mono, coeff);
  if (inserted) return true;
  int64_t sum;
  if (__builtin_add_overflow(it->second, coeff, &sum)) return false;
  if (sum == 0) {
    p->erase(it);
  } else {
    it->second = sum;
  }
  return true;
}

}  // namespace

bool MonomialOrder::operator()(const Monomial& a, const Monomial& b) const {
  if (a.size() != b.size()) return a.size() > b.size();
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

Polynomial ToPolynomial(SymExpr e) {
  Polynomial p;
  auto add_term = [&p](SymExpr term) {
    if (auto c = term.AsConst()) {
      if (*c != 0) p[Monomial{}] += *c;  // canonical sums hold one constant
      return;
    }
    if (term.kind() == ExprKind::kMul && term.node()->canonical) {
      auto ops = term.operands();
      int64_t coeff = 1;
      size_t first = 0;
      if (auto c = ops[0].AsConst()) {
        coeff = *c;
        first = 1;
      }
      p[Monomial(ops.begin() + first, ops.end())] += coeff;
      return;
    }
    p[Monomial{term}] += 1;
  };
  if (e.kind() == ExprKind::kAdd && e.node()->canonical) {
    for (SymExpr term : e.operands()) add_term(term);
  } else {
    add_term(e);
  }
  return p;
}

SymExpr FromPolynomial(const Polynomial& p) {
  std::vector<SymExpr> terms;
  terms.reserve(p.size());
  for (const auto& [mono, coeff] : p) {
    if (mono.empty()) {
      terms.push_back(SymExprFactory::Const(coeff));
    } else if (coeff == 1 && mono.size() == 1) {
      terms.push_back(mono[0]);
    } else {
      std::vector<SymExpr> factors;
      factors.reserve(mono.size() + 1);
      if (coeff != 1) factors.push_back(SymExprFactory::Const(coeff));
      factors.insert(factors.end(), mono.begin(), mono.end());
      terms.push_back(SymExprFactory::Make(ExprKind::kMul, std::move(factors)));
    }
  }
  if (terms.empty()) return SymExprFactory::Const(0);
  if (terms.size() == 1) return terms[0];
  return SymExprFactory::Make(ExprKind::kAdd, std::move(terms));
}

std::optional<Polynomial> AddPolynomials(const Polynomial& a, const Polynomial& b) {
  Polynomial sum = a;
  for (const auto& [mono, coeff] : b) {
    if (!Accumulate(&sum, mono, coeff)) return std::nullopt;
  }
  return sum;
}

std::optional<Polynomial> MulPolynomials(const Polynomial& a, const Polynomial& b) {
  Polynomial product;
  for (const auto& [ma, ca] : a) {
    for (const auto& [mb, cb] : b) {
      int64_t coeff;
      if (__builtin_mul_overflow(ca, cb, &coeff)) return std::nullopt;
      Monomial mono;
      mono.reserve(ma.size() + mb.size());
      std::merge(ma.begin(), ma.end(), mb.begin(), mb.end(), std::back_inserter(mono));
      if (!Accumulate(&product, mono, coeff)) return std::nullopt;
    }
  }
  return product;
}

}  // namespace shapeshift::internal
