// `shapeshift fuzz MODEL [--dim name=lo..hi]... [--cases N] [--seed S] [--policy P] [--json] ...`
//
// Guard soundness, tightness and evaluator agreement for one model under one
// specialization policy (fuzz_runner.h says what each means); with
// `--mutate-guards`, the mutation self-test that shows the checks have
// teeth (fuzz_mutation.h). Every failure comes with a minimized shape and a
// command that replays it. `--device cuda` fuzzes the device programs
// (tools/device_flags.h) against the same interpreter.
//
// Every case is sized first (fuzz_budget.h): one over `--max-case-bytes`
// (default: a quarter of physical memory, at most half of `ulimit -v`) is
// skipped and counted, so the importer's default 1..65536 ranges run
// without exhausting memory; a case that still fails to allocate is an
// allocation failure, reported as such.
//
// Exit codes: 0 no failure; 1 a soundness failure, a bad request refused
// without naming what is wrong, a spurious recompile, an evaluator
// disagreement, an allocation failure, or (with --mutate-guards) a kill rate
// below --min-kill-rate; 2 bad usage, or a model that cannot be loaded or
// compiled.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "runtime/specialization/policy.h"
#include "tools/args.h"
#include "tools/command.h"
#include "tools/fuzz_budget.h"
#include "tools/device_flags.h"
#include "tools/fuzz_report.h"
#include "tools/model_loader.h"
#include "tools/terminal_text.h"

namespace shapeshift::tools {
namespace {

constexpr char kUsage[] =
    "usage: shapeshift fuzz MODEL [--dim name=lo..hi]... [--cases N] [--seed S]\n"
    "                       [--policy polymorphic|bucketed|static|auto] [--recompile-limit N]\n"
    "                       [--case dim=N,dim=N]... [--mutate-guards [--mutant-shapes K] [--min-kill-rate R]]\n"
    "                       [--reference-cache-mb M] [--max-case-bytes B] [--json]\n"
    SHAPESHIFT_DEVICE_USAGE
    "  MODEL: path/to/model.onnx or builtin:bert, builtin:gpt2, builtin:gpt2-kv\n"
    "  Runs N generated requests (default 1000; 60% in the declared ranges, each power-of-two octave\n"
    "  of a range equally likely; 25% on edges:\n"
    "  1, min, max, 2^k, 2^k+1; 10% one dim outside its range; 5% wrong rank or dtype) through a\n"
    "  specializing session and checks:\n"
    "    soundness: an accepted request's outputs match the reference interpreter within\n"
    "      |actual - expected| <= 1e-3 + 1e-3 * |expected| (rtol = atol = 1e-3); an out-of-domain\n"
    "      request gets an error naming the dim, a malformed one an error naming the input\n"
    "      (else counted as unclear_errors);\n"
    "      a refusal at the recompile limit is expected and counted apart;\n"
    "    tightness: no compile happens while an existing entry's guards all hold (Z3);\n"
    "    evaluator agreement: each entry's GuardProgram verdict equals Z3's at every shape.\n"
    "  --case replays the given shapes in order instead (exclusive with --cases).\n"
    "  memory: each case is sized before anything is allocated (inputs, outputs, arena, the interpreter's\n"
    "  intermediates); one over --max-case-bytes B (bytes, or with K/M/G/T; default a quarter of physical\n"
    "  memory, at most half of ulimit -v) is skipped and counted as over_budget; a case that still fails\n"
    "  to allocate is an allocation failure (a failure, not a limit refusal).\n"
    "  --mutate-guards: drops each recorded guard atom (and weakens each constant bound by one),\n"
    "  runs the entry's program where the mutant newly accepts, reports killed/survived per\n"
    "  mutant and the kill rate over the atoms Z3 shows are needed (default minimum 0.9).\n"
    "  Exit: 0 clean, 1 any failure (allocation failures included, or a kill rate below the minimum),\n"
    "  2 bad usage or model.\n";

struct FuzzFlags : FuzzRequest {
  bool json = false;
};

absl::StatusOr<FuzzFlags> ParseFuzzFlags(const ParsedArgs& args) {
  if (args.positional.size() != 1) return absl::InvalidArgumentError("expected exactly one MODEL argument");
  FuzzFlags flags;
  flags.options.model = args.positional[0];
  absl::StatusOr<std::map<std::string, DimRange>> dims = ParseDimFlags(args.All("dim"));
  if (!dims.ok()) return dims.status();
  flags.options.dims = *dims;
  if (absl::Status s = ApplyDeviceFlags(args, &flags.options.device); !s.ok()) return s;
  if (!absl::SimpleAtoi(args.Get("cases", "1000"), &flags.cases) || flags.cases < 1) {
    return absl::InvalidArgumentError("--cases: expected an integer >= 1");
  }
  if (!absl::SimpleAtoi(args.Get("seed", "1"), &flags.options.seed)) {
    return absl::InvalidArgumentError("--seed: expected a non-negative integer");
  }
  absl::StatusOr<runtime::SpecializationPolicy> policy = runtime::ParseSpecializationPolicy(args.Get("policy", "auto"));
  if (!policy.ok()) return absl::InvalidArgumentError(absl::StrCat("--policy: ", policy.status().message()));
  flags.options.policy = *policy;
  if (!absl::SimpleAtoi(args.Get("recompile-limit", "64"), &flags.options.recompile_limit) ||
      flags.options.recompile_limit < 0) {
    return absl::InvalidArgumentError("--recompile-limit: expected an integer >= 0");
  }
  int64_t cache_mb = 0;
  if (!absl::SimpleAtoi(args.Get("reference-cache-mb", "1024"), &cache_mb) || cache_mb < 0) {
    return absl::InvalidArgumentError("--reference-cache-mb: expected an integer >= 0");
  }
  flags.options.reference_cache_bytes = static_cast<size_t>(cache_mb) << 20;
  flags.options.max_case_bytes = DefaultMaxCaseBytes();
  if (args.Has("max-case-bytes")) {
    absl::StatusOr<uint64_t> bytes = ParseByteCount(args.Get("max-case-bytes"));
    if (!bytes.ok()) return bytes.status();
    flags.options.max_case_bytes = *bytes;
  }
  flags.explicit_cases = args.All("case");
  if (!flags.explicit_cases.empty() && args.Has("cases")) {
    return absl::InvalidArgumentError("--case and --cases are exclusive (--case replays exactly the shapes given)");
  }
  flags.mutate_guards = args.Has("mutate-guards");
  if (!absl::SimpleAtoi(args.Get("mutant-shapes", "8"), &flags.mutant_shapes) || flags.mutant_shapes < 1) {
    return absl::InvalidArgumentError("--mutant-shapes: expected an integer >= 1");
  }
  if (!absl::SimpleAtod(args.Get("min-kill-rate", "0.9"), &flags.min_kill_rate) || flags.min_kill_rate < 0 ||
      flags.min_kill_rate > 1) {
    return absl::InvalidArgumentError("--min-kill-rate: expected a number in [0, 1]");
  }
  if (!flags.mutate_guards && (args.Has("mutant-shapes") || args.Has("min-kill-rate"))) {
    return absl::InvalidArgumentError("--mutant-shapes and --min-kill-rate need --mutate-guards");
  }
  flags.json = args.Has("json");
  return flags;
}

// Text from the model (dim names, paths, error details, atoms) is escaped.
std::string Text(const nlohmann::ordered_json& value) {
  return Escaped(value.is_string() ? value.get<std::string>() : JsonText(value));
}

void PrintText(const nlohmann::ordered_json& j) {
  std::printf("fuzz %s, policy %s, seed %llu: %lld cases\n", Text(j["model"]).c_str(),
              j["policy"].get<std::string>().c_str(), j["seed"].get<unsigned long long>(),
              j["cases"].get<long long>());
  std::printf("  served and checked: %lld (max abs error %.3g, tolerance 1e-3 + 1e-3*|expected|)\n",
              j["served"].get<long long>(), j["max_abs_error"].get<double>());
  std::printf("  refused as expected (outside the domain, wrong rank/dtype): %lld\n",
              j["rejected_as_expected"].get<long long>());
  std::printf("  refused at the recompile limit: %lld\n", j["limit_refusals"].get<long long>());
  std::printf("  skipped over the memory budget of %s: %lld%s\n",
              FormatBytes(j["max_case_bytes"].get<uint64_t>()).c_str(), j["over_budget"].get<long long>(),
              j["over_budget"].get<long long>() == 0
                  ? ""
                  : absl::StrCat(" (largest estimate ", FormatBytes(j["largest_over_budget_bytes"].get<uint64_t>()),
                                 "; --max-case-bytes sets the budget)").c_str());
  std::printf("  allocation failures: %lld\n", j["allocation_failures"].get<long long>());
  std::printf("  compiles: %lld; distinct shapes: %lld; interpreter runs: %lld; evaluator checks: %lld\n",
              j["compiles"].get<long long>(), j["distinct_shapes"].get<long long>(),
              j["interpreter_runs"].get<long long>(), j["evaluator_checks"].get<long long>());
  std::printf("  sound failures: %lld; spurious recompiles: %lld; evaluator disagreements: %lld\n",
              j["sound_failures"].get<long long>(), j["spurious_recompiles"].get<long long>(),
              j["evaluator_disagreements"].get<long long>());
  std::printf("  bad requests refused without naming the dim or input: %lld\n", j["unclear_errors"].get<long long>());
  for (const auto& f : j["failures"]) {
    std::printf("FAILURE (%s) case %lld [%s]: %s\n  shape %s%s\n  %s\n  replay: %s\n",
                f["property"].get<std::string>().c_str(), f["case"].get<long long>(),
                f["kind"].get<std::string>().c_str(), Text(f["what"]).c_str(), Text(f["shape"]).c_str(),
                f.contains("minimized") ? absl::StrCat(", minimized ", Text(f["minimized"])).c_str() : "",
                Text(f["detail"]).c_str(), Text(f["replay"]).c_str());
  }
  if (!j.contains("mutants")) return;
  for (const auto& m : j["mutant_results"]) {
    std::printf("mutant entry %lld (%s) %s `%s`%s [%s]: %s%s\n", m["entry"].get<long long>(),
                m["tier"].get<std::string>().c_str(), m["mutation"].get<std::string>().c_str(), Text(m["atom"]).c_str(),
                m.contains("mutant") ? absl::StrCat(" -> `", Text(m["mutant"]), "`").c_str() : "",
                m["necessity"].get<std::string>().c_str(), m["result"].get<std::string>().c_str(),
                m.contains("killed_by")
                    ? absl::StrCat(" by ", m["killed_by"].get<std::string>(), " at ", Text(m["killing_shape"])).c_str()
                    : absl::StrCat(" (asked by ", Text(m["asked_by"]), ")").c_str());
  }
  std::printf("mutants: %lld, killed %lld; needed %lld, killed %lld: kill rate %.1f%%\n",
              j["mutants"].get<long long>(), j["killed"].get<long long>(), j["needed"].get<long long>(),
              j["killed_needed"].get<long long>(), 100.0 * j["kill_rate"].get<double>());
}

int Fail(int code, const std::string& message) { return ReportError("fuzz", code, message); }

int Fuzz(const std::vector<std::string>& raw_args) {
  FlagSpec spec;
  spec.valued = {"dim",  "cases", "seed", "policy", "recompile-limit", "case", "mutant-shapes", "min-kill-rate",
                 "reference-cache-mb", "max-case-bytes"};
  spec.switches = {"json", "mutate-guards"};
  AddDeviceFlags(&spec);
  absl::StatusOr<ParsedArgs> args = ParseArgs(raw_args, spec);
  absl::StatusOr<FuzzFlags> flags = args.ok() ? ParseFuzzFlags(*args) : absl::StatusOr<FuzzFlags>(args.status());
  if (!flags.ok()) return UsageError("fuzz", kUsage, std::string(flags.status().message()));
  absl::StatusOr<FuzzOutcome> outcome = RunFuzz(*flags);
  if (!outcome.ok()) return Fail(kExitUsage, std::string(outcome.status().message()));
  const nlohmann::ordered_json& report = outcome->report;
  if (flags->json) {
    std::printf("%s\n", JsonText(report).c_str());
  } else {
    PrintText(report);
  }
  return outcome->failed ? kExitNegative : kExitOk;
}

}  // namespace

SHAPESHIFT_COMMAND(fuzz, "fuzz", "fuzz a model's guards: soundness, tightness, evaluator agreement, mutants", kUsage,
                   Fuzz);

}  // namespace shapeshift::tools
