// Z3Bridge: the exact (and slower) second opinion on shape questions.
//
// SymExprs and Predicates translate into Z3 integer arithmetic with exactly
// our floor semantics — Z3's own div/mod are Euclidean, which differs from
// floor division for negative divisors, so FloorDiv and Mod are translated
// explicitly (see z3_bridge.cc). Z3 integers are unbounded; our evaluator
// errors on int64 overflow, so a *proven* fact holds for every assignment
// our evaluator accepts. Division by zero is an evaluation error for us and
// an unspecified value for Z3: proofs therefore hold for whatever x // 0
// might be, which is sound for every assignment that evaluates.
//
// Every solver check has a wall-clock timeout (enforced by interrupting the
// context, see internal/z3_watchdog.h for why not Z3's own timer); a timeout
// or solver failure answers kUnknown, never kProven. z3::exception never
// escapes.
//
// Thread-safety: a Z3 context is not thread-safe. Each Z3Bridge owns one
// context; use a bridge from one thread at a time (one per compile thread).
#ifndef SHAPESHIFT_SHAPES_Z3_BRIDGE_H_
#define SHAPESHIFT_SHAPES_Z3_BRIDGE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "shapes/predicate.h"
#include "shapes/symbol_facts.h"
#include "shapes/sym_expr.h"

namespace shapeshift {

// proven / refuted (with a witness where the result type has one) / unknown.
enum class Verdict { kProven, kRefuted, kUnknown };
const char* VerdictName(Verdict v);

struct ImplicationResult {
  Verdict verdict = Verdict::kUnknown;
  Assignment counterexample;  // kRefuted: satisfies the assumptions, violates the goal
  std::string detail;         // kUnknown: why (timeout, solver message)
};

struct SimplifyResult {
  // kProven: some assignment satisfies domain and every atom (`witness`);
  // kRefuted: the atoms contradict each other within the domain (no input
  // can pass); kUnknown: the solver could not tell.
  Verdict consistency = Verdict::kUnknown;
  Assignment witness;
  std::vector<size_t> kept;     // indices of atoms still needed, in order
  std::vector<size_t> dropped;  // implied by the domain and the kept atoms
  std::string detail;
};

struct UnsatCoreResult {
  // kProven: the assignment fails the guard set and `core` explains it;
  // kRefuted: the assignment passes every atom (nothing to explain);
  // kUnknown: the solver could not tell.
  Verdict verdict = Verdict::kUnknown;
  std::vector<size_t> failing;  // every atom false (or erroring) at the assignment
  // A minimal subset of the atoms that no completion of the assignment can
  // satisfy: removing any one atom of it makes the rest satisfiable. With a
  // complete assignment it is a single failing atom; with a partial one
  // (derived symbols left free) it can take several atoms together.
  std::vector<size_t> core;
  std::vector<std::string> core_symbols;  // assigned symbols the core needs
  std::string detail;
};

struct CoverageResult {
  // kProven: every assignment in the domain passes some guard set;
  // kRefuted: `witness` is in the domain and fails every guard set.
  Verdict verdict = Verdict::kUnknown;
  Assignment witness;
  std::string detail;
  // The exact query asked, as SMT-LIB 2 (domain and the negation of every
  // guard set; unsat = covered): what a coverage certificate records so that
  // anyone can re-ask it (runtime/bundle/certificate.h).
  std::string query;
};

// "Z3 4.8.12.0": the solver a certificate's answer came from.
std::string Z3VersionString();

struct IntervalResult {
  // kProven: [lo, hi] is the widest interval (see WidestInterval);
  // kRefuted: the guards already fail at the given value; kUnknown.
  Verdict verdict = Verdict::kUnknown;
  int64_t lo = 0;
  int64_t hi = 0;
  std::string detail;
};

class Z3Bridge {
 public:
  explicit Z3Bridge(unsigned timeout_ms = 2000);
  ~Z3Bridge();
  Z3Bridge(const Z3Bridge&) = delete;
  Z3Bridge& operator=(const Z3Bridge&) = delete;

  unsigned timeout_ms() const { return timeout_ms_; }

  // Does the conjunction of `assumptions` imply `goal`? kRefuted carries an
  // assignment (for every symbol mentioned) that satisfies the assumptions
  // and violates the goal, checked with our own evaluator.
  ImplicationResult Implies(absl::Span<const Predicate> assumptions, const Predicate& goal);

  // Drops the atoms of a guard set (a conjunction) implied by the domain and
  // the other atoms still kept, greedily in order; detects contradictions.
  SimplifyResult Simplify(const Predicate& domain, absl::Span<const Predicate> atoms);

  // Why does `values` fail `atoms`? See UnsatCoreResult.
  UnsatCoreResult UnsatCore(absl::Span<const Predicate> atoms, const Assignment& values);

  // Is every point of `domain` accepted by at least one guard set (each a
  // conjunction of atoms)? The witness names every symbol of the domain and
  // of the guard sets, and is checked with our own evaluator.
  CoverageResult Coverage(const Predicate& domain,
                          absl::Span<const std::vector<Predicate>> guard_sets);

  // The widest interval [lo, hi] with lo <= at[symbol] <= hi and
  // limit.lo <= lo, hi <= limit.hi such that, with every other symbol fixed
  // at its value in `at`, every atom of `atoms` holds for *every* value of
  // `symbol` in [lo, hi]. Computed as: hi = (the least failing value above
  // at[symbol]) - 1, or limit.hi when none fails; lo likewise from below —
  // each a z3::optimize minimize/maximize over the failing values. Every
  // symbol the atoms mention must have a value in `at`.
  IntervalResult WidestInterval(const std::string& symbol, const Assignment& at,
                                absl::Span<const Predicate> atoms, Interval limit);

  // The value of `e` under `values` computed by Z3 from our translation
  // (constant-folded by its simplifier): lets tests check the translation
  // against SymExpr::Evaluate without a solver call.
  absl::StatusOr<int64_t> EvaluateInZ3(SymExpr e, const Assignment& values);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  unsigned timeout_ms_;
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_Z3_BRIDGE_H_
