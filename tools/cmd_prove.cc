// `shapeshift prove`: does a set of guard sets cover a declared shape
// domain? Each `--guards` is one artifact's guard set (a conjunction); the
// domain is the box of `--dim name=lo..hi` ranges. Z3 either proves every
// point of the domain passes some guard set (exit 0, `covered`) or returns a
// real point that passes none (exit 1, `uncovered: batch=3 seq=130`), which
// is exactly the shape that would still trigger a recompile.
//
// Two forms. The guard-text form (`--guards` present): each `--guards` is
// one guard set given as text. The model form (`shapeshift prove MODEL
// [--dim name=lo..hi]... [--policy P] [--warm TRACE] [--cache-dir DIR |
// --no-cache] [--json]`): the model is
// loaded with its declared ranges (overridden by `--dim`), a
// Session builds the artifacts the policy compiles ahead of time
// (auto and polymorphic: the polymorphic artifact; bucketed and static:
// none — they compile on demand) or loads them, and every entry an earlier
// process left, from the persistent cache (tools/run_cache_dir.h), optionally serves the requests of
// `--warm TRACE` (tools/trace.h) so their entries exist too, and
// ProveCacheCoverage decides whether those entries serve every shape in the
// declared domain. The verdict line is followed by the domain and each
// entry's guard set, so an `uncovered` answer shows what is missing.
//
// The bundle form (`--bundle MODEL.ssb [--sign-key-file K]`) re-checks the
// coverage certificate a `shapeshift compile` recorded (ProveBundle below).
// With `--device cuda` (tools/device_flags.h) the entries are device
// programs, and each entry also lists its CUDA graph buckets — every
// bucket's guard atoms with their provenance ("dispatcher: CUDA graph
// bucket 65..128 of seq") — and whether Z3 proves they cover the bucketed
// symbol's declared range (runtime/device/cuda_graphs.h).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/constant_spill.h"
#include "nlohmann/json.hpp"
#include "shapes/predicate.h"
#include "shapes/symbol_facts.h"
#include "shapes/z3_bridge.h"
#include "codegen/cpu/host_target.h"
#include "runtime/bundle/bundle.h"
#include "runtime/specialization/coverage.h"
#include "runtime/specialization/manifest.h"
#include "runtime/specialization/policy.h"
#include "runtime/session.h"
#include "tools/args.h"
#include "tools/command.h"
#include "tools/fleet_flags.h"
#include "tools/device_flags.h"
#include "tools/model_loader.h"
#include "tools/prove_report.h"
#include "tools/run_cache_dir.h"
#include "tools/terminal_text.h"
#include "tools/warm.h"

namespace shapeshift::tools {
namespace {

constexpr unsigned kProveTimeoutMs = 10000;

constexpr char kUsage[] =
    "usage: shapeshift prove MODEL [--dim NAME=LO..HI]... [--policy polymorphic|bucketed|static|auto]\n"
    "                        [--warm TRACE] [--cache-dir DIR | --no-cache] [--json]\n"
    "                        [--weights-dir DIR | --weights-in-memory]   (as for run)\n"
    "                        [--remote-cache redis://HOST:PORT[/DB] --remote-cache-key-file FILE]\n"
    "                        [--device cpu|cuda] [--no-cuda-graphs] [--cuda-graph-symbol SYM] [--cuda-tf32]\n"
    "       shapeshift prove --dim NAME=LO..HI [--dim ...] --guards 'PRED' [--guards ...] [--json]\n"
    "       shapeshift prove --bundle MODEL.ssb [--sign-key-file FILE] [--weights-dir DIR | --weights-in-memory] [--json]\n"
    "  MODEL: path/to/model.onnx or builtin:bert, builtin:gpt2, builtin:gpt2-kv. The artifacts its policy\n"
    "  compiles ahead of time (plus those the persistent cache holds and those --warm's requests compiled;\n"
    "  TRACE as for run --trace: lognormal:N[:SEED], decode:N, file:PATH) must serve every shape of the\n"
    "  declared domain. Each --guards is one guard set (a conjunction, e.g. 'seq <= 64 && seq % 8 == 0').\n"
    "  Prints `covered` (exit 0) or an uncovered shape (exit 1), then the domain and each entry's guards.\n"
    "  --bundle re-checks a bundle's coverage certificate (exit 1 when it does not hold or the file was\n"
    "  tampered with).\n"
    "  With --device cuda each entry also lists its CUDA graph buckets (guard atoms, provenance) and\n"
    "  whether they cover the symbol's range.\n"
    SHAPESHIFT_DEVICE_USAGE
    "  Exit: 0 covered, 1 uncovered (or the solver could not decide), 2 bad usage or model.\n";

// One `--dim` of the guard-text form: the domain is their box.
struct NamedRange {
  std::string name;
  int64_t lo = 0;
  int64_t hi = 0;
};

// `seq=1..512`
absl::StatusOr<NamedRange> ParseDim(const std::string& text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dim '", text, "': ", why, " (expected NAME=LO..HI, e.g. seq=1..512)"));
  };
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return bad("missing NAME=");
  NamedRange d;
  d.name = text.substr(0, eq);
  absl::StatusOr<SymExpr> sym = ParseSymExpr(d.name);
  if (!sym.ok() || !sym->IsSymbol() || sym->symbol_name() != d.name) return bad("NAME is not an identifier");
  std::string range = text.substr(eq + 1);
  size_t dots = range.find("..");
  if (dots == std::string::npos) return bad("missing LO..HI");
  if (!absl::SimpleAtoi(range.substr(0, dots), &d.lo) ||
      !absl::SimpleAtoi(range.substr(dots + 2), &d.hi)) {
    return bad("LO and HI must be integers");
  }
  if (d.lo > d.hi) return bad("LO is greater than HI");
  return d;
}

// One `--guards` text: its conjuncts become the atoms of one guard set.
absl::StatusOr<std::vector<Predicate>> ParseGuardSet(const std::string& text,
                                                     const absl::btree_set<std::string>& dims) {
  absl::StatusOr<Predicate> p = ParsePredicate(text);
  if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat("--guards: ", p.status().message()));
  absl::btree_set<std::string> used;
  p->CollectSymbols(&used);
  for (const std::string& name : used) {
    if (!dims.contains(name)) {
      return absl::InvalidArgumentError(absl::StrCat("--guards '", text, "': unknown symbol '", name,
                                                     "' (declare it with --dim ", name, "=LO..HI)"));
    }
  }
  if (p->kind() == PredKind::kAnd) return p->children();
  return std::vector<Predicate>{*p};
}

int UsageError(absl::string_view message) { return ReportError("prove", kExitUsage, message); }

// The guard-text form: `--dim ... --guards ... [--json]`.
int ProveGuardText(const ParsedArgs& args) {
  std::vector<NamedRange> dims;
  absl::btree_set<std::string> names;
  for (const std::string& text : args.All("dim")) {
    absl::StatusOr<NamedRange> d = ParseDim(text);
    if (!d.ok()) return UsageError(d.status().message());
    if (!names.insert(d->name).second) return UsageError(absl::StrCat("--dim ", d->name, " given twice"));
    dims.push_back(*d);
  }
  if (dims.empty()) return UsageError("at least one --dim NAME=LO..HI is required");
  std::vector<std::vector<Predicate>> guard_sets;
  for (const std::string& text : args.All("guards")) {
    absl::StatusOr<std::vector<Predicate>> set = ParseGuardSet(text, names);
    if (!set.ok()) return UsageError(set.status().message());
    guard_sets.push_back(*std::move(set));
  }
  std::vector<Predicate> domain_parts;
  for (const NamedRange& d : dims) {
    SymExpr s = SymExpr::Symbol(d.name);
    domain_parts.push_back(Predicate::Ge(s, d.lo));
    domain_parts.push_back(Predicate::Le(s, d.hi));
  }
  Z3Bridge z3(kProveTimeoutMs);
  CoverageResult r = z3.Coverage(Predicate::And(domain_parts), guard_sets);
  const bool json = args.Has("json");
  if (r.verdict == Verdict::kUnknown) {
    ReportError("prove", kExitNegative, absl::StrCat("the solver could not decide coverage: ", r.detail));
    if (json) {
      nlohmann::json out = {{"covered", false}, {"witness", nullptr}, {"unknown", r.detail}};
      std::printf("%s\n", JsonText(out).c_str());
    } else {
      std::printf("unknown\n");
    }
    return kExitNegative;
  }
  const bool covered = r.verdict == Verdict::kProven;
  if (json) {
    nlohmann::json out = {{"covered", covered}, {"witness", nullptr}};
    if (!covered) {
      nlohmann::json witness = nlohmann::json::object();
      for (const NamedRange& d : dims) witness[d.name] = r.witness.at(d.name);
      out["witness"] = witness;
    }
    std::printf("%s\n", JsonText(out).c_str());
  } else if (covered) {
    std::printf("covered\n");
  } else {
    std::vector<std::string> parts;
    for (const NamedRange& d : dims) parts.push_back(absl::StrCat(d.name, "=", r.witness.at(d.name)));
    std::printf("uncovered: %s\n", Escaped(absl::StrJoin(parts, " ")).c_str());
  }
  return covered ? kExitOk : kExitNegative;
}

// The model form: `MODEL [--dim ...] [--policy P] [--warm TRACE] [--json]`.
int ProveModel(const ParsedArgs& args) {
  if (args.positional.size() != 1) return UsageError("expected exactly one MODEL argument");
  const std::string& model_arg = args.positional[0];
  absl::StatusOr<std::map<std::string, DimRange>> dims = ParseDimFlags(args.All("dim"));
  if (!dims.ok()) return UsageError(dims.status().message());
  runtime::SpecializationPolicy policy = runtime::SpecializationPolicy::kAuto;
  if (args.Has("policy")) {
    absl::StatusOr<runtime::SpecializationPolicy> parsed = runtime::ParseSpecializationPolicy(args.Get("policy"));
    if (!parsed.ok()) return UsageError(absl::StrCat("--policy: ", parsed.status().message()));
    policy = *parsed;
  }
  absl::StatusOr<std::string> cache_dir = CacheDirFromFlags(args);
  if (!cache_dir.ok()) return UsageError(cache_dir.status().message());
  // The weights as for run: straight from the file to the spill, given back
  // once packed.
  absl::StatusOr<std::string> weights_dir = WeightsDirFromFlags(args, *cache_dir);
  if (!weights_dir.ok()) return UsageError(weights_dir.status().message());
  std::unique_ptr<ConstantSpill> spill = OpenSpillIfAny(*weights_dir);
  absl::StatusOr<ImportedModel> model = LoadModel(model_arg, *dims, spill.get());
  if (!model.ok()) return UsageError(model.status().message());
  std::vector<InputRecipe> recipes = InputRecipes(*model->graph);
  // The importer's notes say where the domain is narrower than declared
  // (a dim the model itself limits): the certificate is over that domain.
  const std::vector<std::string> notes = model->notes;
  absl::StatusOr<runtime::persist::RemoteCacheOptions> remote = RemoteCacheFromFlags(args);
  if (!remote.ok()) return UsageError(remote.status().message());
  runtime::SessionOptions options;
  options.policy = policy;
  options.cache_dir = *cache_dir;
  options.weights_dir = *weights_dir;
  options.remote_cache = *std::move(remote);
  if (absl::Status s = ApplyDeviceFlags(args, &options.compile); !s.ok()) return UsageError(s.message());
  absl::StatusOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::Create(
          runtime::ModelSource::Built(std::move(model->graph), std::move(model->env), model_arg), options);
  if (!session.ok()) return UsageError(absl::StrCat("compile: ", session.status().message()));
  if (args.Has("warm")) {
    if (absl::Status s = WarmSession(**session, recipes, args.Get("warm")); !s.ok()) return UsageError(s.message());
  }

  const ShapeEnv& env = (*session)->dispatcher().env();
  const runtime::SpecializationCache& cache = (*session)->dispatcher().cache();
  Z3Bridge z3(kProveTimeoutMs);
  CoverageResult r = runtime::ProveCacheCoverage(cache, env.DomainPredicate(), z3);
  const bool covered = r.verdict == Verdict::kProven;
  nlohmann::ordered_json out = CoverageVerdictJson(r, env);
  out["model"] = model_arg;
  out["policy"] = runtime::SpecializationPolicyName(policy);
  out["domain"] = DomainJson(env);
  out["domain_relations"] = DomainRelationsJson(env);
  out["notes"] = notes;
  out["compiles"] = (*session)->stats().dispatcher.compiles;
  out["cache_loads"] = (*session)->stats().dispatcher.cache_loads;
  out["entries"] = EntriesJson(cache, z3);
  if (args.Has("json")) {
    std::printf("%s\n", JsonText(out).c_str());
  } else {
    if (r.verdict == Verdict::kUnknown) {
      std::printf("unknown: %s\n", Escaped(r.detail).c_str());
    } else if (covered) {
      std::printf("covered\n");
    } else {
      std::vector<std::string> parts;
      for (const auto& [name, value] : out["witness"].items()) parts.push_back(absl::StrCat(name, "=", value.dump()));
      std::printf("uncovered: %s\n", Escaped(absl::StrJoin(parts, " ")).c_str());
    }
    std::vector<std::string> domain;
    for (const auto& [name, range] : out["domain"].items()) domain.push_back(absl::StrCat(name, "=", range.get<std::string>()));
    const std::vector<std::string> relations = out["domain_relations"].get<std::vector<std::string>>();
    std::printf("  model %s, policy %s, domain %s%s\n", Escaped(model_arg).c_str(),
                out["policy"].get<std::string>().c_str(), Escaped(absl::StrJoin(domain, " ")).c_str(),
                relations.empty() ? "" : Escaped(absl::StrCat(" where ", absl::StrJoin(relations, " && "))).c_str());
    for (const std::string& note : notes) std::printf("  note: %s\n", Escaped(note).c_str());
    if (!options.cache_dir.empty()) {
      std::printf("  persistent cache %s: %lld entr%s loaded\n", Escaped(options.cache_dir).c_str(),
                  out["cache_loads"].get<long long>(), out["cache_loads"].get<long long>() == 1 ? "y" : "ies");
    }
    if (cache.size() == 0) {
      std::printf("  no entries: policy %s compiles nothing ahead of time (each shape compiles on demand)\n",
                  out["policy"].get<std::string>().c_str());
    }
    for (const auto& e : out["entries"]) {
      std::vector<std::string> guards = e["guards"].get<std::vector<std::string>>();
      std::printf("  entry #%lld (%s): %s\n", e["id"].get<long long>(), e["tier"].get<std::string>().c_str(),
                  guards.empty() ? "no guards (the whole declared domain)"
                                 : Escaped(absl::StrJoin(guards, " && ")).c_str());
      if (!e.contains("cuda_graphs")) continue;
      const auto& graphs = e["cuda_graphs"];
      if (!graphs["enabled"].get<bool>()) {
        std::printf("    CUDA graphs: none (%s)\n", Escaped(graphs["reason"].get<std::string>()).c_str());
        continue;
      }
      std::printf("    CUDA graph buckets of %s (cover its range: %s):\n",
                  Escaped(graphs["symbol"].get<std::string>()).c_str(), graphs["coverage"].get<std::string>().c_str());
      for (const auto& b : graphs["buckets"]) {
        std::printf("      %s  (%s)\n", Escaped(absl::StrJoin(b["guards"].get<std::vector<std::string>>(), " && ")).c_str(),
                    Escaped(b["provenance"].get<std::string>()).c_str());
      }
    }
  }
  return covered ? kExitOk : kExitNegative;
}

// The bundle form: `--bundle MODEL.ssb [--sign-key-file K] [--json]`. Checks,
// in order: the file's checksum and signature; that the certificate is about
// the bundle's domain and recorded guard sets, and Z3 gives the same answer
// to the same query; and, when the bundle's code is for this machine, that
// the entries re-created from its machine code check exactly those guards.
int ProveBundle(const ParsedArgs& args) {
  const std::string path = args.Get("bundle");
  const bool json = args.Has("json");
  nlohmann::ordered_json out;
  out["bundle"] = path;
  auto finish = [&](bool verified, const std::string& problem) {
    out["verified"] = verified;
    if (!problem.empty()) out["problem"] = problem;
    if (json) {
      std::printf("%s\n", JsonText(out).c_str());
    } else if (!verified) {
      std::printf("refused: %s\n", Escaped(problem).c_str());  // quotes the bundle's contents
    } else {
      const std::string verdict = Escaped(out["certificate"].get<std::string>());
      std::printf("%s%s\n", verdict.c_str(),
                  verdict == "uncovered" ? absl::StrCat(": ", Escaped(JsonText(out["witness"]))).c_str() : "");
      std::printf("  certificate re-checked with %s over %lld entr%s; %s\n", out["solver"].get<std::string>().c_str(),
                  out["entries"].get<long long>(), out["entries"].get<long long>() == 1 ? "y" : "ies",
                  out["recreated"].get<bool>()
                      ? "the entries re-created from the bundle's machine code check exactly the certified guards"
                      : absl::StrCat("entries not re-created here (", Escaped(out["not_recreated"].get<std::string>()),
                                     ")").c_str());
    }
    return verified && out.value("certificate", "") == "covered" ? kExitOk : kExitNegative;
  };
  absl::StatusOr<std::string> key = SigningKeyFromFlags(args);
  if (!key.ok()) return UsageError(key.status().message());
  absl::StatusOr<runtime::bundle::Bundle> bundle = runtime::bundle::ReadBundle(path, *key);
  if (!bundle.ok()) {
    if (absl::IsNotFound(bundle.status())) return UsageError(bundle.status().message());
    return finish(false, std::string(bundle.status().message()));
  }
  const runtime::bundle::CoverageCertificate& certificate = bundle->header.certificate;
  out["certificate"] = certificate.verdict;
  out["witness"] = certificate.witness;
  out["solver"] = certificate.solver;
  absl::StatusOr<std::vector<runtime::ManifestEntry>> recorded =
      runtime::DecodeManifest(bundle->manifest, bundle->header.manifest_key);
  if (!recorded.ok()) return finish(false, absl::StrCat("the bundle's manifest: ", recorded.status().message()));
  out["entries"] = recorded->size();
  std::vector<std::vector<std::string>> texts;
  for (const runtime::ManifestEntry& m : *recorded) {
    std::vector<std::string> atoms;
    for (const runtime::AtomRecord& a : m.guards) atoms.push_back(a.atom);
    texts.push_back(std::move(atoms));
  }
  absl::StatusOr<std::vector<std::vector<Predicate>>> sets = runtime::bundle::ParseGuardSets(texts);
  if (!sets.ok()) return finish(false, absl::StrCat("the bundle's guards: ", sets.status().message()));
  // The weights as for run: from the bundle file to the spill, given back once packed.
  absl::StatusOr<std::string> weights_dir = WeightsDirFromFlags(args, "");
  if (!weights_dir.ok()) return UsageError(weights_dir.status().message());
  std::unique_ptr<ConstantSpill> spill = OpenSpillIfAny(*weights_dir);
  absl::StatusOr<ImportedModel> model = runtime::bundle::ImportBundleModel(*bundle, spill.get());
  spill.reset();
  if (!model.ok()) return finish(false, absl::StrCat("the bundle's model: ", model.status().message()));
  const Predicate domain = model->env->DomainPredicate();
  if (absl::Status s = runtime::bundle::RecheckCertificate(certificate, domain, *sets); !s.ok()) {
    return finish(false, absl::StrCat("recorded guards: ", s.message()));
  }
  out["recreated"] = false;
  if (absl::Status target = runtime::bundle::CheckBundleTarget(bundle->header, codegen::cpu::DetectHostTarget());
      !target.ok()) {
    out["not_recreated"] = std::string(target.message());
    return finish(true, "");
  }
  runtime::bundle::BundleSessionOptions options;  // no cache: every entry from the bundle
  options.weights_dir = *weights_dir;
  absl::StatusOr<std::unique_ptr<runtime::Session>> session =
      runtime::bundle::OpenBundleSession(*bundle, *std::move(model), options);
  if (!session.ok()) return finish(false, std::string(session.status().message()));
  const runtime::SpecializationCache& cache = (*session)->dispatcher().cache();
  if (absl::Status s = runtime::bundle::RecheckCertificate(certificate, (*session)->dispatcher().env().DomainPredicate(),
                                                           runtime::bundle::EntryGuardSets(cache));
      !s.ok()) {
    return finish(false, absl::StrCat("re-created entries: ", s.message()));
  }
  out["recreated"] = true;
  return finish(true, "");
}

int RunProve(const std::vector<std::string>& argv) {
  FlagSpec spec;
  spec.valued = {"dim", "guards", "policy", "warm", kCacheDirFlag, "bundle", kSignKeyFileFlag, kWeightsDirFlag};
  for (const std::string& flag : RemoteCacheFlagNames()) spec.valued.insert(flag);
  spec.switches = {"json", kNoCacheFlag, kWeightsInMemoryFlag};
  AddDeviceFlags(&spec);
  absl::StatusOr<ParsedArgs> args = ParseArgs(argv, spec);
  if (!args.ok()) return tools::UsageError("prove", kUsage, std::string(args.status().message()));
  if (args->Has("bundle")) {
    std::vector<std::string> not_for_bundles = {"dim", "guards", "policy", "warm", kCacheDirFlag, kNoCacheFlag};
    for (const std::string& flag : RemoteCacheFlagNames()) not_for_bundles.push_back(flag);
    for (const std::string& flag : DeviceFlagNames()) not_for_bundles.push_back(flag);  // a bundle holds CPU code
    for (const std::string& flag : not_for_bundles) {
      if (args->Has(flag)) return UsageError(absl::StrCat("--", flag, " does not apply to --bundle"));
    }
    if (!args->positional.empty()) return UsageError("--bundle takes no MODEL argument");
    return ProveBundle(*args);
  }
  if (args->Has(kSignKeyFileFlag)) return UsageError("--sign-key-file needs --bundle");
  if (args->Has("guards")) {
    if (!args->positional.empty()) {
      return UsageError(absl::StrCat("unexpected argument '", args->positional[0],
                                     "' (the --guards form takes no model)"));
    }
    if (args->Has("policy") || args->Has("warm") || args->Has(kCacheDirFlag) || args->Has(kNoCacheFlag) ||
        args->Has(kWeightsDirFlag) || args->Has(kWeightsInMemoryFlag)) {
      return UsageError("--policy, --warm, --cache-dir, --no-cache and the weights flags need a MODEL, not --guards");
    }
    for (const std::string& flag : RemoteCacheFlagNames()) {
      if (args->Has(flag)) return UsageError(absl::StrCat("--", flag, " needs a MODEL, not --guards"));
    }
    for (const std::string& flag : DeviceFlagNames()) {  // nothing runs: a --device would be ignored
      if (args->Has(flag)) return UsageError(absl::StrCat("--", flag, " needs a MODEL, not --guards"));
    }
    return ProveGuardText(*args);
  }
  if (!args->positional.empty()) return ProveModel(*args);
  return tools::UsageError("prove", kUsage, "expected a MODEL, or --dim and --guards");
}

}  // namespace

SHAPESHIFT_COMMAND(prove, "prove", "prove that a model's artifacts (or guard sets) cover a shape domain, or show a gap",
                   kUsage, RunProve);

}  // namespace shapeshift::tools
