// CheckTiers: can each tier of the dispatcher compile this model — the
// polymorphic entry that `polymorphic` and `auto` compile first, a bucketed
// entry (`bucketed`, and `auto`'s tier-ups) and a static one (`static`, and
// `auto`'s tier-ups) — without compiling anything. Each tier's model is
// prepared exactly as CompileSpecializedEntry prepares it (PrepareTierModel:
// pins, bucket ranges, policies), then CheckProgram runs the passes and the
// lowering on it and names every node that has no lowering.
//
// Specialized tiers are checked at one representative request: every slot
// at 7 clipped to its declared range (an odd length, so remainder paths are
// part of the plan) and, for bucketed, that value's power-of-two bucket.
// A model whose lowering depends on the exact length can differ at other
// lengths; the polymorphic answer holds for the whole declared domain.
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_COMPILE_TIERS_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_COMPILE_TIERS_H_

#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/compile_check.h"
#include "runtime/specialization/policy.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

struct TierCheck {
  Tier tier = Tier::kPolymorphic;
  std::vector<SpecializationPolicy> policies;  // the --policy values whose compiles this answers for
  std::vector<int64_t> at;                     // slot values of the representative request (specialized tiers)
  ProgramCheck check;
};

// Value of each representative slot, in `slots` order.
std::vector<int64_t> RepresentativeRequest(const ShapeEnv& env, const std::vector<std::string>& slots);

// `model`/`env`: as imported (unoptimized, declared ranges); `slots`: the
// symbols a request binds, in binding order.
// `device`: whose lowering column and emitter answer (CheckProgram).
TierCheck CheckTier(const Graph& model, const ShapeEnv& env, const std::vector<std::string>& slots, Tier tier,
                    Device device = Device::kCpu);
// One TierCheck per tier: polymorphic, bucketed, static.
std::vector<TierCheck> CheckTiers(const Graph& model, const ShapeEnv& env, const std::vector<std::string>& slots,
                                  Device device = Device::kCpu);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_COMPILE_TIERS_H_
