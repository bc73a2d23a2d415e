// Predicate: boolean formulas over SymExprs — the language of guards and of
// every shape question a pass asks the ShapeEnv.
//
// Comparisons are normalized at construction where that helps
// deduplication, while printing keeps a readable form: constant differences
// fold to true/false, constants move right (`128 < seq` is `seq > 128`,
// `seq + 1 <= 5` is `seq <= 4`), `e % k == 0` is Divisible(e, k), `!` flips
// comparisons, and && / || flatten and drop duplicates (predicate.cc lists
// them all). Predicates are small immutable values (shared pointers to
// nodes); equal text means equal meaning. Evaluate never short-circuits: an
// evaluation error anywhere (division by zero, overflow) is an error.
#ifndef SHAPESHIFT_SHAPES_PREDICATE_H_
#define SHAPESHIFT_SHAPES_PREDICATE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shapes/sym_expr.h"

namespace shapeshift {

enum class PredKind {
  kTrue,
  kFalse,
  kEq,         // lhs == rhs
  kNe,         // lhs != rhs
  kLt,         // lhs <  rhs
  kLe,         // lhs <= rhs
  kGt,         // lhs >  rhs
  kGe,         // lhs >= rhs
  kDivisible,  // lhs divisible by the positive constant rhs (lhs % rhs == 0)
  kAnd,
  kOr,
  kNot,
};

class Predicate {
 public:
  Predicate();  // true
  static Predicate True();
  static Predicate False();
  static Predicate Eq(SymExpr a, SymExpr b);
  static Predicate Ne(SymExpr a, SymExpr b);
  static Predicate Lt(SymExpr a, SymExpr b);
  static Predicate Le(SymExpr a, SymExpr b);
  static Predicate Gt(SymExpr a, SymExpr b);
  static Predicate Ge(SymExpr a, SymExpr b);
  static Predicate Divisible(SymExpr a, int64_t divisor);  // divisor > 0
  static Predicate And(std::vector<Predicate> parts);
  static Predicate Or(std::vector<Predicate> parts);
  static Predicate Not(Predicate p);

  PredKind kind() const;
  bool IsAtom() const;  // a comparison or divisibility test
  SymExpr lhs() const;  // atoms only
  SymExpr rhs() const;  // atoms only (for kDivisible: the divisor constant)
  const std::vector<Predicate>& children() const;  // kAnd / kOr / kNot

  absl::StatusOr<bool> Evaluate(const Assignment& values) const;
  Predicate Substitute(const absl::flat_hash_map<std::string, SymExpr>& map) const;
  // `seq > 128 && seq % 16 == 0`, `!(a == b)`, `(a < 3 || b >= 4)`.
  std::string ToString() const;
  void CollectSymbols(absl::btree_set<std::string>* out) const;

  // Structural equality (same canonical operands and structure).
  friend bool operator==(const Predicate& a, const Predicate& b);
  friend bool operator!=(const Predicate& a, const Predicate& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const Predicate& p) {
    return H::combine(std::move(h), p.hash());
  }
  size_t hash() const;

  struct Node;

 private:
  friend class PredicateBuilder;  // the one place nodes are made (predicate.cc)
  explicit Predicate(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  std::shared_ptr<const Node> node_;
};

Predicate operator&&(Predicate a, Predicate b);
Predicate operator||(Predicate a, Predicate b);
Predicate operator!(Predicate a);

// Parses `seq > 128 && seq % 16 == 0`, `a != b || !(c <= 4)`, `true`, `false`.
// Operators: == != < <= > >= && || ! and parentheses; `e % k == 0` with a
// positive constant k parses to kDivisible.
absl::StatusOr<Predicate> ParsePredicate(absl::string_view text);

std::ostream& operator<<(std::ostream& os, const Predicate& p);

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_PREDICATE_H_
