// A property violation found by a fuzz check: the one thing a harness
// crashes on. Merely invalid input is not a violation (the door under test
// must reject it with a Status, which the checks accept); a violation is a
// wrong answer — a canonical form that evaluates differently from the text it
// came from, a guard evaluator that disagrees with the predicate it compiles,
// an importer that accepts a model into a graph that fails its own verifier.
#ifndef SHAPESHIFT_TESTS_FUZZ_CHECKS_VIOLATION_H_
#define SHAPESHIFT_TESTS_FUZZ_CHECKS_VIOLATION_H_

#include <optional>
#include <string>

namespace shapeshift::fuzz {

// std::nullopt: the property held (or the input was rejected cleanly);
// otherwise a description naming the input and what disagreed.
using Violation = std::optional<std::string>;

// For the libFuzzer entry points: prints the violation and aborts, so
// libFuzzer records the input as a crash.
void AbortOnViolation(const Violation& violation);

}  // namespace shapeshift::fuzz

#endif  // SHAPESHIFT_TESTS_FUZZ_CHECKS_VIOLATION_H_
