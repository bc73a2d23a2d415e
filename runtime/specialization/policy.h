// Specialization policy and tiers: how eagerly a model is specialized to the
// shapes it actually sees.
//
// Why a policy at all: the polymorphic artifact serves the whole declared
// domain with one compile, but a specialized artifact (a bucket of lengths,
// or one exact shape) can be faster because its passes and code generators
// may answer shape questions from the bucket's facts. The policy lets users
// and tests force each behaviour; `static` reproduces a static-shape
// compiler (one artifact per distinct shape) so the recompile storm it
// causes can be measured and explained.
//
// Kept free of CLI code: tools/ parses `--policy` with ParseSpecializationPolicy.
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_POLICY_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_POLICY_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

// What the dispatcher compiles when no entry serves a request.
enum class SpecializationPolicy {
  kPolymorphic,  // one artifact for the whole domain; never specialize
  kBucketed,     // artifacts specialized to buckets of the trigger shape
  kStatic,       // one artifact per distinct shape (every dim pinned)
  kAuto,         // polymorphic first; tier-ups decided by the cost model
};

// What one compiled artifact is specialized to; the dispatcher tries
// entries most specific first (static, then bucketed, then polymorphic).
enum class Tier {
  kPolymorphic,
  kBucketed,
  kStatic,
};

const char* SpecializationPolicyName(SpecializationPolicy policy);
// "polymorphic" | "bucketed" | "static" | "auto"; an error names the text
// and the accepted values.
absl::StatusOr<SpecializationPolicy> ParseSpecializationPolicy(absl::string_view text);

const char* TierName(Tier tier);
absl::StatusOr<Tier> ParseTier(absl::string_view text);

// The ShapeEnv symbol policy a compile of `tier` gives every dynamic symbol.
SymbolPolicy SymbolPolicyFor(Tier tier);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_POLICY_H_
