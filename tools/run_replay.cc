#include "tools/run_replay.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/interpreter.h"
#include "runtime/specialization/bucket.h"
#include "graph/tensor_compare.h"
#include "tools/trace.h"

namespace shapeshift::tools {
namespace {

using Clock = std::chrono::steady_clock;

// The request's symbol values in the cache's slot order.
std::vector<int64_t> SlotValues(const runtime::Session& session, const Assignment& request) {
  std::vector<int64_t> values;
  for (const std::string& slot : session.dispatcher().slots()) {
    auto it = request.find(slot);
    values.push_back(it == request.end() ? 0 : it->second);
  }
  return values;
}

// The power-of-two bucket (runtime/specialization/bucket.h) of each slot,
// as the buckets' lower bounds: requests with equal keys share a bucket.
std::vector<int64_t> BucketKey(const ShapeEnv& env, const std::vector<std::string>& slots,
                               const std::vector<int64_t>& values) {
  std::vector<int64_t> key;
  for (size_t i = 0; i < slots.size(); ++i) {
    const SymbolInfo* s = env.FindSymbol(slots[i]);
    key.push_back(s == nullptr ? values[i] : runtime::PowerOfTwoBucket(values[i], s->min, s->max).lo);
  }
  return key;
}

// The id of the entry that serves `values` now, or 0 when none does.
int64_t ServingEntry(const runtime::Session& session, const std::vector<int64_t>& values) {
  std::shared_ptr<const runtime::CacheEntry> entry = session.dispatcher().cache().Find(values);
  return entry == nullptr ? 0 : entry->id;
}

void CountEvents(const runtime::Session& session, ReplayResult& result) {
  // Every tier and trigger is listed, zeros included, so readers need no defaults.
  for (runtime::Tier tier : {runtime::Tier::kPolymorphic, runtime::Tier::kBucketed, runtime::Tier::kStatic}) {
    result.compiles_by_tier[runtime::TierName(tier)] = 0;
  }
  for (runtime::RecompileTrigger trigger :
       {runtime::RecompileTrigger::kInitial, runtime::RecompileTrigger::kMiss, runtime::RecompileTrigger::kTierUp}) {
    result.compiles_by_trigger[runtime::RecompileTriggerName(trigger)] = 0;
  }
  for (const runtime::RecompileEvent& event : session.events()) {
    ++result.compiles_by_tier[runtime::TierName(event.new_tier)];
    ++result.compiles_by_trigger[runtime::RecompileTriggerName(event.trigger)];
    if (event.trigger == runtime::RecompileTrigger::kTierUp) ++result.tier_ups;
    result.compile_ms += event.compile_ms;
  }
}

}  // namespace

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t index = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

absl::StatusOr<ReplayResult> ReplayTrace(runtime::Session& session, const Graph& reference,
                                         const std::vector<InputRecipe>& recipes,
                                         const std::vector<Assignment>& trace, const ReplayOptions& options) {
  ReplayResult result;
  result.latency_us.reserve(trace.size());
  absl::flat_hash_set<int64_t> checked_entries;
  std::set<std::vector<int64_t>> shapes, buckets;
  const ShapeEnv& env = session.dispatcher().env();
  for (size_t i = 0; i < trace.size(); ++i) {
    const Assignment& request = trace[i];
    absl::StatusOr<std::vector<Tensor>> inputs = MakeInputs(recipes, request, options.seed + i);
    if (!inputs.ok()) {
      return absl::Status(inputs.status().code(), absl::StrCat("request ", i, " (", FormatRequest(request, env),
                                                               "): ", inputs.status().message()));
    }
    const std::vector<int64_t> values = SlotValues(session, request);
    shapes.insert(values);
    buckets.insert(BucketKey(env, session.dispatcher().slots(), values));
    int64_t entry = ServingEntry(session, values);

    Clock::time_point start = Clock::now();
    absl::StatusOr<std::vector<Tensor>> outputs = session.Run(*inputs);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    ++result.requests;
    if (i == 0) {
      result.first_request_us = us;
      result.first_result_us = options.setup_us + us;
      result.compiles_before_first_result = session.stats().dispatcher.compiles;
    }
    if (!outputs.ok()) {
      if (++result.errors == 1) {
        result.first_error = absl::StrCat("request ", i, " (", FormatRequest(request, env), "): ",
                                          outputs.status().message());
      }
      continue;
    }
    ++result.served;
    result.latency_us.push_back(us);

    if (entry == 0) entry = ServingEntry(session, values);  // this request compiled it
    const bool periodic = options.check_every > 0 && static_cast<int64_t>(i) % options.check_every == 0;
    const bool entry_first = options.check_every > 0 && checked_entries.insert(entry).second;
    if (!periodic && !entry_first) continue;
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(reference, *inputs);
    if (!expected.ok()) {
      return absl::Status(expected.status().code(),
                          absl::StrCat("interpreter on request ", i, " (", FormatRequest(request, env),
                                       "): ", expected.status().message()));
    }
    TensorComparison comparison = CompareTensorLists(*outputs, *expected);
    ++result.checked;
    result.max_abs_error = std::max(result.max_abs_error, comparison.max_abs_error);
    if (!comparison.agree && ++result.wrong_results == 1) {
      result.first_wrong = absl::StrFormat("request %d (%s) served by entry #%d: max abs error %.3g", i,
                                           FormatRequest(request, env), entry, comparison.max_abs_error);
    }
  }
  // Count the tier-ups the trace asked for, not only those that finished in time.
  session.WaitForTierUps();
  result.distinct_shapes = static_cast<int64_t>(shapes.size());
  result.buckets_with_traffic = static_cast<int64_t>(buckets.size());
  const runtime::SessionStats stats = session.stats();
  result.compiles = stats.dispatcher.compiles;
  result.misses = stats.dispatcher.misses;
  result.cache_loads = stats.dispatcher.cache_loads;
  result.limit_fallbacks = stats.dispatcher.limit_fallbacks;
  result.entries = static_cast<int64_t>(stats.entries);
  CountEvents(session, result);
  return result;
}

}  // namespace shapeshift::tools
