#include "runtime/specialization/metrics.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace shapeshift::runtime {
namespace {

// One metric family: its # HELP and # TYPE lines, then its samples.
class Exposition {
 public:
  void Family(const char* name, const char* type, const char* help) {
    absl::StrAppend(&out_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
  }
  void Sample(const char* name, double value, const std::string& labels = "") {
    absl::StrAppend(&out_, name, labels.empty() ? "" : absl::StrCat("{", labels, "}"), " ",
                    absl::StrFormat("%.15g", value), "\n");
  }
  void Single(const char* name, const char* type, const char* help, double value) {
    Family(name, type, help);
    Sample(name, value);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

std::string FormatMetricsText(const SpecializationMetrics& m) {
  std::string out;
  auto line = [&out](const char* name, auto value) { absl::StrAppend(&out, name, " ", value, "\n"); };
  line("requests", m.requests);
  line("hits", m.hits);
  line("hit_rate", absl::StrFormat("%.4f", m.hit_rate));
  line("misses", m.misses);
  line("compiles", m.compiles);
  line("compiles_polymorphic", m.compiles_polymorphic);
  line("compiles_bucketed", m.compiles_bucketed);
  line("compiles_static", m.compiles_static);
  line("compiles_initial", m.compiles_initial);
  line("compiles_miss", m.compiles_miss);
  line("compiles_tier_up", m.compiles_tier_up);
  line("compile_ms_total", absl::StrFormat("%.3f", m.compile_ms_total));
  line("guard_eval_ms_total", absl::StrFormat("%.3f", m.guard_eval_ms_total));
  line("first_request_ms", absl::StrFormat("%.3f", m.first_request_ms));
  line("tier_ups", m.tier_ups);
  line("tier_ups_reverted", m.tier_ups_reverted);
  line("limit_fallbacks", m.limit_fallbacks);
  line("limit_errors", m.limit_errors);
  line("entries", m.entries);
  line("cache_loads", m.cache_loads);
  line("cache_errors", m.cache_errors);
  line("llvm_compiles", m.llvm_compiles);
  line("remote_loads", m.remote_loads);
  line("remote_waits", m.remote_waits);
  line("remote_wait_timeouts", m.remote_wait_timeouts);
  line("remote_hits", m.remote_hits);
  line("remote_misses", m.remote_misses);
  line("remote_refused", m.remote_refused);
  line("remote_errors", m.remote_errors);
  line("remote_too_large", m.remote_too_large);
  line("remote_bytes_read", m.remote_bytes_read);
  line("remote_bytes_written", m.remote_bytes_written);
  return out;
}

std::string FormatMetricsPrometheus(const SpecializationMetrics& m) {
  Exposition e;
  e.Single("shapeshift_requests_total", "counter", "Requests dispatched.", m.requests);
  e.Single("shapeshift_cache_hits_total", "counter", "Requests served by a compiled entry without waiting for a compile.",
           m.hits);
  e.Single("shapeshift_cache_hit_ratio", "gauge", "Hits divided by requests.", m.hit_rate);
  e.Single("shapeshift_misses_total", "counter", "Compiles triggered by a request no entry served.", m.misses);
  e.Family("shapeshift_compiles_total", "counter", "Compiles by the tier of the entry they produced.");
  e.Sample("shapeshift_compiles_total", m.compiles_polymorphic, "tier=\"polymorphic\"");
  e.Sample("shapeshift_compiles_total", m.compiles_bucketed, "tier=\"bucketed\"");
  e.Sample("shapeshift_compiles_total", m.compiles_static, "tier=\"static\"");
  e.Family("shapeshift_compiles_by_trigger_total", "counter", "Compiles by what triggered them.");
  e.Sample("shapeshift_compiles_by_trigger_total", m.compiles_initial, "trigger=\"initial\"");
  e.Sample("shapeshift_compiles_by_trigger_total", m.compiles_miss, "trigger=\"miss\"");
  e.Sample("shapeshift_compiles_by_trigger_total", m.compiles_tier_up, "trigger=\"tier-up\"");
  e.Single("shapeshift_compile_seconds_total", "counter", "Time spent compiling entries.", m.compile_ms_total / 1e3);
  e.Single("shapeshift_guard_eval_seconds_total", "counter", "Time spent evaluating guards to find each request's entry.",
           m.guard_eval_ms_total / 1e3);
  e.Single("shapeshift_first_request_seconds", "gauge", "Latency of the first request, its compile included.",
           m.first_request_ms / 1e3);
  e.Single("shapeshift_tier_ups_total", "counter", "Background specializations the cost model asked for.", m.tier_ups);
  e.Single("shapeshift_tier_ups_reverted_total", "counter", "Tier-ups removed because they measured no speed-up.",
           m.tier_ups_reverted);
  e.Single("shapeshift_limit_fallbacks_total", "counter",
           "Requests served by the polymorphic entry because the recompile limit was reached.", m.limit_fallbacks);
  e.Single("shapeshift_limit_errors_total", "counter", "Requests refused at the recompile limit.", m.limit_errors);
  e.Single("shapeshift_cache_entries", "gauge", "Compiled entries in the specialization cache.", m.entries);
  e.Single("shapeshift_cache_loads_total", "counter", "Entries re-created from the persistent cache instead of compiled.",
           m.cache_loads);
  e.Single("shapeshift_cache_errors_total", "counter", "Persistent-cache manifests found corrupted and rebuilt.",
           m.cache_errors);
  e.Single("shapeshift_llvm_compiles_total", "counter", "Kernels LLVM compiled (not found in any store).",
           m.llvm_compiles);
  e.Single("shapeshift_remote_loads_total", "counter", "Entries another replica compiled, re-created from the remote cache.",
           m.remote_loads);
  e.Single("shapeshift_remote_waits_total", "counter", "Compiles waited for because another replica held the lease.",
           m.remote_waits);
  e.Single("shapeshift_remote_wait_timeouts_total", "counter", "Waits for another replica that ran out.",
           m.remote_wait_timeouts);
  e.Single("shapeshift_remote_hits_total", "counter", "Remote-cache values read and verified.", m.remote_hits);
  e.Single("shapeshift_remote_misses_total", "counter", "Remote-cache lookups that found nothing usable.",
           m.remote_misses);
  e.Single("shapeshift_remote_refused_total", "counter",
           "Remote-cache values refused: unsigned, badly signed, truncated or stored under another key.",
           m.remote_refused);
  e.Single("shapeshift_remote_errors_total", "counter", "Remote-cache connection failures, timeouts and error replies.",
           m.remote_errors);
  e.Single("shapeshift_remote_too_large_total", "counter", "Remote-cache writes skipped for the entry size limit.",
           m.remote_too_large);
  e.Family("shapeshift_remote_bytes_total", "counter", "Payload bytes moved to and from the remote cache.");
  e.Sample("shapeshift_remote_bytes_total", static_cast<double>(m.remote_bytes_read), "direction=\"read\"");
  e.Sample("shapeshift_remote_bytes_total", static_cast<double>(m.remote_bytes_written), "direction=\"written\"");
  return e.Take();
}

}  // namespace shapeshift::runtime
