#include "runtime/specialization/compile_tiers.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/specialization/bucket.h"
#include "runtime/specialization/entry_compiler.h"

namespace shapeshift::runtime {
namespace {

constexpr int64_t kRepresentativeLength = 7;

TierCheck CheckSpec(const Graph& model, const ShapeEnv& env, const std::vector<std::string>& slots,
                    const EntrySpec& spec, std::vector<SpecializationPolicy> policies, Device device) {
  TierCheck out;
  out.tier = spec.tier;
  out.policies = std::move(policies);
  out.at = spec.trigger;
  absl::StatusOr<TierModel> tier_model = PrepareTierModel(model, env, slots, spec);
  if (!tier_model.ok()) {
    out.check.problems.push_back({"", "", absl::StrCat("preparing the ", TierName(spec.tier), " tier: ",
                                                       tier_model.status().message())});
    return out;
  }
  out.check = CheckProgram(*tier_model->graph, *tier_model->env, device);
  return out;
}

}  // namespace

std::vector<int64_t> RepresentativeRequest(const ShapeEnv& env, const std::vector<std::string>& slots) {
  std::vector<int64_t> values;
  for (const std::string& name : slots) {
    const SymbolInfo* info = env.FindSymbol(name);
    values.push_back(info == nullptr ? kRepresentativeLength
                                     : std::clamp(kRepresentativeLength, info->min, info->max));
  }
  return values;
}

TierCheck CheckTier(const Graph& model, const ShapeEnv& env, const std::vector<std::string>& slots, Tier tier,
                    Device device) {
  using P = SpecializationPolicy;
  if (tier == Tier::kPolymorphic) return CheckSpec(model, env, slots, EntrySpec{}, {P::kPolymorphic, P::kAuto}, device);
  const std::vector<int64_t> at = RepresentativeRequest(env, slots);
  if (tier == Tier::kStatic) return CheckSpec(model, env, slots, EntrySpec{Tier::kStatic, at, {}, {}}, {P::kStatic, P::kAuto}, device);
  EntrySpec bucketed{Tier::kBucketed, at, {}, {}};
  std::vector<SymbolInfo> symbols;
  for (const std::string& name : slots) {
    const SymbolInfo* info = env.FindSymbol(name);
    symbols.push_back(info != nullptr ? *info : SymbolInfo{});
  }
  BucketScheme scheme(BucketOptions{}, symbols);
  for (size_t i = 0; i < slots.size(); ++i) {
    Bucket b = scheme.BucketOf(i, at[i]);
    bucketed.buckets.push_back(b);
    bucketed.bucket_reasons.push_back(scheme.Describe(i, b));
  }
  return CheckSpec(model, env, slots, bucketed, {P::kBucketed, P::kAuto}, device);
}

std::vector<TierCheck> CheckTiers(const Graph& model, const ShapeEnv& env, const std::vector<std::string>& slots,
                                  Device device) {
  std::vector<TierCheck> out;
  for (Tier tier : {Tier::kPolymorphic, Tier::kBucketed, Tier::kStatic}) {
    out.push_back(CheckTier(model, env, slots, tier, device));
  }
  return out;
}

}  // namespace shapeshift::runtime
