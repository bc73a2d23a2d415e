// The GEMM choices `run` and `generate` compile with when no --tuning FILE is
// given: this machine's tuning file in the cache dir
// (runtime::TuningPathInCache), measured lazily — the first time a model is
// run here, its constant-weight GEMM classes the file lacks are measured
// (tools/tune_into_file.h) within a stated budget, before the session
// compiles, and the file names the model so that later runs neither measure
// nor list again (their cost: one stat and one small JSON read).
//
// What a first run pays: a survey of a copy of the model to list its classes
// (Program::SurveyShortRequestGemms: no kernel compiled, no weight packed or
// paged in, so no second copy of the weights) and the measurement, at most
// `budget_s` seconds of it (BERT-base's 4 classes: about 2 s on the machine
// of bench/RESULTS.md); classes the budget did not reach keep the built-in
// defaults and are measured by a later run. The notes say which of these
// happened. A file that cannot be used (damaged, another machine's) is
// ignored with a note and never overwritten: delete it to tune again.
#ifndef SHAPESHIFT_TOOLS_LAZY_TUNING_H_
#define SHAPESHIFT_TOOLS_LAZY_TUNING_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/onnx/importer.h"
#include "runtime/tuning/gemm_tuning.h"
#include "tools/args.h"

namespace shapeshift::tools {

// `--tune-budget-s`'s default: seconds of measurement a model's first run on
// this machine may spend (0 turns lazy tuning off).
inline constexpr double kDefaultTuneBudgetS = 10;

// `--tune-budget-s S` (seconds in [0, 3600]), or the default when absent.
absl::StatusOr<double> TuneBudgetFromFlags(const ParsedArgs& args);

struct CachedTuning {
  std::shared_ptr<const runtime::GemmTuning> tuning;  // null: the built-in defaults
  std::string file;                                   // the file it came from ("" when none)
  std::vector<std::string> notes;                     // what was measured, used or ignored, and why
};

// `model`: MODEL_ARG as imported, not yet compiled (left as it is).
// `long_rows_on_panels`: whether the session's other rows read the skinny
// GEMM's panels (a weights dir, or --panel-long-rows): the classes are
// measured against that engine (runtime::LongRows; the panels need the
// AVX-512 core, else the runtime-M GEMM is what runs and is measured).
// `threads`: the team the session compiles with (CompileOptions::threads; 0:
// omp_get_max_threads()), part of the file's key. On a CPU with no skinny
// GEMM core there is nothing to tune: no tuning, no notes.
CachedTuning TuningFromCacheDir(const std::string& cache_dir, const std::string& model_arg,
                                const ImportedModel& model, double budget_s, bool long_rows_on_panels,
                                int threads = 0);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_LAZY_TUNING_H_
