#include "tools/tune_into_file.h"

#include <omp.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/cpu/onednn_matmul.h"
#include "runtime/program.h"
#include "runtime/specialization/entry_compiler.h"

namespace shapeshift::tools {
namespace {

namespace cpu = ::shapeshift::codegen::cpu;

// The GEMM classes the model's polymorphic Program has, in plan order, and
// the bytes of all its constant GEMM weights (what one forward pass reads);
// the compile runs on a copy (PrepareTierModel), since passes rewrite the
// graph they compile.
struct ModelGemmList {
  std::vector<cpu::MatmulConfig> configs;
  int64_t weight_bytes = 0;
};
absl::StatusOr<ModelGemmList> ModelGemms(const Graph& graph, const ShapeEnv& env) {
  SS_ASSIGN_OR_RETURN(copy, runtime::PrepareTierModel(graph, env, {}, runtime::EntrySpec{}));
  absl::StatusOr<std::unique_ptr<runtime::Program>> program =
      runtime::Program::Compile(*copy.graph, *copy.env, runtime::CompileOptions{});
  if (!program.ok()) return program.status();
  ModelGemmList list;
  for (const runtime::ShortRequestGemm& g : (*program)->short_request_gemms()) {
    list.configs.push_back(g.config);
    list.weight_bytes += g.steps * g.config.k * g.config.n * static_cast<int64_t>(sizeof(float));
  }
  return list;
}

}  // namespace

std::string ModelMemo(const std::string& model_arg) {
  if (absl::StartsWith(model_arg, "builtin:")) return model_arg;
  std::error_code ec;
  const std::filesystem::path path = std::filesystem::absolute(model_arg, ec);
  struct stat st;
  if (ec || stat(path.c_str(), &st) != 0) return "";
  const int64_t mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  return absl::StrCat(path.string(), ", ", st.st_size, " bytes, modified ", mtime_ns);
}

absl::StatusOr<TuneOutcome> TuneIntoFile(const Graph& graph, const ShapeEnv& env, const std::string& path,
                                         runtime::TunerOptions options, const TuneIntoFileOptions& how) {
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
  if (how.only_missing && !how.memo.empty() && outcome.file.models.contains(how.memo)) return outcome;
  SS_ASSIGN_OR_RETURN(gemms, ModelGemms(graph, env));
  std::vector<cpu::MatmulConfig> configs = std::move(gemms.configs);
  outcome.listed = true;
  outcome.model_classes = configs.size();
  // Weights as cold as the model's own forward pass leaves them: a model
  // whose weights fit in the caches is measured with them there.
  options.cold_bytes = std::min(options.cold_bytes, std::max<int64_t>(gemms.weight_bytes, 1));
  if (how.only_missing) {
    std::vector<cpu::MatmulConfig> missing;
    for (const cpu::MatmulConfig& c : configs) {
      if (!outcome.file.gemms.contains(cpu::DescribeConfig(c))) missing.push_back(c);
    }
    configs = std::move(missing);
  }
  if (!configs.empty()) {
    SS_ASSIGN_OR_RETURN(report, runtime::TuneGemms(configs, options));
    outcome.file.machine = report.tuning.machine;
    for (const auto& [config, choice] : report.tuning.gemms) outcome.file.gemms[config] = choice;
    outcome.measured = report.tuning.gemms.size();
    outcome.report = std::move(report);
  } else if (outcome.file.machine.cpu.empty()) {
    outcome.file.machine = runtime::HostMachineKey(options.isa, options.threads);  // a new file for a GEMM-less model
  }
  // Named only when nothing was left out: a later run measures the rest.
  const bool complete = outcome.report.skipped.empty();
  const bool memo_new = complete && !how.memo.empty() && outcome.file.models.insert(how.memo).second;
  if (outcome.measured == 0 && !memo_new) return outcome;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat(path, ": cannot create its directory: ", ec.message()));
  if (absl::Status s = runtime::WriteTuningFile(outcome.file, path); !s.ok()) return s;
  outcome.written = true;
  return outcome;
}

}  // namespace shapeshift::tools
