// The interned node behind every SymExpr, and the factory that interns it.
//
// Internal to shapes/: other folders see only SymExpr. Nodes are created once
// per distinct structure, live for the whole process and are never freed, so
// a SymExpr is a plain pointer and equality is pointer identity.
#ifndef SHAPESHIFT_SHAPES_INTERNAL_EXPR_NODE_H_
#define SHAPESHIFT_SHAPES_INTERNAL_EXPR_NODE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shapes/sym_expr.h"

namespace shapeshift {
namespace internal {

struct ExprNode {
  ExprKind kind = ExprKind::kConst;
  int64_t value = 0;              // kConst
  std::string name;               // kSymbol
  std::vector<SymExpr> operands;  // every other kind
  // False only for a kAdd/kMul kept unexpanded because folding its
  // coefficients would overflow int64 (see polynomial.h); such a node is an
  // opaque atom to the canonicalizer and overflows when evaluated.
  bool canonical = true;
  size_t hash = 0;
};

}  // namespace internal

// Interns nodes. Thread-safe: compiles may build expressions on several
// threads at once.
class SymExprFactory {
 public:
  static SymExpr Const(int64_t value);
  static SymExpr Symbol(absl::string_view name);
  // `operands` must already be in the canonical order the kind requires.
  static SymExpr Make(ExprKind kind, std::vector<SymExpr> operands, bool canonical = true);
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_INTERNAL_EXPR_NODE_H_
