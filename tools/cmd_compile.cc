// `shapeshift compile MODEL [--dim name=lo..hi]... [--policy P] [--warm TRACE] -o OUT.ssb
//                    [--sign-key-file FILE] [--cache-dir DIR | --no-cache] [--no-small-row-packing] [--panel-long-rows] [--json]`
//
// Writes an AOT bundle (runtime/bundle/bundle.h): the entries the policy
// compiles ahead of time (auto and polymorphic: the polymorphic one), plus
// those `--warm TRACE`'s requests compile, with every kernel's machine code,
// the model, the dim domain and a coverage certificate — Z3's answer to
// "do these entries cover the domain?" with the exact query, re-checkable by
// `shapeshift prove --bundle OUT.ssb`. `shapeshift run OUT.ssb ...` serves
// from it with 0 compiles on a machine with the same CPU features, LLVM and
// shapeshift build (anything else is refused, naming the mismatch).
// `--sign-key-file` signs it (HMAC-SHA-256); loading then needs the key.
//
// Prints the certificate's verdict (`covered`, or `uncovered: seq=...` —
// still exit 0: an uncovered bundle is valid, it compiles those shapes on
// demand), entries, objects and size; `--json` as one object. Exit 2 for bad
// usage or a model that cannot be compiled or written.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/constant_spill.h"
#include "nlohmann/json.hpp"
#include "runtime/bundle/bundle.h"
#include "tools/args.h"
#include "tools/command.h"
#include "tools/fleet_flags.h"
#include "tools/model_loader.h"
#include "tools/run_cache_dir.h"
#include "tools/terminal_text.h"
#include "tools/warm.h"

namespace shapeshift::tools {
namespace {

constexpr char kUsage[] =
    "usage: shapeshift compile MODEL [--dim name=lo..hi]... [--policy polymorphic|bucketed|static|auto]\n"
    "                          [--warm TRACE] -o OUT.ssb [--sign-key-file FILE] [--cache-dir DIR | --no-cache]\n"
    "                          [--no-small-row-packing] [--panel-long-rows] [--json]\n"
    "  Writes an AOT bundle: the entries the policy compiles ahead of time plus those --warm's requests\n"
    "  compile (TRACE as for run --trace), their machine code, the model, the domain and a Z3 coverage\n"
    "  certificate (re-check it with prove --bundle OUT.ssb). --sign-key-file signs it.\n"
    "  Exit: 0 written (covered or not: the verdict is printed), 2 bad usage or a model that cannot be\n"
    "  compiled or written.\n";

int Fail(const std::string& message) { return ReportError("compile", kExitUsage, message); }
int Usage(const std::string& message) { return UsageError("compile", kUsage, message); }

int RunCompile(const std::vector<std::string>& raw) {
  std::vector<std::string> argv = raw;
  for (std::string& a : argv) {
    if (a == "-o") a = "--output";
  }
  FlagSpec spec;
  spec.valued = {"dim", "policy", "warm", "output", kSignKeyFileFlag, kCacheDirFlag};
  spec.switches = {"json", kNoCacheFlag, "no-small-row-packing", "panel-long-rows"};
  absl::StatusOr<ParsedArgs> args = ParseArgs(argv, spec);
  if (!args.ok()) return Usage(std::string(args.status().message()));
  if (args->positional.size() != 1) return Usage("expected exactly one MODEL argument");
  const std::string output = args->Get("output");
  if (output.empty()) return Usage("-o OUT.ssb is required");
  if (!IsBundlePath(output)) return Fail(absl::StrCat("-o ", output, ": a bundle's name ends in .ssb"));
  const std::string model_arg = args->positional[0];
  if (IsBundlePath(model_arg)) return Fail(absl::StrCat(model_arg, " is a bundle already"));
  absl::StatusOr<std::map<std::string, DimRange>> dims = ParseDimFlags(args->All("dim"));
  if (!dims.ok()) return Fail(std::string(dims.status().message()));
  runtime::bundle::BundleCompileOptions options;
  options.source = model_arg;
  if (args->Has("policy")) {
    absl::StatusOr<runtime::SpecializationPolicy> policy = runtime::ParseSpecializationPolicy(args->Get("policy"));
    if (!policy.ok()) return Fail(absl::StrCat("--policy: ", policy.status().message()));
    options.policy = *policy;
  }
  absl::StatusOr<std::string> cache_dir = CacheDirFromFlags(*args);
  if (!cache_dir.ok()) return Fail(std::string(cache_dir.status().message()));
  options.cache_dir = *cache_dir;
  absl::StatusOr<std::string> key = SigningKeyFromFlags(*args);
  if (!key.ok()) return Fail(std::string(key.status().message()));
  options.signing_key = *key;
  options.compile.pack_small_row_gemms = !args->Has("no-small-row-packing");
  options.compile.long_rows_on_panels = args->Has("panel-long-rows");
  // The weights go from the model file to a spill beside the output (file
  // to file where its file system takes one), not into the heap.
  const std::filesystem::path output_path(output);
  std::unique_ptr<ConstantSpill> spill =
      OpenSpillIfAny(output_path.has_parent_path() ? output_path.parent_path().string() : ".");
  absl::StatusOr<ImportedModel> model = LoadModel(model_arg, *dims, spill.get());
  spill.reset();
  if (!model.ok()) return Fail(std::string(model.status().message()));
  const std::vector<InputRecipe> recipes = InputRecipes(*model->graph);
  if (args->Has("warm")) {
    const std::string trace = args->Get("warm");
    options.warm = [&recipes, trace](runtime::Session& session) {
      return WarmSession(session, recipes, trace);
    };
  }
  absl::StatusOr<runtime::bundle::BundleSummary> summary =
      runtime::bundle::CompileBundle(*std::move(model), options, output);
  if (!summary.ok()) return Fail(std::string(summary.status().message()));
  const runtime::bundle::BundleHeader& h = summary->header;
  std::vector<std::string> witness;
  for (const auto& [name, value] : h.certificate.witness) witness.push_back(absl::StrCat(name, "=", value));
  if (args->Has("json")) {
    nlohmann::ordered_json out;
    out["bundle"] = output;
    out["model"] = model_arg;
    out["policy"] = runtime::SpecializationPolicyName(h.policy);
    out["certificate"] = h.certificate.verdict;
    out["witness"] = h.certificate.witness;
    out["solver"] = h.certificate.solver;
    out["entries"] = h.entries;
    out["objects"] = h.objects;
    out["bytes"] = summary->bytes;
    out["compiles"] = summary->compiles;
    out["signed"] = !options.signing_key.empty();
    out["cpu"] = h.target.cpu;
    std::printf("%s\n", JsonText(out).c_str());
  } else {
    std::printf("%s%s\n", h.certificate.verdict.c_str(),
                witness.empty() ? "" : absl::StrCat(": ", Escaped(absl::StrJoin(witness, " "))).c_str());
    std::printf("  wrote %s: %lld entr%s, %lld kernel object(s), %llu bytes%s; built for %s (%s)\n",
                Escaped(output).c_str(),
                static_cast<long long>(h.entries), h.entries == 1 ? "y" : "ies", static_cast<long long>(h.objects),
                static_cast<unsigned long long>(summary->bytes), options.signing_key.empty() ? "" : ", signed",
                h.target.cpu.c_str(), h.target.compiler.c_str());
    std::printf("  re-check: shapeshift prove --bundle %s%s\n", Escaped(output).c_str(),
                options.signing_key.empty() ? "" : " --sign-key-file KEY");
  }
  return kExitOk;
}

}  // namespace

SHAPESHIFT_COMMAND(compile, "compile",
                   "compile a model ahead of time into a bundle (MODEL.ssb) with a coverage certificate", kUsage,
                   RunCompile);

}  // namespace shapeshift::tools
