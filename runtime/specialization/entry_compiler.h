// CompileSpecializedEntry: one compile of the model for one tier — the
// cloned graph and a fresh ShapeEnv set up for the tier, Program::Compile,
// then the guard set the new cache entry will be keyed by.
//
// Why a function of its own: the Dispatcher compiles entries for misses,
// for tier-ups (on its background thread) and when it re-creates the
// entries a persistent-cache manifest lists; all three must produce the
// same artifact and the same guards for the same EntrySpec, so the recipe
// lives in one place and depends on nothing but its arguments.
//
// The recipe per tier:
//  - polymorphic: the declared ranges, every symbol kPolymorphic; the
//    passes' questions that could not be proven stay unknown, so no guards.
//  - bucketed: each slot's declared range becomes its bucket (range analysis
//    in the passes and code generators proves bucket-bound facts without
//    recording them), policy kBucketed with the trigger as hint. The bucket
//    bounds are recorded first as guard atoms (provenance "dispatcher",
//    "power-of-two bucket 65..128 of seq"); they make the unrecorded
//    range facts sound, so they are never widened away (see README).
//  - static: the graph is rewritten with every slot pinned to its trigger
//    value (pin_dims.h), so lowering sees constant dims; the pins are the
//    first atoms (`seq == 37`, "static tier pins seq").
// Then Z3 drops implied atoms (pins and bucket bounds first, so the pass
// questions they imply are the ones dropped), every atom must hold at the
// trigger, and WidestInterval computes the interval of each slot around
// the trigger where all kept atoms hold (`serves`).
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_ENTRY_COMPILER_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_ENTRY_COMPILER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "runtime/compile_options.h"
#include "runtime/specialization/entry_spec.h"
#include "runtime/specialization/policy.h"
#include "runtime/specialization/specialization_cache.h"
#include "shapes/shape_env.h"
#include "shapes/z3_bridge.h"

namespace shapeshift::runtime {

struct CompiledEntry {
  // The requested tier, or polymorphic when no guard survived (the entry
  // then serves the whole domain, whatever it was asked to specialize to).
  Tier tier = Tier::kPolymorphic;
  std::vector<GuardAtom> guards;  // after DropImpliedAtoms
  std::vector<Interval> serves;   // per slot (see top of file)
  std::shared_ptr<SpecializedArtifact> artifact;
  double compile_ms = 0;  // Program::Compile wall time
};

// The first half of the recipe: the tier's copy of the model (pinned for
// static), its fresh ShapeEnv, and the dispatcher's own guard atoms (pins or
// bucket bounds), before any pass runs. CompileSpecializedEntry compiles it;
// CheckTiers (compile_tiers.h) checks it without compiling.
struct TierModel {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<ShapeEnv> env;
  std::vector<GuardAtom> guards;
};
absl::StatusOr<TierModel> PrepareTierModel(const Graph& model, const ShapeEnv& env,
                                           const std::vector<std::string>& slots, const EntrySpec& spec);

// `model`/`env`: the unoptimized model and its declared ranges; `slots`: the
// dispatcher's symbols in binding order. Errors: a failed compile (naming
// the tier and trigger), a contradictory guard set, or a guard false at the
// trigger (an internal error: never an entry).
absl::StatusOr<CompiledEntry> CompileSpecializedEntry(const Graph& model, const ShapeEnv& env,
                                                      const std::vector<std::string>& slots, const EntrySpec& spec,
                                                      const CompileOptions& options, Z3Bridge& z3);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_ENTRY_COMPILER_H_
