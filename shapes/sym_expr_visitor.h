// SymExprVisitor: the one switch over ExprKind for the walks that give
// every kind its own meaning.
//
// Printing, range and modular analysis, the Z3 translation, the runtime's
// SymTape and the two code generators each turn every kind into something
// of their own (text, an interval, a congruence, a Z3 term, tape
// instructions, LLVM values, C text). Each used to carry its own 8-case
// switch; with this base the dispatch is written once, each kind is a pure
// virtual Visit* with its operands named (a sum's terms, a division's
// numerator and divisor), and a kind added to ExprKind is a compile error
// in every one of those walks until it says what the kind means there.
//
// Only the dispatch lives here: each walk keeps its own recursion and memo
// (range analysis tracks saturation per node, the Z3 translator caches
// terms, SymTape reuses slots, the code generators keep their emission
// order), so Visit(e) is one node and the Visit* call Visit on operands as
// they need.
//
// Where a switch stays, and why: SymExpr::Evaluate and Substitute
// (sym_expr.cc) are the algebra's definition, written next to the factory
// that builds the kinds, and handle the four binary kinds in one code path
// that differs only in the final operation — four Visit* forwarding to one
// helper would hide that; GuardProgram's lowering likewise shares one path
// across kinds to fold constant operands into immediates. Predicate
// (PredKind) is another enum.
#ifndef SHAPESHIFT_SHAPES_SYM_EXPR_VISITOR_H_
#define SHAPESHIFT_SHAPES_SYM_EXPR_VISITOR_H_

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/types/span.h"
#include "shapes/sym_expr.h"

namespace shapeshift {

template <typename R, typename... Args>
class SymExprVisitor {
 public:
  virtual ~SymExprVisitor() = default;

  R Visit(const SymExpr& e, Args... args) {
    switch (e.kind()) {
      case ExprKind::kConst: return VisitConst(e, *e.AsConst(), std::forward<Args>(args)...);
      case ExprKind::kSymbol: return VisitSymbol(e, e.symbol_name(), std::forward<Args>(args)...);
      case ExprKind::kAdd: return VisitAdd(e, e.operands(), std::forward<Args>(args)...);
      case ExprKind::kMul: return VisitMul(e, e.operands(), std::forward<Args>(args)...);
      case ExprKind::kFloorDiv: return VisitFloorDiv(e, e.operands()[0], e.operands()[1], std::forward<Args>(args)...);
      case ExprKind::kMod: return VisitMod(e, e.operands()[0], e.operands()[1], std::forward<Args>(args)...);
      case ExprKind::kMin: return VisitMin(e, e.operands()[0], e.operands()[1], std::forward<Args>(args)...);
      case ExprKind::kMax: return VisitMax(e, e.operands()[0], e.operands()[1], std::forward<Args>(args)...);
    }
    std::abort();  // SymExprs are built by their factory: every kind is one of the above
  }

 protected:
  // `e` is the node itself, for memo keys and messages.
  virtual R VisitConst(const SymExpr& e, int64_t value, Args... args) = 0;
  virtual R VisitSymbol(const SymExpr& e, const std::string& name, Args... args) = 0;
  // A canonical sum's terms / a product's factors (its constant, if any, first).
  virtual R VisitAdd(const SymExpr& e, absl::Span<const SymExpr> terms, Args... args) = 0;
  virtual R VisitMul(const SymExpr& e, absl::Span<const SymExpr> factors, Args... args) = 0;
  // Floor division and modulo (shapes/README.md), min and max.
  virtual R VisitFloorDiv(const SymExpr& e, const SymExpr& a, const SymExpr& b, Args... args) = 0;
  virtual R VisitMod(const SymExpr& e, const SymExpr& a, const SymExpr& b, Args... args) = 0;
  virtual R VisitMin(const SymExpr& e, const SymExpr& a, const SymExpr& b, Args... args) = 0;
  virtual R VisitMax(const SymExpr& e, const SymExpr& a, const SymExpr& b, Args... args) = 0;
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_SYM_EXPR_VISITOR_H_
