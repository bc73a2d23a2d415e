// The shape engine's fuzz properties, on text input (what `shapeshift
// prove --guards` and the parsers read):
//
//  - CheckSymExprText: ParseSymExpr accepts exactly the documented grammar
//    (the reference parser's); the canonical form it builds evaluates like
//    the text as written, and like its own full substitution by constants,
//    wherever both evaluate; ToString re-parses to the identical object.
//  - CheckPredicateText: the same for ParsePredicate and Predicate.
//  - CheckGuardProgramText: one predicate per line forms a guard set;
//    GuardProgram::Evaluate gives the verdict Predicate::Evaluate gives atom
//    by atom (first false or erroring atom fails), under the sorted slot
//    order and under a caller-chosen one.
//
// Each returns a Violation (tests/fuzz/checks/violation.h); invalid text is
// not one.
#ifndef SHAPESHIFT_TESTS_FUZZ_CHECKS_EXPR_CHECKS_H_
#define SHAPESHIFT_TESTS_FUZZ_CHECKS_EXPR_CHECKS_H_

#include "absl/strings/string_view.h"
#include "tests/fuzz/checks/violation.h"

namespace shapeshift::fuzz {

Violation CheckSymExprText(absl::string_view text);
Violation CheckPredicateText(absl::string_view text);
Violation CheckGuardProgramText(absl::string_view text);

}  // namespace shapeshift::fuzz

#endif  // SHAPESHIFT_TESTS_FUZZ_CHECKS_EXPR_CHECKS_H_
