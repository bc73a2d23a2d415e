// Concrete symbol values for the fuzz checks, derived deterministically from
// the input bytes (so a crash reproduces from its file alone). The mix leans
// on small values (where shapes live and where floor division's sign cases
// are), but also hits 0, ±1, powers of two and the int64 edges, where
// overflow and division errors must agree.
#ifndef SHAPESHIFT_TESTS_FUZZ_CHECKS_ASSIGNMENTS_H_
#define SHAPESHIFT_TESTS_FUZZ_CHECKS_ASSIGNMENTS_H_

#include <string>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/strings/string_view.h"
#include "shapes/sym_expr.h"

namespace shapeshift::fuzz {

std::vector<Assignment> AssignmentsFor(const absl::btree_set<std::string>& symbols,
                                       absl::string_view input, int count);

// `{a=1, b=-3}` for violation messages.
std::string AssignmentToString(const Assignment& values);

}  // namespace shapeshift::fuzz

#endif  // SHAPESHIFT_TESTS_FUZZ_CHECKS_ASSIGNMENTS_H_
