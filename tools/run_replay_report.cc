#include "tools/run_replay_report.h"

#include <cstdio>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/tensor_compare.h"
#include "tools/terminal_text.h"

namespace shapeshift::tools {
namespace {

std::string Counts(const nlohmann::ordered_json& counts) {
  std::vector<std::string> parts;
  for (const auto& [name, n] : counts.items()) parts.push_back(absl::StrCat(name, " ", n.get<int64_t>()));
  return absl::StrJoin(parts, ", ");
}

}  // namespace

nlohmann::ordered_json ReplayReportJson(const ReplaySetup& setup, const ReplayResult& result) {
  nlohmann::ordered_json r;
  r["model"] = setup.model;
  r["policy"] = setup.policy;
  r["trace"] = setup.trace;
  r["requests"] = result.requests;
  r["served"] = result.served;
  r["errors"] = result.errors;
  if (!result.first_error.empty()) r["first_error"] = result.first_error;
  r["distinct_shapes"] = result.distinct_shapes;
  r["buckets_with_traffic"] = result.buckets_with_traffic;
  r["compiles"] = result.compiles;
  r["compiles_by_tier"] = result.compiles_by_tier;
  r["compiles_by_trigger"] = result.compiles_by_trigger;
  r["cache_loads"] = result.cache_loads;
  r["cache_dir"] = setup.cache_dir;
  r["misses"] = result.misses;
  r["tier_ups"] = result.tier_ups;
  r["limit_fallbacks"] = result.limit_fallbacks;
  r["entries"] = result.entries;
  r["compile_ms"] = result.compile_ms;
  r["checked"] = result.checked;
  r["wrong_results"] = result.wrong_results;
  r["max_abs_error"] = result.max_abs_error;
  if (!result.first_wrong.empty()) r["first_wrong"] = result.first_wrong;
  r["check_every"] = setup.check_every;
  r["check_rtol"] = kDefaultTolerance.rtol;
  r["check_atol"] = kDefaultTolerance.atol;
  r["p50_us"] = Percentile(result.latency_us, 0.5);
  r["p99_us"] = Percentile(result.latency_us, 0.99);
  double total = 0;
  for (double us : result.latency_us) total += us;
  r["mean_us"] = result.latency_us.empty() ? 0.0 : total / static_cast<double>(result.latency_us.size());
  r["first_request_us"] = result.first_request_us;
  r["first_result_us"] = result.first_result_us;
  r["compiles_before_first_result"] = result.compiles_before_first_result;
  // The peer benchmarks' trace schema (bench/peers/shapeshift_bench.py):
  // engine time = session creation + every Run; recompiles = misses.
  // Loading counts: a peer's session creation reads the model file too.
  r["load_ms"] = setup.load_us / 1e3;
  r["create_ms"] = setup.create_us / 1e3;
  r["engine_s"] = (setup.load_us + setup.create_us + total) / 1e6;
  r["requests_s"] = total / 1e6;
  r["time_to_first_result_s"] = result.first_result_us / 1e6;
  r["recompiles"] = result.misses;
  r["per_request"] = {{"median_ms", Percentile(result.latency_us, 0.5) / 1e3},
                      {"p99_ms", Percentile(result.latency_us, 0.99) / 1e3},
                      {"max_ms", Percentile(result.latency_us, 1.0) / 1e3}};
  r["seed"] = setup.seed;
  return r;
}

void PrintReplayReport(const nlohmann::ordered_json& r) {
  const int64_t check_every = r["check_every"].get<int64_t>();
  auto n = [&](const char* key) { return static_cast<long long>(r[key].get<int64_t>()); };
  // Paths, specs and error messages (which quote the model's names) are
  // printed escaped.
  auto text = [&](const char* key) { return Escaped(r[key].get<std::string>()); };
  std::printf("model: %s (policy %s)\n", text("model").c_str(), r["policy"].get<std::string>().c_str());
  std::printf("trace: %s — %lld request(s), %lld distinct shape(s) in %lld power-of-two bucket(s), %lld served, "
              "%lld refused\n",
              text("trace").c_str(), n("requests"), n("distinct_shapes"), n("buckets_with_traffic"),
              n("served"), n("errors"));
  if (r.contains("first_error")) std::printf("  first refusal: %s\n", text("first_error").c_str());
  std::printf("compiles: %lld (by tier: %s; by trigger: %s), %.1f ms compiling\n", n("compiles"),
              Counts(r["compiles_by_tier"]).c_str(), Counts(r["compiles_by_trigger"]).c_str(),
              r["compile_ms"].get<double>());
  const std::string cache_dir = text("cache_dir");
  std::printf("misses: %lld, tier-ups: %lld, limit fallbacks: %lld, cache entries at the end: %lld (%s)\n",
              n("misses"), n("tier_ups"), n("limit_fallbacks"), n("entries"),
              cache_dir.empty() ? "no persistent cache"
                                : absl::StrCat(n("cache_loads"), " loaded from ", cache_dir).c_str());
  std::printf("first result: %.0f us after start (%lld compile(s) before it; the request itself took %.0f us)\n",
              r["first_result_us"].get<double>(), n("compiles_before_first_result"),
              r["first_request_us"].get<double>());
  std::printf("latency: p50 %.0f us, p99 %.0f us, mean %.0f us\n", r["p50_us"].get<double>(),
              r["p99_us"].get<double>(), r["mean_us"].get<double>());
  if (check_every == 0) {
    std::printf("check: none (--check-every 0)\n");
  } else {
    std::printf("check: %lld request(s) vs the interpreter (every %lldth + each entry's first; rtol %g, atol %g): "
                "%lld wrong, max abs error %.3g\n",
                n("checked"), static_cast<long long>(check_every), kDefaultTolerance.rtol, kDefaultTolerance.atol, n("wrong_results"),
                r["max_abs_error"].get<double>());
  }
  if (r.contains("first_wrong")) std::printf("  first wrong: %s\n", text("first_wrong").c_str());
}

}  // namespace shapeshift::tools
