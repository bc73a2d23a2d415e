// `shapeshift tune MODEL [--dim name=lo..hi]... [-o FILE | --cache-dir DIR] [--isa avx512|avx2]
//                  [--threads N] [--budget-s S] [--repeats N] [--rows 1,2,4,...] [--json]`
//
// Measures, on this machine, which engine serves short requests of each of
// MODEL's constant-weight GEMM classes (runtime/tuning/gemm_tuner.h) and
// writes the decisions as a tuning file (runtime/tuning/gemm_tuning.h) that
// `run --tuning FILE` (CompileOptions::tuning) applies. The classes are the
// ones MODEL's compiled Program has (Program::short_request_gemms()). When
// FILE exists and was made for this machine, its other classes are kept (one
// file serves many models); a FILE made elsewhere, or not a tuning file, is an
// error, never overwritten. Without -o the file is this machine's place in
// the compile cache directory (--cache-dir, default $XDG_CACHE_HOME/shapeshift;
// runtime::TuningPathInCache), where `run` finds it without --tuning.
//
// Each class is measured against both engines a Program may run its other
// rows on (runtime::LongRows): oneDNN's runtime-M GEMM over the plain
// weights, and, with the AVX-512 core, its blocked GEMM over the skinny
// GEMM's panels (a session with a weights dir, run's default).
//
// Prints, per class, the rows the skinny GEMM now serves against the built-in
// default (SkinnyOptions: 32) and the prefetch distance; `--json` as one
// object. Exit 0 written, 2 bad usage, a model that does not compile, or a
// FILE that cannot be read or written.
#include <omp.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "runtime/program.h"
#include "runtime/tuning/gemm_tuner.h"
#include "runtime/tuning/gemm_tuning.h"
#include "tools/args.h"
#include "tools/command.h"
#include "graph/constant_spill.h"
#include "tools/model_loader.h"
#include "tools/run_cache_dir.h"
#include "tools/tune_into_file.h"
#include "tools/terminal_text.h"

namespace shapeshift::tools {
namespace {

namespace cpu = codegen::cpu;

constexpr char kUsage[] =
    "usage: shapeshift tune MODEL [--dim name=lo..hi]... [-o FILE | --cache-dir DIR] [--isa avx512|avx2]\n"
    "                       [--threads N] [--budget-s S] [--repeats N] [--rows 1,2,4,...] [--json]\n"
    "                       [--weights-dir DIR | --weights-in-memory]\n"
    "  Measures which engine serves short requests of each of MODEL's constant-weight GEMMs on this\n"
    "  machine (shapeshift's skinny GEMM or oneDNN's, by rows) and writes FILE, for `run --tuning FILE`;\n"
    "  without -o, into the compile cache dir (default $XDG_CACHE_HOME/shapeshift), where `run` finds it.\n"
    "  A FILE made here already keeps its other GEMMs. --isa picks the skinny GEMM's core (default: the\n"
    "  widest this CPU has); --threads the team (default OMP_NUM_THREADS); --budget-s bounds the run\n"
    "  (a GEMM whose measurement would end past it is cut, or not started: it keeps the default, is named,\n"
    "  and the next tune or run goes on from where it stopped). Each class is measured against both engines a\n"
    "  run may serve its other rows on: oneDNN's runtime-M GEMM over the plain weights, and (AVX-512) its\n"
    "  blocked GEMM over the skinny GEMM's panels, which runs with a weights dir (run's default).\n"
    "  The model's weights go to an unlinked file in the weights dir, as for run (default: weights/ of the\n"
    "  cache dir), and are never read: tuning measures copies of its own, so a model larger than this\n"
    "  machine's memory tunes too. --weights-in-memory loads them into memory instead.\n"
    "  Exit: 0 written, 2 bad usage, a model that does not compile, or a FILE that cannot be used.\n";

int Fail(const std::string& message) { return ReportError("tune", kExitUsage, message); }
int Usage(const std::string& message) { return UsageError("tune", kUsage, message); }

absl::StatusOr<runtime::TunerOptions> TunerOptionsFromFlags(const ParsedArgs& args) {
  runtime::TunerOptions options;
  std::optional<cpu::SkinnyMatmul::Isa> host = cpu::SkinnyMatmul::HostIsa();
  if (args.Has("isa")) {
    const std::string isa = args.Get("isa");
    if (isa != "avx512" && isa != "avx2") return absl::InvalidArgumentError("--isa: expected avx512 or avx2");
    options.isa = isa == "avx2" ? cpu::SkinnyMatmul::Isa::kAvx2 : cpu::SkinnyMatmul::Isa::kAvx512;
  } else if (host) {
    options.isa = *host;
  } else {
    return absl::FailedPreconditionError("this CPU has neither AVX-512F nor AVX2+FMA: nothing to tune");
  }
  auto integer = [&](const char* flag, int64_t lo, int64_t hi, int64_t* out) -> absl::Status {
    if (!args.Has(flag)) return absl::OkStatus();
    if (!absl::SimpleAtoi(args.Get(flag), out) || *out < lo || *out > hi) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": expected an integer in ", lo, "..", hi));
    }
    return absl::OkStatus();
  };
  int64_t threads = 0, repeats = options.repeats;
  if (absl::Status s = integer("threads", 1, 1024, &threads); !s.ok()) return s;
  if (absl::Status s = integer("repeats", 1, 1000, &repeats); !s.ok()) return s;
  options.threads = static_cast<int>(threads);
  options.repeats = static_cast<int>(repeats);
  if (args.Has("budget-s")) {
    if (!absl::SimpleAtod(args.Get("budget-s"), &options.budget_s) || !(options.budget_s > 0)) {
      return absl::InvalidArgumentError("--budget-s: expected seconds > 0");
    }
  }
  if (args.Has("rows")) {
    options.rows.clear();
    for (absl::string_view r : absl::StrSplit(args.Get("rows"), ',')) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(r, &v)) return absl::InvalidArgumentError(absl::StrCat("--rows: '", r, "' is not an integer"));
      options.rows.push_back(v);
    }
  }
  return options;
}

void PrintChoice(const runtime::GemmChoice& c) {
  const int64_t old_rows = cpu::SkinnyOptions().max_rows;
  if (!c.complete()) {
    std::printf("  %s: cut by the budget before %lld rows (default kept; the next tune or run goes on from there)\n",
                c.config.c_str(), static_cast<long long>(c.resume_at_rows));
  } else if (c.skinny_max_rows == 0) {
    std::printf("  %s: oneDNN for every row count (default: skinny GEMM for 1..%lld rows)\n", c.config.c_str(),
                static_cast<long long>(old_rows));
  } else {
    std::printf("  %s: skinny GEMM for %lld..%lld rows (default 1..%lld), prefetch %lld rows\n", c.config.c_str(),
                static_cast<long long>(c.skinny_min_rows), static_cast<long long>(c.skinny_max_rows),
                static_cast<long long>(old_rows), static_cast<long long>(c.prefetch_rows));
  }
  for (const runtime::GemmTiming& t : c.measured) {
    std::printf("      m=%-4lld skinny %9.1f us  onednn %9.1f us  (%.2fx)\n", static_cast<long long>(t.m), t.skinny_us,
                t.onednn_us, t.onednn_us > 0 ? t.skinny_us / t.onednn_us : 0.0);
  }
  std::fflush(stdout);
}

int RunTune(const std::vector<std::string>& raw) {
  std::vector<std::string> argv = raw;
  for (std::string& a : argv) {
    if (a == "-o") a = "--output";
  }
  FlagSpec spec;
  spec.valued = {"dim", "output", "isa", "threads", "budget-s", "repeats", "rows", kCacheDirFlag, kWeightsDirFlag};
  spec.switches = {"json", kNoCacheFlag, kWeightsInMemoryFlag};
  absl::StatusOr<ParsedArgs> args = ParseArgs(argv, spec);
  if (!args.ok()) return Usage(std::string(args.status().message()));
  if (args->positional.size() != 1) return Usage("expected exactly one MODEL argument");
  absl::StatusOr<std::map<std::string, DimRange>> dims = ParseDimFlags(args->All("dim"));
  if (!dims.ok()) return Fail(std::string(dims.status().message()));
  absl::StatusOr<runtime::TunerOptions> options = TunerOptionsFromFlags(*args);
  if (!options.ok()) return Fail(std::string(options.status().message()));
  const bool json = args->Has("json");
  const int threads = options->threads > 0 ? options->threads : omp_get_max_threads();
  std::string output = args->Get("output");
  const bool in_cache = output.empty();
  std::string cache_dir;
  if (in_cache) {
    absl::StatusOr<std::string> chosen = CacheDirFromFlags(*args);
    if (!chosen.ok()) return Usage(std::string(chosen.status().message()));
    if (chosen->empty()) return Usage("--no-cache: give -o FILE (there is no cache dir to write the tuning into)");
    cache_dir = *std::move(chosen);
    output = runtime::TuningPathInCache(cache_dir, runtime::HostMachineKey(options->isa, threads));
  } else if (args->Has(kCacheDirFlag) || args->Has(kNoCacheFlag)) {
    return Usage("give -o FILE or --cache-dir DIR / --no-cache, not both");
  }
  absl::StatusOr<std::string> weights_dir = WeightsDirFromFlags(*args, cache_dir);
  if (!weights_dir.ok()) return Usage(std::string(weights_dir.status().message()));
  options->threads = threads;
  if (!json) {
    std::printf("tuning the GEMM classes of %s on the %s core, %d thread(s)\n", Escaped(args->positional[0]).c_str(),
                cpu::IsaName(options->isa), threads);
    options->on_choice = PrintChoice;
  }
  // Straight from the file into the spill, as for run: never resident.
  std::unique_ptr<ConstantSpill> spill = OpenSpillIfAny(*weights_dir);
  absl::StatusOr<ImportedModel> model = LoadModel(args->positional[0], *dims, spill.get());
  if (!model.ok()) return Fail(std::string(model.status().message()));
  TuneIntoFileOptions how;
  how.memo = ModelMemo(args->positional[0]);
  // Against both engines a Program may run the other rows on (runs with a
  // weights dir, run's default, read the panels); the panels need AVX-512.
  how.against = {runtime::LongRows::kPlain};
  if (runtime::LongRowsFor(true, options->isa) == runtime::LongRows::kPanels) {
    how.against.push_back(runtime::LongRows::kPanels);
  }
  if (!json) {
    how.on_against = [](runtime::LongRows long_rows) {
      std::printf("against %s:\n", long_rows == runtime::LongRows::kPanels
                                       ? "oneDNN's blocked GEMM over the skinny GEMM's panels (runs with a weights dir)"
                                       : "oneDNN's runtime-M GEMM over the plain weights");
    };
  }
  absl::StatusOr<TuneOutcome> outcome = TuneIntoFile(*model->graph, *model->env, output, *options, how);
  if (!outcome.ok()) return Fail(std::string(outcome.status().message()));
  const runtime::TuneReport* report = &outcome->report;
  const runtime::GemmTuning& kept = outcome->file;

  if (json) {
    nlohmann::ordered_json out;
    out["file"] = output;
    out["isa"] = cpu::IsaName(options->isa);
    out["threads"] = threads;
    out["seconds"] = report->seconds;
    out["peak_copy_bytes"] = report->peak_copy_bytes;
    out["default_skinny_max_rows"] = cpu::SkinnyOptions().max_rows;
    out["default_prefetch_rows"] = cpu::SkinnyOptions().prefetch_rows;
    for (runtime::LongRows long_rows : how.against) {
      nlohmann::ordered_json gemms = nlohmann::ordered_json::array();
      for (const auto& [config, choice] : report->tuning.Choices(long_rows)) {
        gemms.push_back({{"config", config},
                         {"skinny_min_rows", choice.skinny_min_rows},
                         {"skinny_max_rows", choice.skinny_max_rows},
                         {"prefetch_rows", choice.prefetch_rows},
                         {"resume_at_rows", choice.resume_at_rows}});
      }
      out[long_rows == runtime::LongRows::kPanels ? "tuned_against_panels" : "tuned"] = gemms;
    }
    out["skipped"] = report->skipped;
    out["cut"] = report->cut;
    out["inapplicable"] = report->inapplicable;
    out["gemms_in_file"] = kept.gemms.size();
    std::printf("%s\n", JsonText(out).c_str());
    return kExitOk;
  }
  for (const std::string& s : report->inapplicable) std::printf("  %s: no skinny path (oneDNN serves it)\n", s.c_str());
  for (const std::string& s : report->skipped) std::printf("  %s: not reached within --budget-s (default kept)\n", s.c_str());
  std::printf("wrote %s: %zu GEMM class(es) (%zu choice(s) measured now) in %.1f s, holding at most %.0f MiB of weight "
              "copies at a time; %s\n",
              Escaped(output).c_str(), kept.gemms.size(), outcome->measured, report->seconds,
              static_cast<double>(report->peak_copy_bytes) / (1 << 20),
              in_cache ? "`shapeshift run` with this cache dir applies it"
                       : absl::StrCat("use it with `shapeshift run --tuning ", Escaped(output), "`").c_str());
  return kExitOk;
}

}  // namespace

SHAPESHIFT_COMMAND(tune, "tune", "measure this machine's GEMM engine choices for a model and write a tuning file",
                   kUsage, RunTune);

}  // namespace shapeshift::tools
