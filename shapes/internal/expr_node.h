// The interned node behind every SymExpr, and the factory that interns it.
//
// Internal to shapes/: other folders see only SymExpr. Nodes are created once
// per distinct structure and live while a SymExpr refers to them (the count
// is the ExprRefCount base), so a SymExpr is one pointer and equality is
// pointer identity.
#ifndef SHAPESHIFT_SHAPES_INTERNAL_EXPR_NODE_H_
#define SHAPESHIFT_SHAPES_INTERNAL_EXPR_NODE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shapes/sym_expr.h"

namespace shapeshift {
namespace internal {

struct ExprNode : ExprRefCount {
  ExprNode() = default;
  ExprNode(ExprNode&& other) noexcept
      : kind(other.kind),
        value(other.value),
        name(std::move(other.name)),
        operands(std::move(other.operands)),
        canonical(other.canonical),
        hash(other.hash),
        depth(other.depth),
        tree_size(other.tree_size) {}

  ExprKind kind = ExprKind::kConst;
  int64_t value = 0;              // kConst
  std::string name;               // kSymbol
  std::vector<SymExpr> operands;  // every other kind
  // False only for a kAdd/kMul kept unexpanded because folding its
  // coefficients would overflow int64 (see polynomial.h); such a node is an
  // opaque atom to the canonicalizer and overflows when evaluated.
  bool canonical = true;
  // Filled in by interning.
  size_t hash = 0;
  int64_t depth = 1;
  int64_t tree_size = 1;
};



}  // namespace internal

inline SymExpr::SymExpr(const internal::ExprNode* node, FromNode) : node_(node) {}

// Interns nodes. Thread-safe: compiles may build expressions on several
// threads at once.
class SymExprFactory {
 public:
  static SymExpr Const(int64_t value);
  static SymExpr Symbol(absl::string_view name);
  // `operands` must already be in the canonical order the kind requires.
  static SymExpr Make(ExprKind kind, std::vector<SymExpr> operands, bool canonical = true);

  // For freeing (sym_expr.cc): takes `e`'s reference (leaving `e` the
  // constant 0), and drops a reference unless it is the last one.
  static const internal::ExprNode* Steal(SymExpr& e);
  static bool DropIfNotLast(const internal::ExprNode* node);
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_INTERNAL_EXPR_NODE_H_
