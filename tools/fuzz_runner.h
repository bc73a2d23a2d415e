// FuzzRunner: drives one `shapeshift fuzz` run — a Session under
// one policy, the reference oracle and Z3 — case by case, and checks the
// three guard properties of DESIGN.md "Fuzz-testing guard correctness":
//  - soundness: an accepted in-domain request's outputs match the
//    interpreter (fuzz_reference.h's tolerance); an out-of-domain request is
//    an error naming the dim; a wrong-rank/dtype request an error naming
//    the input. A refusal at the recompile limit (RESOURCE_EXHAUSTED) is the
//    dispatcher's documented explicit answer: counted apart, not a failure.
//    A bad request refused by an error that does not name what is wrong is
//    sound (no result) but unclear: counted apart as `unclear_errors`, and
//    a failure too (DESIGN.md: every bad input gets a clear error).
//  - memory: every case is sized before anything is allocated
//    (fuzz_budget.h); one over FuzzOptions::max_case_bytes is skipped and
//    counted (`over_budget`). A case that still fails to allocate — an
//    allocator's RESOURCE_EXHAUSTED that is not the recompile limit, or
//    std::bad_alloc — is an `allocation_failures` failure, never a crash
//    and never mistaken for a limit refusal.
//  - tightness: after every compile, an entry that existed then and whose
//    atoms all held at the trigger (Z3) makes the compile spurious.
//  - evaluator agreement: every entry's GuardProgram verdict at every
//    shape the run visits equals Z3's (fuzz_guard_checks.h).
// Soundness failures are then minimized (each dim shrunk toward the
// smallest value that still fails, on the session as it is then) and given
// a replay command line (the shapes that compiled before the failure, then
// the minimized shape, as `--case` flags: the same entries, the same
// request).
//
// Why in tools/ and over the public API only: the tool is what a user
// points at *their* model; it must see exactly what a serving process sees.
#ifndef SHAPESHIFT_TOOLS_FUZZ_RUNNER_H_
#define SHAPESHIFT_TOOLS_FUZZ_RUNNER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "graph/onnx/importer.h"
#include "runtime/session.h"
#include "tools/fuzz_budget.h"
#include "tools/fuzz_cases.h"
#include "tools/fuzz_guard_checks.h"
#include "tools/fuzz_reference.h"

namespace shapeshift::tools {

struct FuzzOptions {
  std::string model;
  std::map<std::string, DimRange> dims;
  runtime::SpecializationPolicy policy = runtime::SpecializationPolicy::kAuto;
  int recompile_limit = 64;
  uint64_t seed = 1;
  size_t reference_cache_bytes = size_t{1} << 30;
  uint64_t max_case_bytes = uint64_t{1} << 30;  // the CLI passes DefaultMaxCaseBytes() unless told
  unsigned z3_timeout_ms = 2000;
  int max_minimized = 5;  // soundness failures minimized (each costs re-runs)
  runtime::CompileOptions device;  // --device and the CUDA flags (only those fields are used)
};

struct FuzzFailure {
  std::string property;  // "soundness" | "clarity" | "tightness" | "evaluator" | "memory"
  std::string what;      // e.g. "output mismatch", "spurious recompile"
  int64_t case_index = -1;
  CaseKind case_kind = CaseKind::kInDomain;
  std::vector<int64_t> values;     // slot order
  std::vector<int64_t> minimized;  // soundness: the shrunk shape (empty if not minimized)
  std::string detail;
  size_t compiles_before = 0;  // compiles that preceded it (the replay's history)
  int bad_slot = -1;           // kOutOfDomain: the dim outside its range
};

struct FuzzResults {
  int64_t cases = 0;
  int64_t served = 0;               // in-domain requests answered and checked
  int64_t rejected_as_expected = 0; // out-of-domain / malformed requests refused with a clear error
  int64_t limit_refusals = 0;       // refused at the recompile limit (explicit, expected)
  int64_t over_budget = 0;          // skipped: estimated over max_case_bytes (never attempted)
  uint64_t largest_over_budget = 0; // the largest such estimate, in bytes
  int64_t allocation_failures = 0;  // a case that failed to allocate (a failure)
  int64_t sound_failures = 0;
  int64_t unclear_errors = 0;       // bad requests refused without naming the dim or input
  int64_t spurious_recompiles = 0;
  int64_t evaluator_checks = 0;
  int64_t evaluator_disagreements = 0;
  double max_abs_error = 0;
  std::vector<FuzzFailure> failures;
};

class FuzzRunner {
 public:
  static absl::StatusOr<std::unique_ptr<FuzzRunner>> Create(const FuzzOptions& options);

  // Runs and checks each case in order; results accumulate. An error only
  // when the tool itself cannot go on (Z3 undecided, the oracle's inputs).
  absl::Status RunCases(const std::vector<FuzzCase>& cases);
  // Shrinks the first options.max_minimized soundness and clarity failures.
  void MinimizeFailures();

  const FuzzResults& results() const { return results_; }
  const FuzzDomain& domain() const { return domain_; }
  runtime::Session& session() { return *session_; }
  ReferenceOracle& oracle() { return *oracle_; }
  Z3GuardOracle& z3() { return z3_; }
  // Distinct in-domain shapes the run visited, in first-visit order.
  const std::vector<std::vector<int64_t>>& visited_shapes() const { return visited_shapes_; }
  // The trigger shape of every compile so far, in order.
  const std::vector<std::vector<int64_t>>& compile_triggers() const { return compile_triggers_; }
  int64_t compiles() const;
  // The bytes a case of `kind` at `values` is estimated to need, and
  // whether that fits FuzzOptions::max_case_bytes.
  uint64_t EstimatedBytes(const std::vector<int64_t>& values, CaseKind kind) const;
  bool FitsBudget(const std::vector<int64_t>& values, CaseKind kind) const {
    return EstimatedBytes(values, kind) <= options_.max_case_bytes;
  }
  uint64_t max_case_bytes() const { return options_.max_case_bytes; }

 private:
  FuzzRunner(FuzzOptions options, FuzzDomain domain, std::vector<std::string> input_names,
             std::unique_ptr<runtime::Session> session, std::unique_ptr<ReferenceOracle> oracle,
             CaseFootprintEstimator footprint);

  // One request and its soundness check.
  enum class Outcome {
    kServed, kRejected, kLimitRefused, kUnclearError, kFailed, kOverBudget, kAllocationFailed
  };
  struct Checked {
    Outcome outcome = Outcome::kServed;
    std::string what;
    std::string detail;
    double max_abs_error = 0;
    uint64_t estimate = 0;  // kOverBudget: the estimated bytes
  };
  // The budget check, then SendAndCheck with allocation failures caught.
  absl::StatusOr<Checked> CheckRequest(const FuzzCase& c);
  absl::StatusOr<Checked> SendAndCheck(const FuzzCase& c);
  absl::Status CheckNewCompiles(int64_t case_index, const FuzzCase& c);
  absl::Status CheckEvaluatorAgreement(int64_t case_index, const FuzzCase& c);
  // `values` as a symbol assignment.
  Assignment AssignmentOf(const std::vector<int64_t>& values) const;

  const FuzzOptions options_;
  const FuzzDomain domain_;
  const std::vector<std::string> input_names_;
  std::unique_ptr<runtime::Session> session_;
  std::unique_ptr<ReferenceOracle> oracle_;
  const CaseFootprintEstimator footprint_;
  Z3GuardOracle z3_;
  FuzzResults results_;
  size_t events_seen_ = 0;
  std::vector<std::vector<int64_t>> compile_triggers_;
  std::vector<std::vector<int64_t>> visited_shapes_;
  absl::flat_hash_set<std::vector<int64_t>> visited_set_;
  absl::flat_hash_set<std::pair<int64_t, std::vector<int64_t>>> evaluated_;  // (entry id, shape)
};

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_FUZZ_RUNNER_H_
