// Replaying a request trace (tools/trace.h) through a Session and
// counting what the specialization machinery did: compiles by tier and
// trigger, misses, tier-ups, latency percentiles, time to the first result
// — and whether the answers were right.
//
// Why check answers in a replay: a recompile count is only good news if the
// artifacts that served the traffic computed correctly. The replay re-runs a
// deterministic sample on the reference interpreter: every `check_every`-th
// request (0, K, 2K, ...) and the first request each cache entry served
// (found with the cache's own lookup just before the request, or just after
// it when the request compiled) — so every artifact that served traffic is
// checked at least once. Comparison: graph/tensor_compare.h (rtol = atol = 1e-3).
//
// Latency is measured around Session::Run only (inputs are made
// and checks run outside the timed region). The counts are taken after the
// auto policy's background tier-ups have finished (WaitForTierUps), so a
// tier-up the trace triggered is counted even if no request used it. Request i's inputs are
// MakeInputs(recipes, trace[i], seed + i).
#ifndef SHAPESHIFT_TOOLS_RUN_REPLAY_H_
#define SHAPESHIFT_TOOLS_RUN_REPLAY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "runtime/session.h"
#include "shapes/sym_expr.h"
#include "tools/model_loader.h"

namespace shapeshift::tools {

struct ReplayOptions {
  uint64_t seed = 1;
  int64_t check_every = 50;  // 0: check nothing (not even each entry's first request)
  // Wall time already spent before the first request: loading the model and
  // creating the session (the ahead-of-time compile of auto/polymorphic),
  // added to the first request's latency to give the time to the first result.
  double setup_us = 0;
};

struct ReplayResult {
  int64_t requests = 0;        // requests sent
  int64_t served = 0;          // requests that returned outputs
  int64_t errors = 0;          // requests refused (e.g. at the recompile limit)
  std::string first_error;     // the first refusal, naming the request
  int64_t distinct_shapes = 0;
  // Power-of-two buckets (every dynamic dim's, combined) the trace's
  // requests fall in: the bound on useful tier-ups under auto.
  int64_t buckets_with_traffic = 0;
  int64_t compiles = 0;        // every compile, the ahead-of-time one included
  std::map<std::string, int64_t> compiles_by_tier;     // polymorphic, bucketed, static
  std::map<std::string, int64_t> compiles_by_trigger;  // initial, miss, tier-up
  int64_t cache_loads = 0;     // entries loaded from the persistent cache, not compiled
  int64_t misses = 0;
  int64_t tier_ups = 0;
  int64_t limit_fallbacks = 0;
  double compile_ms = 0;       // summed over the compile events
  int64_t entries = 0;         // cache entries at the end
  int64_t checked = 0;         // requests re-run on the interpreter
  int64_t wrong_results = 0;   // checked requests outside the tolerance
  double max_abs_error = 0;    // over the checked requests
  std::string first_wrong;     // the first wrong request, naming it
  std::vector<double> latency_us;  // per served request, in trace order
  double first_request_us = 0;     // the first request's Run call
  double first_result_us = 0;      // setup_us + first_request_us
  int64_t compiles_before_first_result = 0;
};

// Sends `trace` to `session` in order. `reference` is the model's
// unoptimized graph (the interpreter's input); `recipes` say how inputs are
// made (InputRecipes on the same model). An error only when inputs cannot
// be made or the interpreter fails; refused requests are counted.
absl::StatusOr<ReplayResult> ReplayTrace(runtime::Session& session, const Graph& reference,
                                         const std::vector<InputRecipe>& recipes,
                                         const std::vector<Assignment>& trace, const ReplayOptions& options);

// 0.0 ≤ p ≤ 1.0; nearest-rank on a sorted copy; 0 for no values.
double Percentile(std::vector<double> values, double p);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_RUN_REPLAY_H_
