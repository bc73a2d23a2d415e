// One `shapeshift fuzz` run, start to report: the cases (generated from the
// seed, or the `--case` shapes given), the guard mutants when asked, the
// minimization of failures, and the report as the JSON object `fuzz --json`
// prints (cmd_fuzz.cc renders the text form from the same object).
//
// Why here and not in cmd_fuzz.cc: the Python package's `shapeshift.fuzz()`
// returns this report as a dict, from this one builder.
#ifndef SHAPESHIFT_TOOLS_FUZZ_REPORT_H_
#define SHAPESHIFT_TOOLS_FUZZ_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tools/fuzz_runner.h"

namespace shapeshift::tools {

// What a fuzz run is asked for (the CLI's flags, parsed).
struct FuzzRequest {
  FuzzOptions options;
  int64_t cases = 1000;
  std::vector<std::string> explicit_cases;  // `--case dim=N,...`; replaces the generated cases
  bool mutate_guards = false;
  int mutant_shapes = 8;
  double min_kill_rate = 0.9;
};

struct FuzzOutcome {
  nlohmann::ordered_json report;
  // A soundness failure, an unclear error, a spurious recompile, an
  // evaluator disagreement, an allocation failure, or a low kill rate.
  bool failed = false;
};

// Errors: a model that cannot be loaded or compiled, a malformed `--case`,
// or the tool itself unable to go on (Z3 undecided).
absl::StatusOr<FuzzOutcome> RunFuzz(const FuzzRequest& request);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_FUZZ_REPORT_H_
