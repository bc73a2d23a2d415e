#include "tools/tune_into_file.h"

#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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
// the survey runs on a copy (PrepareTierModel), since passes rewrite the
// graph they compile. A survey, not a compile: a compile would pack a second
// copy of every weight beside the first (8.2 GB peak for a 4.4 GB model).
struct ModelGemmList {
  std::vector<cpu::MatmulConfig> configs;
  int64_t weight_bytes = 0;
};
absl::StatusOr<ModelGemmList> ModelGemms(const Graph& graph, const ShapeEnv& env) {
  SS_ASSIGN_OR_RETURN(copy, runtime::PrepareTierModel(graph, env, {}, runtime::EntrySpec{}));
  SS_ASSIGN_OR_RETURN(survey, runtime::Program::SurveyShortRequestGemms(*copy.graph, *copy.env, runtime::CompileOptions{}));
  ModelGemmList list;
  for (const runtime::ShortRequestGemm& g : survey.gemms) {
    list.configs.push_back(g.config);
    list.weight_bytes += g.steps * g.config.k * g.config.n * static_cast<int64_t>(sizeof(float));
  }
  return list;
}

// Adds one engine's measurements to the outcome's report.
void MergeReport(runtime::TuneReport report, runtime::LongRows long_rows, runtime::TuneReport& into) {
  if (!report.tuning.machine.cpu.empty()) into.tuning.machine = report.tuning.machine;
  for (auto& [config, choice] : report.tuning.Choices(long_rows)) into.tuning.Choices(long_rows)[config] = choice;
  into.skipped.insert(into.skipped.end(), report.skipped.begin(), report.skipped.end());
  into.cut.insert(into.cut.end(), report.cut.begin(), report.cut.end());
  into.inapplicable.insert(into.inapplicable.end(), report.inapplicable.begin(), report.inapplicable.end());
  into.seconds += report.seconds;
  into.peak_copy_bytes = std::max(into.peak_copy_bytes, report.peak_copy_bytes);
}

}  // namespace

std::string ModelMemo(const std::string& model_arg) {
  if (absl::StartsWith(model_arg, "builtin:")) return model_arg;
  std::error_code ec;
  // One spelling per file ("a/../m.onnx", a symbolic link and the absolute
  // path are one model).
  const std::filesystem::path path = std::filesystem::weakly_canonical(std::filesystem::absolute(model_arg, ec), ec);
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
  auto memo_for = [&](runtime::LongRows long_rows) {
    return how.memo.empty() ? std::string() : absl::StrCat(how.memo, ", against ", runtime::LongRowsName(long_rows));
  };
  if (how.only_missing && !how.memo.empty() &&
      std::all_of(how.against.begin(), how.against.end(),
                  [&](runtime::LongRows l) { return outcome.file.models.contains(memo_for(l)); })) {
    return outcome;
  }
  // Where the file goes must take it before anything is measured: a run
  // that cannot keep its measurements would pay for them on every start.
  const std::filesystem::path dir = std::filesystem::path(path).parent_path().empty()
                                        ? std::filesystem::path(".")
                                        : std::filesystem::path(path).parent_path();
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat(path, ": cannot create its directory: ", ec.message()));
  if (access(dir.c_str(), W_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": its directory is not writable: ", std::strerror(errno)));
  }
  SS_ASSIGN_OR_RETURN(gemms, ModelGemms(graph, env));
  outcome.listed = true;
  outcome.model_classes = gemms.configs.size();
  if (outcome.file.machine.cpu.empty()) outcome.file.machine = runtime::HostMachineKey(options.isa, options.threads);
  // Weights as cold as the model's own forward pass leaves them: a model
  // whose weights fit in the caches is measured with them there.
  options.cold_bytes = std::min(options.cold_bytes, std::max<int64_t>(gemms.weight_bytes, 1));
  const double budget_s = options.budget_s;
  bool memo_new = false;
  for (runtime::LongRows long_rows : how.against) {
    std::map<std::string, runtime::GemmChoice>& choices = outcome.file.Choices(long_rows);
    std::vector<cpu::MatmulConfig> configs;
    options.resume.clear();
    for (const cpu::MatmulConfig& c : gemms.configs) {
      auto known = choices.find(cpu::DescribeConfig(c));
      // A sweep an earlier run's budget cut goes on where it stopped.
      if (known != choices.end() && !known->second.complete()) options.resume.insert(*known);
      if (!how.only_missing || known == choices.end() || !known->second.complete()) configs.push_back(c);
    }
    options.long_rows = long_rows;
    if (budget_s > 0) options.budget_s = std::max(budget_s - outcome.report.seconds, 1e-9);
    runtime::TuneReport report;
    if (!configs.empty()) {
      if (how.on_against) how.on_against(long_rows);
      SS_ASSIGN_OR_RETURN(measured, runtime::TuneGemms(configs, options));
      report = std::move(measured);
    }
    for (const auto& [config, choice] : report.tuning.Choices(long_rows)) choices[config] = choice;
    outcome.measured += report.tuning.Choices(long_rows).size() - report.cut.size();
    // Named only when nothing was left out or cut: a later run measures the rest.
    if (report.skipped.empty() && report.cut.empty() && !how.memo.empty()) {
      memo_new |= outcome.file.models.insert(memo_for(long_rows)).second;
    }
    MergeReport(std::move(report), long_rows, outcome.report);
  }
  if (outcome.measured == 0 && outcome.report.cut.empty() && !memo_new) return outcome;
  if (absl::Status s = runtime::WriteTuningFile(outcome.file, path); !s.ok()) return s;
  outcome.written = true;
  return outcome;
}

}  // namespace shapeshift::tools
