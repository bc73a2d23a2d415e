// Sums of products with integer coefficients: the canonical form of SymExpr.
//
// Every `+`, `-` and `*` on SymExprs goes through here: both operands are
// read as polynomials over opaque atoms (symbols, floordiv, mod, min, max),
// combined with like terms merged, and written back as one canonical node.
// That is what makes `2*s0 + s1 - s0` and `s1 + s0` the same object.
//
// Coefficient arithmetic is checked: when a coefficient would leave int64 the
// operation reports overflow and the caller keeps the expression unexpanded
// (a non-canonical node that fails evaluation with an overflow error), rather
// than wrapping silently.
#ifndef SHAPESHIFT_SHAPES_INTERNAL_POLYNOMIAL_H_
#define SHAPESHIFT_SHAPES_INTERNAL_POLYNOMIAL_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/btree_map.h"
#include "shapes/sym_expr.h"

namespace shapeshift::internal {

// A product of atoms, sorted by SymExpr's structural order (repeats are
// powers). The empty monomial is the constant term.
using Monomial = std::vector<SymExpr>;

// Higher degree first, then structurally: constants print last (`2*seq + 1`).
struct MonomialOrder {
  bool operator()(const Monomial& a, const Monomial& b) const;
};

// Monomial -> non-zero coefficient.
using Polynomial = absl::btree_map<Monomial, int64_t, MonomialOrder>;

Polynomial ToPolynomial(SymExpr e);
// The canonical SymExpr for `p`.
SymExpr FromPolynomial(const Polynomial& p);

// std::nullopt when a coefficient overflows int64.
std::optional<Polynomial> AddPolynomials(const Polynomial& a, const Polynomial& b);
std::optional<Polynomial> MulPolynomials(const Polynomial& a, const Polynomial& b);

}  // namespace shapeshift::internal

#endif  // SHAPESHIFT_SHAPES_INTERNAL_POLYNOMIAL_H_
