#include "tools/prove_report.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/device/cuda_graphs.h"
#include "runtime/program.h"
#include "runtime/specialization/policy.h"

namespace shapeshift::tools {

nlohmann::ordered_json CoverageVerdictJson(const CoverageResult& r, const ShapeEnv& env) {
  nlohmann::ordered_json out;
  out["covered"] = r.verdict == Verdict::kProven;
  out["witness"] = nullptr;
  if (r.verdict == Verdict::kRefuted) {
    out["witness"] = nlohmann::ordered_json::object();
    for (const SymbolInfo& s : env.symbols()) out["witness"][s.name] = r.witness.at(s.name);
  }
  if (r.verdict == Verdict::kUnknown) out["unknown"] = r.detail;
  return out;
}

nlohmann::ordered_json DomainJson(const ShapeEnv& env) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const SymbolInfo& s : env.symbols()) out[s.name] = absl::StrCat(s.min, "..", s.max);
  return out;
}

nlohmann::ordered_json DomainRelationsJson(const ShapeEnv& env) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const DomainConstraint& c : env.domain_constraints()) out.push_back(c.predicate.ToString());
  return out;
}

nlohmann::ordered_json EntriesJson(const runtime::SpecializationCache& cache, Z3Bridge& z3) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const std::shared_ptr<const runtime::CacheEntry>& e : cache.entries()) {
    std::vector<std::string> guards;
    for (const GuardAtom& g : e->guards) guards.push_back(g.predicate.ToString());
    nlohmann::ordered_json entry = {{"id", e->id}, {"tier", runtime::TierName(e->tier)}, {"guards", guards}};
    // --device cuda: the entry's CUDA graph buckets, their guard atoms with
    // provenance, and Z3's verdict that they cover the symbol's range.
    if (const runtime::CudaGraphPlan* plan = e->artifact->program->cuda_graph_plan(); plan != nullptr) {
      nlohmann::ordered_json graphs = {{"enabled", plan->enabled}};
      if (!plan->enabled) graphs["reason"] = plan->disabled_reason;
      if (plan->enabled) {
        graphs["symbol"] = plan->symbol;
        graphs["buckets"] = nlohmann::ordered_json::array();
        for (const runtime::Bucket& b : runtime::AllBuckets(*plan)) {
          std::vector<std::string> atoms;
          for (const GuardAtom& a : plan->BucketGuards(b)) atoms.push_back(a.predicate.ToString());
          graphs["buckets"].push_back({{"lo", b.lo}, {"hi", b.hi}, {"guards", atoms},
                                       {"provenance", absl::StrCat("dispatcher: ", plan->Describe(b))}});
        }
        CoverageResult c = runtime::ProveBucketCoverage(*plan, z3);
        graphs["coverage"] = VerdictName(c.verdict);
      }
      entry["cuda_graphs"] = graphs;
    }
    entries.push_back(entry);
  }
  return entries;
}

}  // namespace shapeshift::tools
