// `shapeshift check MODEL [--dim name=lo..hi | name=a+b]... [--device cpu|cuda] [--json]
//                  [--weights-dir DIR | --weights-in-memory]`
//
// Answers, before any compile and without running anything, whether `run`
// can compile MODEL under each policy, and names every node it cannot
// compile with the reason (runtime/specialization/compile_tiers.h: the same
// passes and lowering a compile runs, on copies of the model). Also prints
// the domain the model can serve: the declared ranges after the importer's
// model-implied narrowing, with each narrowing's note. `--device cuda`
// answers for the CUDA device program (the op table's CUDA column, every
// kernel emitted as CUDA C); that needs no GPU, since nothing is compiled.
//
// Exit 0 when the default policy (`auto`, whose first compile is the
// polymorphic tier) can compile the model, 1 when it cannot (or the model
// uses ops shapeshift does not know), 2 for bad usage or an unreadable file.
#include <cstdio>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/constant_spill.h"
#include "graph/onnx/importer.h"
#include "nlohmann/json.hpp"
#include "onnx/onnx_pb.h"
#include "runtime/compile_options.h"
#include "tools/args.h"
#include "tools/check_report.h"
#include "tools/command.h"
#include "tools/model_loader.h"
#include "tools/prove_report.h"
#include "tools/run_cache_dir.h"
#include "tools/terminal_text.h"

namespace shapeshift::tools {
namespace {

constexpr char kUsage[] =
    "usage: shapeshift check MODEL [--dim name=lo..hi | name=a+b]... [--device cpu|cuda] [--json]\n"
    "                        [--weights-dir DIR | --weights-in-memory]   (as for `run`: external weights\n"
    "                        go file to file into DIR, default $XDG_CACHE_HOME/shapeshift/weights)\n"
    "  Says, without compiling or running anything, whether `run` can compile MODEL (an .onnx file or\n"
    "  builtin:NAME) under each tier: polymorphic (--policy polymorphic, and auto's first compile),\n"
    "  bucketed and static (checked at a representative request), naming every node it cannot compile\n"
    "  and why. Prints the domain the model can serve, with the importer's notes. --device cuda answers\n"
    "  for `run --device cuda` (the op table's CUDA column, every kernel emitted as CUDA C; needs no GPU).\n"
    "  Exit: 0 the default policy (auto) compiles it, 1 it does not (or the model cannot be imported),\n"
    "  2 bad usage or an unreadable file.\n";

int Fail(int code, absl::string_view message) { return ReportError("check", code, message); }

// The model as `run` would load it; nullopt after reporting, with `*exit`.
std::optional<ImportedModel> Load(const std::string& path, const std::vector<std::string>& dim_flags, bool json,
                                  ConstantSpill* spill, int* exit) {
  if (absl::StartsWith(path, "builtin:")) {
    absl::StatusOr<std::map<std::string, DimRange>> dims = ParseDimFlags(dim_flags);
    if (!dims.ok()) {
      *exit = UsageError("check", kUsage, std::string(dims.status().message()));
      return std::nullopt;
    }
    absl::StatusOr<ImportedModel> model = LoadModel(path, *dims);
    if (!model.ok()) {
      *exit = Fail(kExitUsage, model.status().message());
      return std::nullopt;
    }
    return *std::move(model);
  }
  ImportOptions options;
  options.spill = spill;
  for (const std::string& dim : dim_flags) {
    if (absl::Status s = ParseDimFlag(dim, &options); !s.ok()) {
      *exit = UsageError("check", kUsage, std::string(s.message()));
      return std::nullopt;
    }
  }
  absl::StatusOr<OnnxFile> file = ParseOnnxFile(path);
  if (!file.ok()) {
    *exit = Fail(kExitUsage, file.status().message());
    return std::nullopt;
  }
  // A model that parses but uses ops or shapes shapeshift cannot import is
  // a negative answer, with every unsupported op named.
  absl::StatusOr<ImportedModel> model = ImportParsedOnnxFile(*file, options);
  if (!model.ok()) {
    const std::string message(model.status().message());
    if (json) {
      std::printf("%s\n", JsonText(nlohmann::ordered_json{{"model", path}, {"importable", false}, {"error", message}}, 2).c_str());
    } else {
      std::printf("model: %s\nverdict: NOT importable: %s\n", Escaped(path).c_str(), Escaped(message).c_str());
    }
    *exit = Fail(kExitNegative, message);
    return std::nullopt;
  }
  return *std::move(model);
}

int RunCheck(const std::vector<std::string>& raw_args) {
  FlagSpec spec;
  spec.valued = {"dim", "device"};
  spec.valued.insert(kWeightsDirFlag);
  spec.switches = {"json", kWeightsInMemoryFlag};
  absl::StatusOr<ParsedArgs> args = ParseArgs(raw_args, spec);
  if (!args.ok()) return UsageError("check", kUsage, std::string(args.status().message()));
  if (args->positional.size() != 1) return UsageError("check", kUsage, "expects exactly one MODEL");
  absl::StatusOr<runtime::Device> device = runtime::ParseDevice(args->Get("device", "cpu"));
  if (!device.ok()) return UsageError("check", kUsage, absl::StrCat("--device: ", device.status().message()));
  const std::string& path = args->positional[0];
  const bool json = args->Has("json");
  int exit = kExitOk;
  absl::StatusOr<std::string> weights_dir = WeightsDirFromFlags(*args, "");
  if (!weights_dir.ok()) return UsageError("check", kUsage, std::string(weights_dir.status().message()));
  std::unique_ptr<ConstantSpill> spill = OpenSpillIfAny(*weights_dir);
  std::optional<ImportedModel> model = Load(path, args->All("dim"), json, spill.get(), &exit);
  if (!model) return exit;

  const std::vector<std::string> slots = RequestSlots(*model->graph);
  const std::vector<runtime::TierCheck> tiers = runtime::CheckTiers(*model->graph, *model->env, slots, *device);
  const bool default_ok = tiers.front().check.compilable();
  bool all_ok = true;
  for (const runtime::TierCheck& t : tiers) all_ok = all_ok && t.check.compilable();

  if (json) {
    nlohmann::json domain = nlohmann::json::object();
    for (const SymbolInfo& s : model->env->symbols()) domain[s.name] = {{"min", s.min}, {"max", s.max}};
    nlohmann::json out = {{"model", path},
                          {"importable", true},
                          {"device", runtime::DeviceName(*device)},
                          {"domain", domain},
                          {"domain_relations", DomainRelationsJson(*model->env)},
                          {"notes", model->notes},
                          {"compilable_default_policy", default_ok},
                          {"compilable_every_policy", all_ok}};
    for (const runtime::TierCheck& t : tiers) out["tiers"].push_back(TierCheckJson(t, slots));
    std::printf("%s\n", JsonText(out, 2).c_str());
  } else {
    std::printf("model: %s\ndevice: %s\ndomain:\n", Escaped(path).c_str(), runtime::DeviceName(*device));
    for (const SymbolInfo& s : model->env->symbols()) {
      std::printf("  %s in [%lld, %lld]\n", Escaped(s.name).c_str(), static_cast<long long>(s.min),
                  static_cast<long long>(s.max));
    }
    for (const DomainConstraint& c : model->env->domain_constraints()) {
      std::printf("  where %s\n", Escaped(c.predicate.ToString()).c_str());
    }
    std::printf("notes:%s\n", model->notes.empty() ? " none" : "");
    for (const std::string& note : model->notes) std::printf("  %s\n", Escaped(note).c_str());
    for (const runtime::TierCheck& t : tiers) PrintTierCheck(stdout, t, slots);
    std::printf("verdict: %s\n", all_ok       ? "compilable under every policy"
                                 : default_ok ? "compilable under the default policy (auto), not under every policy"
                                              : "NOT compilable under the default policy (auto)");
  }
  return default_ok ? kExitOk : kExitNegative;
}

}  // namespace

SHAPESHIFT_COMMAND(check, "check", "say, without compiling, whether run can compile a model under each policy, and why not",
                   kUsage, RunCheck);

}  // namespace shapeshift::tools
