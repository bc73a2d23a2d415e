// `shapeshift demo [--json] [--requests N] [--seed S] [--sample K] [--device cpu|cuda] [--no-cuda-graphs] ...`
//
// The product in one command: builds builtin:bert (4 layers, hidden 256,
// 4 heads), compiles it ONCE for batch 1..8 × seq 1..512, and serves N
// (default 2,000) requests whose shapes follow a fixed-seed distribution
// typical of sentence traffic — lengths lognormal (median ≈ 24 tokens, long
// tail, clipped to 1..512), batch mostly 1 with some 2/4/8 (rows padded to
// the longest one, the mask marking the padding). K sampled requests of
// moderate size (≤ 256 tokens, spread over the run) are re-run on the
// reference interpreter: their largest absolute error is reported, and the
// speed-up is the interpreter's time over the compiled time on exactly
// those requests.
//
// Prints compiles, recompiles, distinct kernels, compile time, p50/p99
// latency and the speed-up; `--json` prints one object with at least
// requests, compiles, recompiles, kernels, max_abs_error, compile_ms,
// p50_us, p99_us, speedup_vs_interpreter. `--device cuda` serves the requests
// on the GPU (tools/device_flags.h); the report adds `device` and the CUDA
// graph counters (`graph_captures`, `graph_replays`, `direct_runs`).
//
// Exit codes: 0 ok; 1 the sample disagrees with the interpreter (max abs
// error > 1e-3) or the model compiled more than once; 2 bad usage or a
// failed compile/run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "examples/models/model_builder.h"
#include "graph/interpreter.h"
#include "nlohmann/json.hpp"
#include "runtime/session.h"
#include "tools/args.h"
#include "tools/command.h"
#include "tools/terminal_text.h"
#include "tools/device_flags.h"
#include "tools/model_loader.h"

namespace shapeshift::tools {
namespace {

constexpr char kModel[] = "builtin:bert";
constexpr double kMaxAbsError = 1e-3;
// Sentence lengths: lognormal with median exp(kLogMedian) ≈ 24 tokens.
constexpr double kLogMedian = 3.2;
constexpr double kLogSigma = 0.75;
// A sampled request runs on the interpreter too: keep it moderate.
constexpr int64_t kMaxSampleTokens = 256;

struct DemoFlags {
  int64_t requests = 2000;
  uint64_t seed = 7;
  int64_t sample = 20;
  bool json = false;
  runtime::CompileOptions device;  // --device and the CUDA flags
};

struct Request {
  int64_t batch = 1;
  int64_t seq = 1;
  std::vector<Tensor> inputs;  // input_ids, attention_mask
};

constexpr char kUsage[] =
    "usage: shapeshift demo [--json] [--requests N] [--seed S] [--sample K]\n"
    SHAPESHIFT_DEVICE_USAGE
    "  Builds builtin:bert, compiles it once for batch 1..8 x seq 1..512 and serves N (default 2000)\n"
    "  variable-length requests; K (default 20) sampled requests are checked against the reference\n"
    "  interpreter. Prints compiles, recompiles, kernels, compile time, p50/p99 latency, the speed-up.\n"
    "  Exit: 0 ok, 1 the sample disagrees with the interpreter or the model compiled more than once,\n"
    "  2 bad usage or a failed compile/run.\n";

int Fail(int code, const std::string& message) { return ReportError("demo", code, message); }

absl::StatusOr<DemoFlags> ParseDemoFlags(const std::vector<std::string>& raw_args) {
  FlagSpec spec;
  spec.valued = {"requests", "seed", "sample"};
  spec.switches = {"json"};
  AddDeviceFlags(&spec);
  absl::StatusOr<ParsedArgs> args = ParseArgs(raw_args, spec);
  if (!args.ok()) return args.status();
  if (!args->positional.empty()) return absl::InvalidArgumentError("demo takes no positional arguments");
  DemoFlags flags;
  if (!absl::SimpleAtoi(args->Get("requests", "2000"), &flags.requests) || flags.requests < 1) {
    return absl::InvalidArgumentError("--requests: expected an integer >= 1");
  }
  if (!absl::SimpleAtoi(args->Get("seed", "7"), &flags.seed)) {
    return absl::InvalidArgumentError("--seed: expected a non-negative integer");
  }
  if (!absl::SimpleAtoi(args->Get("sample", "20"), &flags.sample) || flags.sample < 1) {
    return absl::InvalidArgumentError("--sample: expected an integer >= 1");
  }
  flags.json = args->Has("json");
  if (absl::Status s = ApplyDeviceFlags(*args, &flags.device); !s.ok()) return s;
  return flags;
}

int64_t SentenceLength(examples::WeightGenerator& rng, int64_t max_seq) {
  double length = std::exp(kLogMedian + rng.Normal(static_cast<float>(kLogSigma)));
  return std::clamp<int64_t>(std::llround(length), 1, max_seq);
}

int64_t BatchSize(examples::WeightGenerator& rng) {
  int64_t roll = rng.UniformInt(0, 99);
  if (roll < 80) return 1;
  if (roll < 90) return 2;
  if (roll < 96) return 4;
  return 8;
}

// One request: each row a sentence, padded to the longest row.
Request MakeRequest(examples::WeightGenerator& rng, int64_t vocab, int64_t max_seq) {
  Request r;
  r.batch = BatchSize(rng);
  std::vector<int64_t> lengths(static_cast<size_t>(r.batch));
  for (int64_t& length : lengths) length = SentenceLength(rng, max_seq);
  r.seq = *std::max_element(lengths.begin(), lengths.end());
  std::vector<int64_t> ids(static_cast<size_t>(r.batch * r.seq), 0), mask(ids.size(), 0);
  for (int64_t row = 0; row < r.batch; ++row) {
    for (int64_t col = 0; col < lengths[row]; ++col) {
      ids[row * r.seq + col] = rng.UniformInt(0, vocab - 1);
      mask[row * r.seq + col] = 1;
    }
  }
  r.inputs = {Tensor::FromVector(DType::kI64, {r.batch, r.seq}, ids),
              Tensor::FromVector(DType::kI64, {r.batch, r.seq}, mask)};
  return r;
}

// `count` requests of at most kMaxSampleTokens tokens, spread over the run.
std::vector<size_t> PickSample(const std::vector<Request>& requests, int64_t count) {
  std::vector<size_t> picked;
  size_t stride = std::max<size_t>(1, requests.size() / static_cast<size_t>(count));
  for (size_t start = 0; start < requests.size() && static_cast<int64_t>(picked.size()) < count; start += stride) {
    for (size_t i = start; i < requests.size() && i < start + stride; ++i) {
      if (requests[i].batch * requests[i].seq <= kMaxSampleTokens) {
        picked.push_back(i);
        break;
      }
    }
  }
  return picked;
}

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  size_t index = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

double MaxAbsDifference(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) worst = std::max(worst, std::abs(a.GetAsDouble(i) - b.GetAsDouble(i)));
  return worst;
}

void PrintText(const nlohmann::json& r) {
  std::printf("shapeshift demo: %s, compiled once for batch 1..8 x seq 1..512\n", kModel);
  std::printf("  compile:     %.1f ms, %lld compile(s), %lld recompile(s), %lld distinct kernel(s), %lld GEMM primitive(s)\n",
              r["compile_ms"].get<double>(), r["compiles"].get<long long>(), r["recompiles"].get<long long>(),
              r["kernels"].get<long long>(), r["gemms"].get<long long>());
  std::printf("  requests:    %lld (seq p50 %lld, max %lld; %lld distinct shapes)\n", r["requests"].get<long long>(),
              r["seq_p50"].get<long long>(), r["seq_max"].get<long long>(), r["distinct_shapes"].get<long long>());
  std::printf("  latency:     p50 %.0f us, p99 %.0f us, mean %.0f us\n", r["p50_us"].get<double>(),
              r["p99_us"].get<double>(), r["mean_us"].get<double>());
  std::printf("  check:       %lld sampled requests vs the interpreter, max abs error %.3g\n",
              r["sampled"].get<long long>(), r["max_abs_error"].get<double>());
  std::printf("  speed-up:    %.1fx over the interpreter on the sampled requests\n",
              r["speedup_vs_interpreter"].get<double>());
  if (r.contains("device_name")) {
    std::printf("  device:      %s; CUDA graphs: %lld captured, %lld replays, %lld direct runs\n",
                r["device_name"].get<std::string>().c_str(), r["graph_captures"].get<long long>(),
                r["graph_replays"].get<long long>(), r["direct_runs"].get<long long>());
  }
}

int Demo(const DemoFlags& flags) {
  absl::StatusOr<ImportedModel> compiled_model = LoadModel(kModel, {});
  absl::StatusOr<ImportedModel> reference_model = LoadModel(kModel, {});
  if (!compiled_model.ok()) return Fail(kExitUsage, std::string(compiled_model.status().message()));
  if (!reference_model.ok()) return Fail(kExitUsage, std::string(reference_model.status().message()));
  std::vector<InputRecipe> recipes = InputRecipes(*compiled_model->graph);
  const SymbolInfo* seq_symbol = compiled_model->env->FindSymbol("seq");
  int64_t max_seq = seq_symbol != nullptr ? seq_symbol->max : 512;
  int64_t vocab = 2;
  for (const InputRecipe& recipe : recipes) {
    if (recipe.name == "input_ids") vocab = recipe.limit;
  }

  runtime::CompileOptions options;
  options.device = flags.device.device;
  options.cuda = flags.device.cuda;
  absl::StatusOr<std::unique_ptr<runtime::Session>> session = runtime::Session::Create(
      runtime::ModelSource::Built(std::move(compiled_model->graph), std::move(compiled_model->env)), options);
  if (!session.ok()) return Fail(kExitUsage, absl::StrCat("compile: ", session.status().message()));

  examples::WeightGenerator rng(flags.seed);
  std::vector<Request> requests;
  requests.reserve(static_cast<size_t>(flags.requests));
  for (int64_t i = 0; i < flags.requests; ++i) requests.push_back(MakeRequest(rng, vocab, max_seq));
  std::vector<size_t> sample = PickSample(requests, flags.sample);
  std::vector<bool> sampled(requests.size(), false);
  for (size_t i : sample) sampled[i] = true;

  using Clock = std::chrono::steady_clock;
  std::vector<double> latency_us(requests.size());
  std::vector<std::vector<Tensor>> sampled_outputs(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    Clock::time_point start = Clock::now();
    absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(requests[i].inputs);
    latency_us[i] = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (!out.ok()) {
      return Fail(kExitUsage, absl::StrCat("request ", i, " (batch ", requests[i].batch, ", seq ", requests[i].seq,
                                           "): ", out.status().message()));
    }
    if (sampled[i]) sampled_outputs[i] = *std::move(out);
  }

  double max_error = 0, interpreter_us = 0, compiled_us = 0;
  for (size_t i : sample) {
    Clock::time_point start = Clock::now();
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(*reference_model->graph, requests[i].inputs);
    interpreter_us += std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (!expected.ok()) return Fail(kExitUsage, absl::StrCat("interpreter: ", expected.status().message()));
    compiled_us += latency_us[i];
    for (size_t o = 0; o < expected->size(); ++o) {
      max_error = std::max(max_error, MaxAbsDifference(sampled_outputs[i].at(o), (*expected)[o]));
    }
  }

  std::vector<double> seqs;
  std::set<std::pair<int64_t, int64_t>> shapes;
  double total_us = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    seqs.push_back(static_cast<double>(requests[i].seq));
    shapes.emplace(requests[i].batch, requests[i].seq);
    total_us += latency_us[i];
  }
  const runtime::SessionStats stats = (*session)->stats();
  nlohmann::json r;
  r["model"] = kModel;
  r["requests"] = flags.requests;
  r["compiles"] = stats.compiles;
  r["recompiles"] = stats.recompiles;
  r["kernels"] = stats.program.kernels;
  r["gemms"] = stats.program.gemms;
  r["compile_ms"] = stats.program.compile_ms;
  r["p50_us"] = Percentile(latency_us, 0.5);
  r["p99_us"] = Percentile(latency_us, 0.99);
  r["mean_us"] = total_us / static_cast<double>(requests.size());
  r["max_abs_error"] = max_error;
  r["sampled"] = sample.size();
  r["speedup_vs_interpreter"] = compiled_us > 0 ? interpreter_us / compiled_us : 0.0;
  r["seq_p50"] = static_cast<int64_t>(Percentile(seqs, 0.5));
  r["seq_max"] = static_cast<int64_t>(Percentile(seqs, 1.0));
  r["distinct_shapes"] = shapes.size();
  r["seed"] = flags.seed;
  r["device"] = stats.program.device;
  if (std::optional<runtime::DeviceStats> device = (*session)->program()->device_stats()) {
    r["device_name"] = device->device;
    r["graph_captures"] = device->graph_captures;
    r["graph_replays"] = device->graph_replays;
    r["direct_runs"] = device->direct_runs;
  }
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");  // latency depends on it when cores are shared
  r["omp_wait_policy"] = wait_policy != nullptr ? wait_policy : "default";
  if (flags.json) {
    std::printf("%s\n", JsonText(r).c_str());
  } else {
    PrintText(r);
  }
  bool ok = max_error <= kMaxAbsError && stats.compiles == 1 && stats.recompiles == 0;
  return ok ? kExitOk : kExitNegative;
}

int Run(const std::vector<std::string>& raw_args) {
  absl::StatusOr<DemoFlags> flags = ParseDemoFlags(raw_args);
  if (!flags.ok()) return UsageError("demo", kUsage, std::string(flags.status().message()));
  return Demo(*flags);
}

}  // namespace

SHAPESHIFT_COMMAND(demo, "demo", "compile builtin:bert once and serve 2,000 variable-length requests", kUsage, Run);

}  // namespace shapeshift::tools
