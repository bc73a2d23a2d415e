// Translation of SymExpr / Predicate into Z3 integer terms with our floor
// semantics. Internal to the Z3 bridge; may throw z3::exception (the bridge
// catches at its boundary).
#ifndef SHAPESHIFT_SHAPES_INTERNAL_Z3_TRANSLATOR_H_
#define SHAPESHIFT_SHAPES_INTERNAL_Z3_TRANSLATOR_H_

#include <string>

#include <z3++.h>

#include "absl/container/flat_hash_map.h"
#include "shapes/predicate.h"
#include "shapes/sym_expr.h"

namespace shapeshift::internal {

class Z3Translator {
 public:
  explicit Z3Translator(z3::context* ctx) : ctx_(ctx) {}

  z3::expr Translate(SymExpr e);
  z3::expr Translate(const Predicate& p);
  // The integer constant standing for `name`.
  z3::expr Symbol(const std::string& name);

  // floor(a / b) and a - b*floor(a / b), for any sign of b.
  z3::expr FloorDivTerm(const z3::expr& a, const z3::expr& b, SymExpr divisor);
  z3::expr FloorModTerm(const z3::expr& a, const z3::expr& b, SymExpr divisor);

 private:
  z3::context* ctx_;
  absl::flat_hash_map<SymExpr, z3::expr> cache_;
};

}  // namespace shapeshift::internal

#endif  // SHAPESHIFT_SHAPES_INTERNAL_Z3_TRANSLATOR_H_
