// SymExpr: immutable, hash-consed integer expressions over named symbols.
//
// Every shape dimension, buffer size and loop bound in shapeshift is a SymExpr.
// Expressions are interned: two structurally equal expressions are the same
// object, so equality and hashing are pointer operations, and passes can use
// SymExprs as map keys freely.
//
// Canonical form. Sums of products with integer coefficients are kept in one
// canonical form (terms sorted, like terms merged, zero terms dropped,
// constants folded), so equal polynomials are the same object:
// `2*s0 + s1 - s0` is `s0 + s1`. FloorDiv, Mod, Min and Max are opaque atoms
// inside that polynomial, with local simplifications (constant folding,
// `x floordiv 1`, `(k*x) mod k`, ...).
//
// Division semantics (the single definition every consumer shares — the
// evaluator, range analysis, the Z3 bridge, the guard evaluator and generated
// code): FloorDiv rounds toward negative infinity and Mod has the sign of the
// divisor, so that  a == b * FloorDiv(a, b) + Mod(a, b)  for every b != 0.
// Examples: FloorDiv(-7, 2) == -4, Mod(-7, 2) == 1, Mod(7, -2) == -1.
// Division by zero is an evaluation error, never undefined behaviour; so is
// int64 overflow (checked with __builtin_*_overflow). A `+`/`*` whose folded
// coefficients would overflow is kept unexpanded and fails evaluation.
//
// Interning is thread-safe: expressions may be built on several threads.
#ifndef SHAPESHIFT_SHAPES_SYM_EXPR_H_
#define SHAPESHIFT_SHAPES_SYM_EXPR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace shapeshift {

enum class ExprKind {
  kConst,
  kSymbol,
  kAdd,       // sum of terms; canonical (see above)
  kMul,       // product of factors; the constant coefficient, if any, first
  kFloorDiv,  // operands: {numerator, denominator}
  kMod,       // operands: {numerator, denominator}
  kMin,       // operands: {a, b}
  kMax,       // operands: {a, b}
};

// A concrete value for every symbol an expression mentions.
using Assignment = absl::flat_hash_map<std::string, int64_t>;

namespace internal {
struct ExprNode;  // defined in sym_expr.cc; interned and never freed
}

class SymExpr {
 public:
  SymExpr();                   // the constant 0
  SymExpr(int64_t constant);   // NOLINT(google-explicit-constructor): dims read as numbers
  static SymExpr Symbol(absl::string_view name);

  ExprKind kind() const;
  bool IsConst() const { return kind() == ExprKind::kConst; }
  bool IsSymbol() const { return kind() == ExprKind::kSymbol; }
  std::optional<int64_t> AsConst() const;  // value when kind() == kConst
  const std::string& symbol_name() const;  // requires IsSymbol()
  absl::Span<const SymExpr> operands() const;
  size_t hash() const;

  // Interned: equality is identity.
  friend bool operator==(SymExpr a, SymExpr b) { return a.node_ == b.node_; }
  friend bool operator!=(SymExpr a, SymExpr b) { return a.node_ != b.node_; }
  template <typename H>
  friend H AbslHashValue(H h, SymExpr e) {
    return H::combine(std::move(h), e.node_);
  }
  // A total order that is stable across runs (structural, not by address).
  friend bool operator<(SymExpr a, SymExpr b);

  friend SymExpr operator+(SymExpr a, SymExpr b);
  friend SymExpr operator-(SymExpr a, SymExpr b);
  friend SymExpr operator*(SymExpr a, SymExpr b);
  friend SymExpr operator-(SymExpr a);
  SymExpr& operator+=(SymExpr b) { return *this = *this + b; }
  SymExpr& operator*=(SymExpr b) { return *this = *this * b; }

  // Value under `values`; an error names a missing symbol or a division by 0.
  absl::StatusOr<int64_t> Evaluate(const Assignment& values) const;
  // Replaces symbols by expressions (result re-canonicalized).
  SymExpr Substitute(const absl::flat_hash_map<std::string, SymExpr>& map) const;
  // Readable text in the parser's syntax: `2*seq + 1`, `(seq + 15) // 16`,
  // `seq % 16`, `min(seq, 128)`, `max(a, b)`.
  std::string ToString() const;
  void CollectSymbols(absl::btree_set<std::string>* out) const;
  absl::btree_set<std::string> Symbols() const;

  const internal::ExprNode* node() const { return node_; }

 private:
  // Tagged so that `SymExpr(0)` (0 is also a null pointer constant) picks
  // the int64_t constructor unambiguously.
  struct FromNode {};
  SymExpr(const internal::ExprNode* node, FromNode) : node_(node) {}
  friend struct internal::ExprNode;
  friend class SymExprFactory;
  const internal::ExprNode* node_;
};

SymExpr FloorDiv(SymExpr a, SymExpr b);
SymExpr Mod(SymExpr a, SymExpr b);
SymExpr Min(SymExpr a, SymExpr b);
SymExpr Max(SymExpr a, SymExpr b);
// ceil(a / b) for b > 0, expressed with FloorDiv.
SymExpr CeilDiv(SymExpr a, SymExpr b);

// Floor-semantics helpers on plain integers (the one definition; see top).
// Both require b != 0.
int64_t FloorDivInt(int64_t a, int64_t b);
int64_t FloorModInt(int64_t a, int64_t b);

// Parses the text form printed by ToString: integers, identifiers, + - * // %
// (floor division and modulo), unary minus, parentheses, min(a, b), max(a, b).
absl::StatusOr<SymExpr> ParseSymExpr(absl::string_view text);

std::ostream& operator<<(std::ostream& os, SymExpr e);

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_SYM_EXPR_H_
