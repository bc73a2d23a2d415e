// TuneIntoFile: what `shapeshift tune` does, and `run --tune-budget-s` on a
// first run: measure MODEL's constant-weight GEMM classes on this machine
// (runtime/tuning/gemm_tuner.h) and merge the decisions into a tuning file.
//
// The classes are the ones MODEL's compiled Program has
// (Program::short_request_gemms(), from a compile of its own import of
// MODEL). An existing file must be this machine's (runtime::CheckMachineKey):
// it is extended, never silently replaced; one that is not a tuning file, or
// is another machine's, is an error naming it. With `only_missing` the
// classes the file already has are not measured again (nothing is measured,
// and nothing written, when it has them all).
#ifndef SHAPESHIFT_TOOLS_TUNE_INTO_FILE_H_
#define SHAPESHIFT_TOOLS_TUNE_INTO_FILE_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/tuning/gemm_tuner.h"
#include "runtime/tuning/gemm_tuning.h"
#include "graph/onnx/importer.h"

namespace shapeshift::tools {

struct TuneOutcome {
  runtime::GemmTuning file;   // what `path` holds now
  runtime::TuneReport report;  // this run's measurements (empty when none were needed)
  size_t model_classes = 0;    // MODEL's GEMM classes
  size_t measured = 0;         // of them, measured now
};

// `options.threads` 0 is resolved to omp_get_max_threads() (the file's key).
absl::StatusOr<TuneOutcome> TuneIntoFile(const std::string& model_arg, const std::map<std::string, DimRange>& dims,
                                         const std::string& path, runtime::TunerOptions options, bool only_missing);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_TUNE_INTO_FILE_H_
