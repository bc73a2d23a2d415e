// `shapeshift run MODEL [--dim name=lo..hi]... [--input NAME=SHAPE]... [--bind SYMBOL=N]...
//                  [--repeats N] [--seed S] [--check] [--json] [--print-after=PASS]...`
//
// Compiles MODEL (`path.onnx` or `builtin:bert|gpt2|gpt2-kv`, see
// tools/model_loader.h) once for the declared ranges, then runs one request
// shape: `--input` gives an input's shape (`input_ids=2x128`), `--bind` a dim
// directly (`past=16`), other dims take their declared minimum. Inputs are
// deterministic (`--seed`): token ids inside the vocabulary, masks of ones,
// floats N(0, 1). It prints the output shapes and checksums, the compile
// time and kernel counts, and first-run / median / p99 latency over
// `--repeats` runs; `--check` also runs the reference interpreter and
// reports the largest absolute error. `--json` prints one JSON object (the
// contract bench/peers/shapeshift_bench.py reads: median_ms, p99_ms,
// peak_rss_mb, compile_s).
//
// Exit codes: 0 ok; 1 `--check` found a mismatch; 2 bad usage, a model that
// cannot be loaded or compiled, or a request outside the declared ranges.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/interpreter.h"
#include "nlohmann/json.hpp"
#include "passes/pipeline.h"
#include "runtime/session.h"
#include "tools/args.h"
#include "tools/command.h"
#include "tools/model_loader.h"

namespace shapeshift::tools {
namespace {

constexpr char kUsage[] =
    "usage: shapeshift run MODEL [--dim name=lo..hi]... [--input NAME=SHAPE]... [--bind SYMBOL=N]...\n"
    "                      [--repeats N] [--seed S] [--check] [--json] [--print-after=PASS]...\n"
    "  MODEL: path/to/model.onnx or builtin:bert, builtin:gpt2, builtin:gpt2-kv\n";

// A computed answer's tolerance when --check compares against the interpreter.
constexpr double kCheckRtol = 1e-3;
constexpr double kCheckAtol = 1e-3;

struct RunFlags {
  std::string model;
  std::map<std::string, DimRange> dims;
  std::vector<std::string> input_shapes;
  std::vector<std::string> bindings;
  std::vector<std::string> print_after;
  int64_t repeats = 10;
  uint64_t seed = 1;
  bool check = false;
  bool json = false;
};

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "shapeshift run: %s\n", message.c_str());
  return code;
}

absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& raw_args) {
  FlagSpec spec;
  spec.valued = {"dim", "input", "bind", "repeats", "seed", "print-after"};
  spec.switches = {"check", "json"};
  absl::StatusOr<ParsedArgs> args = ParseArgs(raw_args, spec);
  if (!args.ok()) return args.status();
  if (args->positional.size() != 1) return absl::InvalidArgumentError("expected exactly one MODEL argument");
  RunFlags flags;
  flags.model = args->positional[0];
  absl::StatusOr<std::map<std::string, DimRange>> dims = ParseDimFlags(args->All("dim"));
  if (!dims.ok()) return dims.status();
  flags.dims = *dims;
  flags.input_shapes = args->All("input");
  flags.bindings = args->All("bind");
  flags.print_after = args->All("print-after");
  std::vector<std::string> passes = passes::PipelinePassNames();
  for (const std::string& pass : flags.print_after) {
    if (std::find(passes.begin(), passes.end(), pass) == passes.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--print-after ", pass, ": no such pass (passes: ", absl::StrJoin(passes, ", "), ")"));
    }
  }
  if (!absl::SimpleAtoi(args->Get("repeats", "10"), &flags.repeats) || flags.repeats < 1) {
    return absl::InvalidArgumentError("--repeats: expected an integer >= 1");
  }
  if (!absl::SimpleAtoi(args->Get("seed", "1"), &flags.seed)) {
    return absl::InvalidArgumentError("--seed: expected a non-negative integer");
  }
  flags.check = args->Has("check");
  flags.json = args->Has("json");
  return flags;
}

double PeakRssMb() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  size_t index = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

nlohmann::ordered_json OutputSummary(const std::string& name, const Tensor& t) {
  double sum = 0, abs_sum = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = t.GetAsDouble(i);
    sum += v;
    abs_sum += std::abs(v);
  }
  return {{"name", name}, {"dtype", std::string(DTypeName(t.dtype()))}, {"shape", t.shape()},
          {"sum", sum},   {"abs_sum", abs_sum}};
}

// Largest |actual - expected| and whether every element is within tolerance.
std::pair<double, bool> Compare(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  double worst = 0;
  bool within = actual.size() == expected.size();
  for (size_t o = 0; o < actual.size() && o < expected.size(); ++o) {
    if (actual[o].shape() != expected[o].shape()) return {std::numeric_limits<double>::infinity(), false};
    for (int64_t i = 0; i < actual[o].num_elements(); ++i) {
      double a = actual[o].GetAsDouble(i), e = expected[o].GetAsDouble(i);
      double error = std::abs(a - e);
      worst = std::max(worst, error);
      within = within && error <= kCheckAtol + kCheckRtol * std::abs(e);
    }
  }
  return {worst, within};
}

void PrintText(const nlohmann::ordered_json& r) {
  std::printf("model: %s\n", r["model"].get<std::string>().c_str());
  std::printf("request dims:");
  for (const auto& [name, value] : r["dims"].items()) std::printf(" %s=%lld", name.c_str(), value.get<long long>());
  std::printf("\ncompile: %.1f ms, %lld compile(s), %lld kernel(s), %lld GEMM primitive(s)\n",
              r["compile_ms"].get<double>(), r["compiles"].get<long long>(), r["kernels"].get<long long>(),
              r["gemms"].get<long long>());
  for (const auto& out : r["outputs"]) {
    std::printf("output %s: %s%s sum=%.6g abs_sum=%.6g\n", out["name"].get<std::string>().c_str(),
                out["dtype"].get<std::string>().c_str(), out["shape"].dump().c_str(), out["sum"].get<double>(),
                out["abs_sum"].get<double>());
  }
  std::printf("latency: first %.3f ms, median %.3f ms, p99 %.3f ms over %lld run(s)\n",
              r["first_run_ms"].get<double>(), r["median_ms"].get<double>(), r["p99_ms"].get<double>(),
              r["repeats"].get<long long>());
  if (r.contains("max_abs_error")) {
    std::printf("check vs interpreter: max abs error %.3g (%s)\n", r["max_abs_error"].get<double>(),
                r["check_passed"].get<bool>() ? "ok" : "MISMATCH");
  }
  std::printf("peak RSS: %.1f MB\n", r["peak_rss_mb"].get<double>());
}

int RunModel(const RunFlags& flags) {
  absl::StatusOr<ImportedModel> model = LoadModel(flags.model, flags.dims);
  if (!model.ok()) return Fail(kExitUsage, std::string(model.status().message()));
  std::vector<InputRecipe> recipes = InputRecipes(*model->graph);
  absl::StatusOr<Assignment> dims = BindRequestDims(recipes, *model->env, flags.input_shapes, flags.bindings);
  if (!dims.ok()) return Fail(kExitUsage, std::string(dims.status().message()));
  absl::StatusOr<std::vector<Tensor>> inputs = MakeInputs(recipes, *dims, flags.seed);
  if (!inputs.ok()) return Fail(kExitUsage, std::string(inputs.status().message()));
  std::vector<std::string> output_names;
  for (const Value* v : model->graph->outputs()) output_names.push_back(v->name());

  std::optional<std::vector<Tensor>> reference;
  if (flags.check) {
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(*model->graph, *inputs);
    if (!expected.ok()) return Fail(kExitUsage, absl::StrCat("interpreter: ", expected.status().message()));
    reference = *std::move(expected);
  }

  runtime::CompileOptions options;
  options.print_after = flags.print_after;
  options.print_stream = &std::cerr;
  absl::StatusOr<std::unique_ptr<runtime::Session>> session = runtime::Session::Create(
      runtime::ModelSource::Built(std::move(model->graph), std::move(model->env)), options);
  if (!session.ok()) return Fail(kExitUsage, absl::StrCat("compile: ", session.status().message()));

  using Clock = std::chrono::steady_clock;
  std::vector<double> latencies_ms;
  std::vector<Tensor> outputs;
  for (int64_t i = 0; i <= flags.repeats; ++i) {
    Clock::time_point start = Clock::now();
    absl::StatusOr<std::vector<Tensor>> result = (*session)->Run(*inputs);
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (!result.ok()) return Fail(kExitUsage, std::string(result.status().message()));
    latencies_ms.push_back(ms);
    if (i == 0) outputs = *std::move(result);
  }
  const runtime::SessionStats stats = (*session)->stats();

  nlohmann::ordered_json r;
  r["model"] = flags.model;
  r["dims"] = nlohmann::ordered_json::object();
  for (const SymbolInfo& s : (*session)->env().symbols()) {
    if (auto it = dims->find(s.name); it != dims->end()) r["dims"][s.name] = it->second;
  }
  r["compiles"] = stats.compiles;
  r["recompiles"] = stats.recompiles;
  r["compile_ms"] = stats.program.compile_ms;
  r["compile_s"] = stats.program.compile_ms / 1000.0;
  r["kernels"] = stats.program.kernels;
  r["gemms"] = stats.program.gemms;
  r["outputs"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < outputs.size(); ++i) {
    r["outputs"].push_back(OutputSummary(i < output_names.size() ? output_names[i] : absl::StrCat(i), outputs[i]));
  }
  r["first_run_ms"] = latencies_ms[0];
  std::vector<double> steady(latencies_ms.begin() + 1, latencies_ms.end());
  r["repeats"] = flags.repeats;
  r["median_ms"] = Percentile(steady, 0.5);
  r["p99_ms"] = Percentile(steady, 0.99);
  r["peak_rss_mb"] = PeakRssMb();
  bool passed = true;
  if (reference) {
    auto [worst, within] = Compare(outputs, *reference);
    r["max_abs_error"] = worst;
    r["check_passed"] = passed = within;
  }
  if (flags.json) {
    std::printf("%s\n", r.dump().c_str());
  } else {
    PrintText(r);
  }
  return passed ? kExitOk : kExitNegative;
}

int Run(const std::vector<std::string>& raw_args) {
  absl::StatusOr<RunFlags> flags = ParseRunFlags(raw_args);
  if (!flags.ok()) {
    std::fprintf(stderr, "shapeshift run: %s\n%s", std::string(flags.status().message()).c_str(), kUsage);
    return kExitUsage;
  }
  return RunModel(*flags);
}

}  // namespace

SHAPESHIFT_COMMAND(run, "run", "compile a model once and run it on one request shape", Run);

}  // namespace shapeshift::tools
