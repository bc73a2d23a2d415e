// SpecializationMetrics: what a serving process wants on a dashboard about
// its compiled artifacts — hit rate, compiles by tier and trigger, compile
// and guard-evaluation time, first-request latency, tier-ups, limit
// fallbacks, persistent-cache loads — as one plain struct, rendered as text
// or in the Prometheus text exposition format.
//
// Why: "recompilation is rare and cheap" must be observable in production,
// not only in tests. The names of the Prometheus series are a public
// interface (dashboards and alerts key on them): keep them stable.
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_METRICS_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_METRICS_H_

#include <cstdint>
#include <string>

namespace shapeshift::runtime {

struct SpecializationMetrics {
  int64_t requests = 0;  // requests dispatched (bound and served an entry, or failed at the limit)
  int64_t hits = 0;      // requests an entry served without waiting for a compile
  double hit_rate = 0;   // hits / requests (0 when no request)
  int64_t misses = 0;    // compiles triggered by a request no entry served
  // Compiles of each kind (cache loads are not compiles).
  int64_t compiles = 0;
  int64_t compiles_polymorphic = 0;  // by the new entry's tier
  int64_t compiles_bucketed = 0;
  int64_t compiles_static = 0;
  int64_t compiles_initial = 0;  // by trigger
  int64_t compiles_miss = 0;
  int64_t compiles_tier_up = 0;
  double compile_ms_total = 0;
  double guard_eval_ms_total = 0;   // time spent finding the entry (bind excluded), all requests
  double first_request_ms = 0;      // latency of the first request (its compile included); 0 before it
  int64_t tier_ups = 0;             // tier-up compiles the cost model asked for
  int64_t tier_ups_reverted = 0;    // tier-ups removed for measuring no gain
  int64_t limit_fallbacks = 0;      // requests served by the polymorphic entry at the recompile limit
  int64_t limit_errors = 0;         // requests refused at the recompile limit
  int64_t entries = 0;              // artifacts in the cache now
  int64_t cache_loads = 0;          // entries re-created from the persistent cache
  int64_t cache_errors = 0;         // corrupted / unreadable persistent-cache manifests (ignored, rebuilt)
  int64_t llvm_compiles = 0;        // kernels LLVM compiled (0 when every object came from a store)
  // The remote compile cache (runtime/persist/remote_cache.h); 0 when off.
  int64_t remote_loads = 0;         // entries another replica compiled, re-created here
  int64_t remote_waits = 0;         // compiles waited for on another replica's lease
  int64_t remote_wait_timeouts = 0; // waits that ran out (compiled here instead)
  int64_t remote_hits = 0;          // values read and verified
  int64_t remote_misses = 0;        // lookups that found nothing usable (refused included)
  int64_t remote_refused = 0;       // unsigned / badly signed / truncated / misfiled values
  int64_t remote_errors = 0;        // connection failures, timeouts, error replies (e.g. server full)
  int64_t remote_too_large = 0;     // writes skipped for the entry size limit
  int64_t remote_bytes_read = 0;
  int64_t remote_bytes_written = 0;
};

// One `name value` line per field, in the order above.
std::string FormatMetricsText(const SpecializationMetrics& m);
// Prometheus text exposition format (# HELP / # TYPE, then samples):
// shapeshift_requests_total, shapeshift_cache_hits_total,
// shapeshift_cache_hit_ratio, shapeshift_misses_total,
// shapeshift_compiles_total{tier="polymorphic|bucketed|static"},
// shapeshift_compiles_by_trigger_total{trigger="initial|miss|tier-up"},
// shapeshift_compile_seconds_total, shapeshift_guard_eval_seconds_total,
// shapeshift_first_request_seconds, shapeshift_tier_ups_total,
// shapeshift_tier_ups_reverted_total, shapeshift_limit_fallbacks_total,
// shapeshift_limit_errors_total, shapeshift_cache_entries,
// shapeshift_cache_loads_total, shapeshift_cache_errors_total,
// shapeshift_llvm_compiles_total, shapeshift_remote_loads_total,
// shapeshift_remote_waits_total, shapeshift_remote_wait_timeouts_total,
// shapeshift_remote_hits_total, shapeshift_remote_misses_total,
// shapeshift_remote_refused_total, shapeshift_remote_errors_total,
// shapeshift_remote_too_large_total,
// shapeshift_remote_bytes_total{direction="read|written"}.
std::string FormatMetricsPrometheus(const SpecializationMetrics& m);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_METRICS_H_
