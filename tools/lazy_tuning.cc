#include "tools/lazy_tuning.h"

#include <omp.h>

#include <filesystem>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/cpu/skinny_matmul.h"
#include "tools/tune_into_file.h"

namespace shapeshift::tools {
namespace {

namespace cpu = ::shapeshift::codegen::cpu;

// Measures the model's classes the file at `path` lacks (none when the file
// names the model); a note when anything was listed, measured or failed.
void TuneMissing(const std::string& path, const std::string& model_arg,
                 const ImportedModel& model, cpu::SkinnyMatmul::Isa isa, runtime::LongRows long_rows, int threads,
                 double budget_s, std::vector<std::string>& notes) {
  runtime::TunerOptions options;
  options.isa = isa;
  options.threads = threads;
  options.budget_s = budget_s;
  TuneIntoFileOptions how;
  how.only_missing = true;
  how.memo = ModelMemo(model_arg);
  how.against = {long_rows};
  absl::StatusOr<TuneOutcome> outcome = TuneIntoFile(*model.graph, *model.env, path, options, how);
  if (!outcome.ok()) {
    notes.push_back(absl::StrCat("GEMM tuning: not tuned: ", outcome.status().message()));
    return;
  }
  if (!outcome->listed) return;  // the file names the model: its classes are all there
  std::string note =
      outcome->measured == 0 && outcome->report.cut.empty()
          ? absl::StrCat("GEMM tuning: this model's ", outcome->model_classes, " GEMM class(es) were already in ", path)
          : absl::StrCat("GEMM tuning: measured ", outcome->measured, " of this model's ", outcome->model_classes,
                         " GEMM class(es) (those this machine's tuning lacked) against ", runtime::LongRowsName(long_rows), " in ",
                         absl::SixDigits(outcome->report.seconds), " s (budget ", budget_s, " s) into ", path,
                         "; its weight copies (", (outcome->report.peak_copy_bytes + (1 << 20) - 1) >> 20,
                         " MiB at most, for its largest class) count in this process's peak RSS");
  if (!outcome->report.cut.empty()) {
    absl::StrAppend(&note,
                    "; cut by the budget (built-in defaults kept, a later run goes on from where each stopped): ",
                    absl::StrJoin(outcome->report.cut, ", "));
  }
  if (!outcome->report.skipped.empty()) {
    absl::StrAppend(&note, "; not reached within the budget (built-in defaults kept, a later run measures them): ",
                    absl::StrJoin(outcome->report.skipped, ", "));
  }
  notes.push_back(std::move(note));
}

}  // namespace

absl::StatusOr<double> TuneBudgetFromFlags(const ParsedArgs& args) {
  if (!args.Has("tune-budget-s")) return kDefaultTuneBudgetS;
  double budget = 0;
  if (!absl::SimpleAtod(args.Get("tune-budget-s"), &budget) || !(budget >= 0) || budget > 3600) {
    return absl::InvalidArgumentError("--tune-budget-s: expected seconds in [0, 3600] (0: no lazy tuning)");
  }
  return budget;
}

CachedTuning TuningFromCacheDir(const std::string& cache_dir, const std::string& model_arg,
                                const ImportedModel& model, double budget_s, bool long_rows_on_panels,
                                int threads) {
  CachedTuning out;
  std::optional<cpu::SkinnyMatmul::Isa> isa = cpu::SkinnyMatmul::HostIsa();
  if (!isa || cache_dir.empty()) return out;
  const runtime::MachineKey host = runtime::HostMachineKey(*isa, threads > 0 ? threads : omp_get_max_threads());
  const std::string path = runtime::TuningPathInCache(cache_dir, host);
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  absl::Status usable = absl::OkStatus();
  absl::StatusOr<runtime::GemmTuning> tuning = absl::NotFoundError("");
  if (exists) {
    tuning = runtime::ReadTuningFile(path);
    usable = tuning.ok() ? runtime::CheckMachineKey(tuning->machine, host) : tuning.status();
  }
  if (!usable.ok()) {
    out.notes.push_back(absl::StrCat("ignored the cache dir's GEMM tuning ", path, ": ", usable.message(),
                                     " (delete it to tune again)"));
    return out;
  }
  if (budget_s > 0) {
    TuneMissing(path, model_arg, model, *isa, runtime::LongRowsFor(long_rows_on_panels, *isa), host.threads, budget_s,
                out.notes);
    if (std::filesystem::exists(path, ec)) tuning = runtime::ReadTuningFile(path);
  }
  if (!tuning.ok()) return out;  // no file, and nothing measured into one
  out.tuning = std::make_shared<const runtime::GemmTuning>(*std::move(tuning));
  out.file = path;
  out.notes.push_back(absl::StrCat("GEMM choices from this machine's tuning in the cache dir, ", path,
                                   " (measured by `shapeshift tune` or a model's first run here)"));
  return out;
}

}  // namespace shapeshift::tools
