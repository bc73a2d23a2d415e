// Z3's opinion of a guard set at one concrete shape, for the two guard
// properties `shapeshift fuzz` checks besides soundness.
//
// Why a second opinion: the dispatcher decides with GuardProgram, a flat
// bytecode with its own arithmetic (floor division, overflow checks,
// fused compare-and-check instructions); Z3 translates the same atoms
// independently (shapes/z3_bridge.h). Where the two disagree at a shape,
// one of them is wrong, and a wrong "pass" serves an artifact outside its
// region.
//  - Evaluator agreement: each atom's operands are evaluated by Z3 (the
//    translated term with the values substituted, simplified to a numeral)
//    and compared; the verdict and the first failing atom must equal
//    GuardProgram's. No solver call, so it runs for every entry and shape.
//  - Tightness: at each compile, a solver check (Z3Bridge::UnsatCore with
//    the trigger's values) asks whether every atom of an existing entry held
//    at the trigger; if so the compile was spurious (that entry could have
//    served the request).
#ifndef SHAPESHIFT_TOOLS_FUZZ_GUARD_CHECKS_H_
#define SHAPESHIFT_TOOLS_FUZZ_GUARD_CHECKS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "shapes/guard_program.h"
#include "shapes/predicate.h"
#include "shapes/sym_expr.h"
#include "shapes/z3_bridge.h"

namespace shapeshift::tools {

class Z3GuardOracle {
 public:
  explicit Z3GuardOracle(unsigned timeout_ms) : z3_(timeout_ms) {}

  // Z3's verdict for the conjunction `atoms` at `values` (atom by atom, in
  // order; an atom Z3 cannot evaluate to an int64 fails, as in
  // GuardProgram). Errors only for a missing symbol value.
  absl::StatusOr<GuardVerdict> Evaluate(absl::Span<const Predicate> atoms, const Assignment& values);

  // Does every atom hold at `values` (a solver check)? Errors when Z3 cannot
  // tell (timeout).
  absl::StatusOr<bool> AllHold(absl::Span<const Predicate> atoms, const Assignment& values);

  Z3Bridge& bridge() { return z3_; }

 private:
  absl::StatusOr<bool> AtomHolds(const Predicate& atom, const Assignment& values);
  Z3Bridge z3_;
};

// The atoms of a recorded guard set given as text (RecompileEvent), parsed
// back; an error names the text that does not parse.
absl::StatusOr<std::vector<Predicate>> ParseGuardTexts(const std::vector<std::string>& texts);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_FUZZ_GUARD_CHECKS_H_
