#include "tools/tune_into_file.h"

#include <omp.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/cpu/onednn_matmul.h"
#include "runtime/program.h"
#include "tools/model_loader.h"

namespace shapeshift::tools {
namespace {

namespace cpu = ::shapeshift::codegen::cpu;

// The GEMM classes MODEL's Program has, in plan order.
absl::StatusOr<std::vector<cpu::MatmulConfig>> ModelGemms(const std::string& model_arg,
                                                          const std::map<std::string, DimRange>& dims) {
  SS_ASSIGN_OR_RETURN(model, LoadModel(model_arg, dims));
  absl::StatusOr<std::unique_ptr<runtime::Program>> program =
      runtime::Program::Compile(*model.graph, *model.env, runtime::CompileOptions{});
  if (!program.ok()) return program.status();
  std::vector<cpu::MatmulConfig> configs;
  for (const runtime::ShortRequestGemm& g : (*program)->short_request_gemms()) configs.push_back(g.config);
  return configs;
}

}  // namespace

absl::StatusOr<TuneOutcome> TuneIntoFile(const std::string& model_arg, const std::map<std::string, DimRange>& dims,
                                         const std::string& path, runtime::TunerOptions options, bool only_missing) {
  if (options.threads <= 0) options.threads = omp_get_max_threads();
  TuneOutcome outcome;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    SS_ASSIGN_OR_RETURN(existing, runtime::ReadTuningFile(path));
    if (absl::Status s = runtime::CheckMachineKey(existing.machine, runtime::HostMachineKey(options.isa, options.threads));
        !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(path, ": ", s.message(), " (or write another file)"));
    }
    outcome.file = std::move(existing);
  }
  SS_ASSIGN_OR_RETURN(configs, ModelGemms(model_arg, dims));
  outcome.model_classes = configs.size();
  if (only_missing) {
    std::vector<cpu::MatmulConfig> missing;
    for (const cpu::MatmulConfig& c : configs) {
      if (!outcome.file.gemms.contains(cpu::DescribeConfig(c))) missing.push_back(c);
    }
    configs = std::move(missing);
    if (configs.empty()) return outcome;
  }
  SS_ASSIGN_OR_RETURN(report, runtime::TuneGemms(configs, options));
  outcome.file.machine = report.tuning.machine;
  for (const auto& [config, choice] : report.tuning.gemms) outcome.file.gemms[config] = choice;
  outcome.measured = report.tuning.gemms.size();
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat(path, ": cannot create its directory: ", ec.message()));
  if (absl::Status s = runtime::WriteTuningFile(outcome.file, path); !s.ok()) return s;
  outcome.report = std::move(report);
  return outcome;
}

}  // namespace shapeshift::tools
