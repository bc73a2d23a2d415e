#include "runtime/specialization/policy.h"

#include "absl/strings/str_cat.h"

namespace shapeshift::runtime {

const char* SpecializationPolicyName(SpecializationPolicy policy) {
  switch (policy) {
    case SpecializationPolicy::kPolymorphic:
      return "polymorphic";
    case SpecializationPolicy::kBucketed:
      return "bucketed";
    case SpecializationPolicy::kStatic:
      return "static";
    case SpecializationPolicy::kAuto:
      return "auto";
  }
  return "?";
}

absl::StatusOr<SpecializationPolicy> ParseSpecializationPolicy(absl::string_view text) {
  for (SpecializationPolicy p : {SpecializationPolicy::kPolymorphic, SpecializationPolicy::kBucketed,
                                 SpecializationPolicy::kStatic, SpecializationPolicy::kAuto}) {
    if (text == SpecializationPolicyName(p)) return p;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown policy '", text, "' (expected polymorphic, bucketed, static or auto)"));
}

const char* TierName(Tier tier) {
  switch (tier) {
    case Tier::kPolymorphic:
      return "polymorphic";
    case Tier::kBucketed:
      return "bucketed";
    case Tier::kStatic:
      return "static";
  }
  return "?";
}

absl::StatusOr<Tier> ParseTier(absl::string_view text) {
  for (Tier t : {Tier::kPolymorphic, Tier::kBucketed, Tier::kStatic}) {
    if (text == TierName(t)) return t;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown tier '", text, "' (expected polymorphic, bucketed or static)"));
}

SymbolPolicy SymbolPolicyFor(Tier tier) {
  switch (tier) {
    case Tier::kPolymorphic:
      return SymbolPolicy::kPolymorphic;
    case Tier::kBucketed:
      return SymbolPolicy::kBucketed;
    case Tier::kStatic:
      return SymbolPolicy::kStatic;
  }
  return SymbolPolicy::kPolymorphic;
}

}  // namespace shapeshift::runtime
