// TuneIntoFile: what `shapeshift tune` does, and `run`/`generate` on a
// model's first run on this machine (tools/lazy_tuning.h): measure a model's
// constant-weight GEMM classes on this machine (runtime/tuning/gemm_tuner.h)
// and merge the decisions into a tuning file.
//
// The classes are the ones the model's compiled Program would have
// (Program::SurveyShortRequestGemms on a copy of the imported graph: the
// compile's passes and engine choices, nothing compiled or packed; the
// caller's graph is left as it was). An existing
// file must be this machine's (runtime::CheckMachineKey): it is extended,
// never silently replaced; one that is not a tuning file, or is another
// machine's, is an error naming it. A class whose sweep an earlier run's
// budget cut (GemmChoice::resume_at_rows) goes on from where it stopped.
// With `only_missing` the classes the file already has whole are not
// measured again (nothing is measured when it has them all). With a `memo`
// (ModelMemo), a model the file already names is not even surveyed, and a
// model every class of which the file holds whole afterwards (none left out
// or cut by the budget) is named in it.
#ifndef SHAPESHIFT_TOOLS_TUNE_INTO_FILE_H_
#define SHAPESHIFT_TOOLS_TUNE_INTO_FILE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "runtime/tuning/gemm_tuner.h"
#include "runtime/tuning/gemm_tuning.h"
#include "shapes/shape_env.h"

namespace shapeshift::tools {

struct TuneOutcome {
  runtime::GemmTuning file;    // what `path` holds now
  runtime::TuneReport report;  // this run's measurements, every engine's (empty when none were needed)
  bool listed = false;         // the model was compiled to list its classes (false: the file named it)
  size_t model_classes = 0;    // the model's GEMM classes (when listed)
  size_t measured = 0;         // of them, measured whole now (report.cut: those the budget cut)
  bool written = false;        // `path` was (re)written
};

struct TuneIntoFileOptions {
  bool only_missing = false;
  // The model's memo text (ModelMemo); empty: none kept. The file names it
  // once per engine measured against (", against onednn-panels").
  std::string memo;
  // What the skinny GEMM is measured against, in turn (runtime::LongRows;
  // the budget, TunerOptions::budget_s, covers them all).
  std::vector<runtime::LongRows> against = {runtime::LongRows::kPlain};
  // Called before each engine's measurements (for progress output); may be
  // empty.
  std::function<void(runtime::LongRows)> on_against;
};

// `options.threads` 0 is resolved to omp_get_max_threads() (the file's key).
absl::StatusOr<TuneOutcome> TuneIntoFile(const Graph& graph, const ShapeEnv& env, const std::string& path,
                                         runtime::TunerOptions options, const TuneIntoFileOptions& how);

// What a tuning file's `models` calls MODEL_ARG: a built-in's name, or an
// ONNX file's canonical path, size and modification time (a changed file is
// another model); empty when the file cannot be stat-ed.
std::string ModelMemo(const std::string& model_arg);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_TUNE_INTO_FILE_H_
