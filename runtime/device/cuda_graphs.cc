#include "runtime/device/cuda_graphs.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "shapes/predicate.h"

namespace shapeshift::runtime {

bool Mentions(SymExpr e, const std::string& symbol) { return e.Symbols().contains(symbol); }

Bucket CudaGraphPlan::BucketOf(int64_t value) const { return buckets->BucketOf(symbol_slot, value); }

std::string CudaGraphPlan::Describe(const Bucket& bucket) const {
  return absl::StrCat("CUDA graph ", bucket.learned ? "learned " : "", "bucket ", bucket.lo, "..", bucket.hi, " of ",
                      symbol);
}

std::vector<GuardAtom> CudaGraphPlan::BucketGuards(const Bucket& bucket) const {
  SymExpr s = SymExpr::Symbol(symbol);
  Provenance p{"dispatcher", "", Describe(bucket)};
  return {GuardAtom{Predicate::Le(SymExpr(bucket.lo), s), p}, GuardAtom{Predicate::Le(s, SymExpr(bucket.hi)), p}};
}

absl::StatusOr<GuardProgram> CompileBucketGuards(const CudaGraphPlan& plan, const Bucket& bucket) {
  std::vector<Predicate> atoms;
  for (const GuardAtom& a : plan.BucketGuards(bucket)) atoms.push_back(a.predicate);
  return GuardProgram::Compile(atoms, plan.symbols);
}

std::vector<Bucket> AllBuckets(const CudaGraphPlan& plan) {
  std::vector<Bucket> buckets;
  if (!plan.enabled) return buckets;
  for (int64_t v = plan.min; v <= plan.max;) {
    Bucket b = plan.BucketOf(v);
    buckets.push_back(b);
    if (b.hi < v || b.hi == plan.max) break;  // (a learned bucket may end before v)
    v = b.hi + 1;
  }
  return buckets;
}

CoverageResult ProveBucketCoverage(const CudaGraphPlan& plan, Z3Bridge& z3) {
  SymExpr s = SymExpr::Symbol(plan.symbol);
  Predicate domain = Predicate::And({Predicate::Le(SymExpr(plan.min), s), Predicate::Le(s, SymExpr(plan.max))});
  std::vector<std::vector<Predicate>> sets;
  for (const Bucket& b : AllBuckets(plan)) {
    std::vector<Predicate> atoms;
    for (const GuardAtom& a : plan.BucketGuards(b)) atoms.push_back(a.predicate);
    sets.push_back(std::move(atoms));
  }
  return z3.Coverage(domain, sets);
}

CudaGraphPlan PlanCudaGraphs(const ShapeEnv& env, const std::vector<std::string>& bound_symbols,
                             const std::string& wanted, bool enabled, bool learned_buckets, int capture_after,
                             const std::vector<PaddedSize>& sizes) {
  CudaGraphPlan plan;
  plan.symbols = bound_symbols;
  plan.capture_after = std::max(1, capture_after);
  if (!enabled) {
    plan.disabled_reason = "CUDA graphs are turned off";
    return plan;
  }
  // The symbol: the one asked for, else the widest dynamic range.
  const SymbolInfo* chosen = nullptr;
  for (size_t slot = 0; slot < bound_symbols.size(); ++slot) {
    const SymbolInfo* info = env.FindSymbol(bound_symbols[slot]);
    if (info == nullptr) continue;
    bool better = wanted.empty() ? info->max > info->min && (chosen == nullptr ||
                                                              info->max - info->min > chosen->max - chosen->min)
                                 : info->name == wanted;
    if (better) {
      chosen = info;
      plan.symbol_slot = static_cast<int>(slot);
    }
  }
  if (chosen == nullptr) {
    plan.disabled_reason = wanted.empty() ? "the model has no dynamic symbol: one direct run is all a graph would save"
                                          : absl::StrCat("'", wanted, "' is not a symbol bound by the model's inputs");
    return plan;
  }
  plan.symbol = chosen->name;
  plan.min = chosen->min;
  plan.max = chosen->max;
  // Every padded size must not shrink when the symbol grows: then the
  // layout at the bucket's upper bound holds every request of the bucket.
  // Asked of a scratch environment (same symbols and ranges, plus the
  // bound), so the program's own records are untouched.
  ShapeEnv scratch;
  for (const SymbolInfo& s : env.symbols()) {
    SymbolInfo copy = s;
    copy.hint.reset();
    copy.policy = SymbolPolicy::kPolymorphic;
    (void)scratch.DeclareSymbol(copy);
  }
  const std::string upper_name = plan.symbol + "__graph_upper";
  SymbolInfo bound;
  bound.name = upper_name;
  bound.min = plan.min;
  bound.max = plan.max;
  absl::StatusOr<SymExpr> upper = scratch.DeclareSymbol(bound);
  if (!upper.ok()) {
    plan.disabled_reason = absl::StrCat("cannot state the bound: ", upper.status().message());
    return plan;
  }
  SymExpr s = SymExpr::Symbol(plan.symbol);
  ShapeEnv::Scope below = scratch.Assume(Predicate::Le(s, *upper));
  absl::flat_hash_set<SymExpr> proven;
  for (const PaddedSize& size : sizes) {
    if (!Mentions(size.size, plan.symbol) || proven.contains(size.size)) continue;
    SymExpr at_upper = size.size.Substitute({{plan.symbol, *upper}});
    if (!scratch.CanProve(Predicate::Le(size.size, at_upper))) {
      plan.disabled_reason = absl::StrCat(size.what, " (", size.size.ToString(), ") is not provably non-decreasing in ",
                                          plan.symbol, ", so a graph placed for a bucket's largest ", plan.symbol,
                                          " might not hold a smaller one");
      return plan;
    }
    proven.insert(size.size);
  }
  plan.proven_sizes = static_cast<int64_t>(proven.size());
  std::vector<SymbolInfo> infos;
  for (const std::string& name : bound_symbols) {
    const SymbolInfo* info = env.FindSymbol(name);
    SymbolInfo unknown;
    unknown.name = name;
    unknown.min = unknown.max = 0;
    infos.push_back(info ? *info : unknown);
  }
  BucketOptions options;
  options.kind = learned_buckets ? BucketKind::kLearned : BucketKind::kPowersOfTwo;
  plan.buckets = std::make_shared<BucketScheme>(options, infos);
  plan.enabled = true;
  return plan;
}

}  // namespace shapeshift::runtime
