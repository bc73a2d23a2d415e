#include "runtime/specialization/entry_compiler.h"

#include <chrono>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/specialization/generalize.h"
#include "runtime/specialization/pin_dims.h"

namespace shapeshift::runtime {
namespace {

std::string ValuesText(const std::vector<std::string>& slots, const std::vector<int64_t>& values) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < slots.size() && i < values.size(); ++i) parts.push_back(absl::StrCat(slots[i], "=", values[i]));
  return absl::StrJoin(parts, " ");
}

// The spec's shape must match the slots; an error says what is off.
absl::Status CheckSpec(const std::vector<std::string>& slots, const EntrySpec& spec) {
  if (spec.tier != Tier::kPolymorphic && spec.trigger.size() != slots.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a ", TierName(spec.tier), " entry needs one trigger value per slot (",
                                                   slots.size(), "), got ", spec.trigger.size()));
  }
  if (spec.tier == Tier::kBucketed && (spec.buckets.size() != slots.size() || spec.bucket_reasons.size() != slots.size())) {
    return absl::InvalidArgumentError(absl::StrCat("a bucketed entry needs one bucket per slot (", slots.size(), ")"));
  }
  for (size_t i = 0; i < spec.buckets.size() && i < spec.trigger.size(); ++i) {
    if (spec.trigger[i] < spec.buckets[i].lo || spec.trigger[i] > spec.buckets[i].hi) {
      return absl::InvalidArgumentError(absl::StrCat("bucket ", spec.buckets[i].lo, "..", spec.buckets[i].hi, " of ",
                                                     slots[i], " does not hold the trigger value ", spec.trigger[i]));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TierModel> PrepareTierModel(const Graph& model, const ShapeEnv& env,
                                           const std::vector<std::string>& slots, const EntrySpec& spec) {
  if (absl::Status s = CheckSpec(slots, spec); !s.ok()) return s;
  const bool specialized = spec.tier != Tier::kPolymorphic;
  std::map<std::string, size_t> slot_of;
  for (size_t i = 0; i < slots.size(); ++i) slot_of[slots[i]] = i;

  // The tier's own copy of the model and its env; the dispatcher's records
  // are guards too, placed first.
  TierModel out;
  out.graph = model.Clone();
  out.env = std::make_unique<ShapeEnv>();
  std::map<std::string, int64_t> pins;
  for (SymbolInfo info : env.symbols()) {
    info.policy = SymbolPolicyFor(spec.tier);
    auto slot = slot_of.find(info.name);
    if (specialized && slot != slot_of.end()) {
      const int64_t value = spec.trigger[slot->second];
      const SymExpr symbol = SymExpr::Symbol(info.name);
      info.hint = value;
      if (spec.tier == Tier::kStatic) {
        info.min = info.max = value;
        pins[info.name] = value;
        out.guards.push_back({Predicate::Eq(symbol, SymExpr(value)),
                              Provenance{"dispatcher", "", absl::StrCat("static tier pins ", info.name)}});
      } else {
        const Bucket& b = spec.buckets[slot->second];
        info.min = b.lo;
        info.max = b.hi;
        const Provenance why{"dispatcher", "", spec.bucket_reasons[slot->second]};
        out.guards.push_back({Predicate::Ge(symbol, SymExpr(b.lo)), why});
        out.guards.push_back({Predicate::Le(symbol, SymExpr(b.hi)), why});
      }
    }
    absl::StatusOr<SymExpr> declared = out.env->DeclareSymbol(info);
    if (!declared.ok()) return declared.status();
  }
  // The model's relations between dims (domain facts, not guards: every
  // request the dispatcher binds meets them).
  if (absl::Status s = out.env->CopyDomainConstraintsFrom(env); !s.ok()) return s;
  if (!pins.empty()) {
    if (absl::Status s = PinDims(*out.graph, pins); !s.ok()) return s;
  }
  return out;
}

absl::StatusOr<CompiledEntry> CompileSpecializedEntry(const Graph& model, const ShapeEnv& env,
                                                      const std::vector<std::string>& slots, const EntrySpec& spec,
                                                      const CompileOptions& options, Z3Bridge& z3) {
  absl::StatusOr<TierModel> tier_model = PrepareTierModel(model, env, slots, spec);
  if (!tier_model.ok()) return tier_model.status();
  auto artifact = std::make_shared<SpecializedArtifact>();
  artifact->graph = std::move(tier_model->graph);
  artifact->env = std::move(tier_model->env);
  std::vector<GuardAtom> guards = std::move(tier_model->guards);

  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<Program>> program = Program::Compile(*artifact->graph, *artifact->env, options);
  const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!program.ok()) {
    const std::string values = ValuesText(slots, spec.trigger);  // empty for the polymorphic entry
    return absl::Status(program.status().code(),
                        absl::StrCat("compiling a ", TierName(spec.tier), " entry",
                                     values.empty() ? "" : absl::StrCat(" for ", values), ": ",
                                     program.status().message()));
  }
  artifact->program = *std::move(program);

  for (const GuardAtom& g : artifact->env->guards()) guards.push_back(g);
  absl::StatusOr<std::vector<GuardAtom>> kept = DropImpliedAtoms(env.DomainPredicate(), std::move(guards), z3);
  if (!kept.ok()) return kept.status();
  Assignment at;
  for (size_t i = 0; i < spec.trigger.size(); ++i) at[slots[i]] = spec.trigger[i];
  for (const GuardAtom& g : *kept) {
    absl::StatusOr<bool> holds = g.predicate.Evaluate(at);
    if (!at.empty() && (!holds.ok() || !*holds)) {
      return absl::InternalError(absl::StrCat("the ", TierName(spec.tier), " compile for ",
                                              ValuesText(slots, spec.trigger),
                                              " recorded a guard that rejects that input: ", g.predicate.ToString(),
                                              " [asked by ", ProvenanceText(g.provenance), "]"));
    }
  }

  CompiledEntry out;
  out.tier = kept->empty() ? Tier::kPolymorphic : spec.tier;
  std::vector<Interval> ranges;
  for (const std::string& slot : slots) {
    const SymbolInfo* info = env.FindSymbol(slot);
    ranges.push_back({info->min, info->max});
  }
  out.serves = ServedIntervals(*kept, slots, spec.trigger, ranges, z3);
  out.guards = *std::move(kept);
  out.artifact = std::move(artifact);
  out.compile_ms = compile_ms;
  return out;
}

}  // namespace shapeshift::runtime
