// `shapeshift run MODEL [--dim name=lo..hi]... [--policy P] [--recompile-log PATH] [--recompile-limit N]
//                  (one request shape:)  [--input NAME=SHAPE]... [--bind SYMBOL=N]... [--repeats N] [--check]
//                                        [--inputs-from DIR] [--save-outputs DIR]
//                  (a request trace:)    [--trace lognormal:N[:SEED]|decode:N|file:PATH] [--check-every K]
//                  [--metrics] [--metrics-format text|prometheus] [--cache-dir DIR | --no-cache]
//                  [--seed S] [--json] [--print-after=PASS]... [--no-small-row-packing] [--panel-long-rows]
//                  [--tuning FILE]
//                  [--remote-cache redis://HOST:PORT[/DB] --remote-cache-key-file FILE] [--sign-key-file FILE]
//                  [--device cpu|cuda] [--no-cuda-graphs] [--cuda-graph-symbol SYM] [--cuda-tf32]`
//
// MODEL may be a bundle (`MODEL.ssb`, from `shapeshift compile`): its entries
// are re-created from its machine code with 0 compiles, after its checksum,
// signature (`--sign-key-file`) and target (CPU features, LLVM, shapeshift
// build) are checked; `--dim` and `--policy` are the bundle's own then. Its
// weights go from the bundle file to the weights dir as a model file's do.
// `--remote-cache` shares compiled entries with other replicas through Redis
// (tools/fleet_flags.h, runtime/persist/remote_cache.h).
//
// Compiles MODEL (`path.onnx` or `builtin:bert|gpt2|gpt2-kv`, see
// tools/model_loader.h) through a Session for the declared
// ranges under `--policy` (polymorphic | bucketed | static | auto, the
// default), every compile recorded in `--recompile-log` (JSON lines; or the
// SHAPESHIFT_RECOMPILE_LOG environment variable) for `shapeshift explain`.
// Compiled artifacts persist in `--cache-dir` (default
// $XDG_CACHE_HOME/shapeshift; `--no-cache` turns it off, tools/run_cache_dir.h):
// a later process loads them instead of compiling (`cache_loads`).
//
// One request shape (no --trace): `--input` gives an input's shape
// (`input_ids=2x128`), `--bind` a dim directly (`past=16`), other dims take
// their declared minimum. Inputs are deterministic (`--seed`): token ids
// inside the vocabulary, masks of ones, floats N(0, 1). It prints the output
// shapes and checksums, the compile time and kernel counts, and first-run /
// median / p99 latency over `--repeats` runs; `--check` also runs the
// reference interpreter and reports the largest absolute error.
// `--inputs-from DIR` takes the request's tensors from DIR/input_K.pb instead
// (ONNX backend test-data layout; their shapes bind the dims), and
// `--save-outputs DIR` writes the first run's outputs as DIR/output_K.pb
// (tools/run_io.h): how the peer benchmark compares shapeshift's outputs with
// ONNX Runtime's and torch's on the same tensors. `--json`
// prints one JSON object (the contract bench/peers/shapeshift_bench.py reads:
// median_ms, p99_ms, peak_rss_mb, compile_s).
//
// A trace (--trace, tools/trace.h): replays the requests in order
// (tools/run_replay.h) and reports requests, compiles (by tier and by
// trigger), misses, tier-ups, p50/p99 latency, the time to the first result
// and the compiles before it, and wrong_results among the requests checked
// against the interpreter (every K-th, default 50, plus each cache entry's
// first request; `--check-every 0` checks none).
//
// `--metrics` (either mode) adds the session's SpecializationMetrics (hit
// rate, compiles by tier and trigger, compile and guard-evaluation time,
// first-request latency, ...; runtime/specialization/metrics.h) after the
// report; `--metrics-format prometheus` (implies --metrics) writes them in
// the Prometheus text exposition format instead. With `--json` they are the
// report's `metrics` object (text) or `metrics_prometheus` string.
//
// `--no-small-row-packing` compiles without the packed short-request GEMM
// path (codegen/cpu/small_rows_matmul.h): one copy of the weights instead of
// two, at the cost of slower requests of 4..32 rows. `--panel-long-rows`
// runs the longer requests of those GEMMs on oneDNN's blocked GEMM over the
// same packed copy (codegen/cpu/panel_rows_matmul.h) instead of its
// runtime-M GEMM over the plain weights. `--tuning FILE` (from
// `shapeshift tune`, runtime/tuning/gemm_tuning.h) sets, per GEMM class, how
// many rows that path serves on this machine; one made on another machine,
// thread count or build is refused. Without `--tuning`, this machine's tuning
// in the cache dir is used (tools/lazy_tuning.h): a model's first run here
// first measures, within `--tune-budget-s` seconds (default 10; 0: never),
// the model's GEMM classes that file lacks, and the file names the model so
// that later runs neither measure nor list again; notes say what was
// measured or used (`tuning_file` in the report; a file that cannot be used
// is ignored with a note why). The report's `short_request_gemms` (and
// one `short requests:` line) says what serves each class and whether the
// file decided it.
//
// `--device cuda` compiles every entry for the GPU (runtime/device/README.md;
// no GPU: exit 2 with the device's message, nothing runs on the CPU);
// the report then has a `cuda` object (device, module architecture, CUDA
// graph captures, replays, direct runs, copies) and the text form prints
// each entry's device report (the graph plan and one line per capture).
// `--no-cuda-graphs`, `--cuda-graph-symbol SYM` and `--cuda-tf32` set
// runtime::CudaOptions (tools/device_flags.h).
//
// Exit codes: 0 ok; 1 a check found a mismatch, or a trace request was
// refused; 2 bad usage, a model that cannot be loaded or compiled, or a
// request outside the declared ranges.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/constant_spill.h"
#include "graph/interpreter.h"
#include "graph/tensor_compare.h"
#include "nlohmann/json.hpp"
#include "passes/pipeline.h"
#include "runtime/bundle/bundle.h"
#include "runtime/specialization/metrics.h"
#include "runtime/specialization/policy.h"
#include "runtime/session.h"
#include "tools/args.h"
#include "tools/command.h"
#include "tools/fleet_flags.h"
#include "tools/device_flags.h"
#include "runtime/tuning/gemm_tuning.h"
#include "tools/metrics_json.h"
#include "tools/model_loader.h"
#include "tools/run_cache_dir.h"
#include "tools/run_io.h"
#include "tools/run_replay.h"
#include "tools/run_replay_report.h"
#include "tools/step_profile_report.h"
#include "tools/terminal_text.h"
#include "tools/trace.h"
#include "tools/lazy_tuning.h"
#include "tools/weights_json.h"

namespace shapeshift::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kUsage[] =
    "usage: shapeshift run MODEL [--dim name=lo..hi]... [--policy polymorphic|bucketed|static|auto]\n"
    "                      [--recompile-log PATH] [--recompile-limit N] [--seed S] [--json] [--print-after=PASS]...\n"
    "         one shape:   [--input NAME=SHAPE]... [--bind SYMBOL=N]... [--repeats N] [--check]\n"
    "                      [--inputs-from DIR] [--save-outputs DIR]   (DIR/input_K.pb, DIR/output_K.pb)\n"
    "                      [--profile]   (where the repeats' time goes: per kernel, GEMM class and the engine\n"
    "                      that ran it, attention; CPU programs)\n"
    "         a trace:     --trace lognormal:N[:SEED]|decode:N|file:PATH [--check-every K]\n"
    "         metrics:     [--metrics] [--metrics-format text|prometheus]\n"
    "         cache:       [--cache-dir DIR | --no-cache]   (default $XDG_CACHE_HOME/shapeshift)\n"
    "         memory:      [--no-small-row-packing]   (no packed weight copy: slower 4..32-row GEMMs; less memory\n"
    "                      with --weights-in-memory)\n"
    "                      [--panel-long-rows]   (longer requests on the packed copy, not the plain weights)\n"
    "                      [--weights-dir DIR | --weights-in-memory]   (weights in an unlinked file, paged in\n"
    "                      while read and given back once packed: about one resident copy; default DIR/weights\n"
    "                      of the cache dir, or of $XDG_CACHE_HOME/shapeshift with --no-cache)\n"
    "         tuning:      [--tuning FILE]   (this machine's GEMM choices, from `shapeshift tune`;\n"
    "                      default: this machine's tuning in the cache dir; a model's first run here first\n"
    "                      measures the classes it lacks, within [--tune-budget-s S] s (default 10; 0: never))\n"
    "         kernels:     [--no-fused-attention]   (each attention as two GEMMs, a softmax and transposes,\n"
    "                      not one fused kernel; to compare the two)\n"
    "         fleet:       [--remote-cache redis://HOST:PORT[/DB] --remote-cache-key-file FILE]\n"
    "                      [--remote-cache-ttl-s S] [--remote-cache-max-entry-mb N] [--remote-cache-timeout-ms N]\n"
    "                      [--remote-cache-wait-s S] [--sign-key-file FILE]   (a signed MODEL.ssb)\n"
    SHAPESHIFT_DEVICE_USAGE
    "  MODEL: path/to/model.onnx, builtin:bert, builtin:gpt2, builtin:gpt2-kv, or a bundle MODEL.ssb\n"
    "  (its weights read from the bundle file, into the weights dir as a model's external data)\n"
    "  Exit: 0 ok, 1 a check found a mismatch or a trace request was refused, 2 bad usage, a model that\n"
    "  cannot be loaded or compiled, or a request outside the declared ranges.\n";

struct RunFlags {
  std::string model;
  std::map<std::string, DimRange> dims;
  runtime::SpecializationPolicy policy = runtime::SpecializationPolicy::kAuto;
  std::string recompile_log;
  std::optional<int> recompile_limit;
  std::string cache_dir;  // empty: no persistent cache
  std::vector<std::string> input_shapes;
  std::vector<std::string> bindings;
  std::string inputs_from;   // empty: deterministic inputs of the --input shapes
  std::string save_outputs;  // empty: outputs are only summarized
  std::vector<std::string> print_after;
  std::string trace;  // empty: one request shape
  int64_t check_every = 50;
  int64_t repeats = 10;
  uint64_t seed = 1;
  bool check = false;
  bool pack_small_row_gemms = true;  // --no-small-row-packing: one copy of the weights, slower short requests
  bool long_rows_on_panels = false;  // --panel-long-rows: long requests on the packed copy
  bool fuse_attention = true;        // --no-fused-attention: two GEMMs, softmax and transposes per attention
  bool profile = false;              // --profile: where the repeats' time goes, step by step
  std::string weights_dir;           // --weights-dir (default under the cache dir); empty: --weights-in-memory
  std::shared_ptr<const runtime::GemmTuning> tuning;  // --tuning FILE, or the cache dir's, read and parsed
  std::string tuning_file;                            // where `tuning` came from; empty: none
  std::vector<std::string> tuning_notes;              // the cache dir's tuning used, or why not
  double tune_budget_s = kDefaultTuneBudgetS;         // --tune-budget-s: a first run's measurement (0: none)
  runtime::CompileOptions device;    // --device and the CUDA flags (tools/device_flags.h); only those fields
  bool json = false;
  bool metrics = false;
  bool prometheus = false;  // --metrics-format prometheus
  runtime::persist::RemoteCacheOptions remote_cache;  // url empty: off
  std::string sign_key;                               // a bundle's HMAC key (--sign-key-file)
  std::shared_ptr<runtime::bundle::Bundle> bundle;    // MODEL.ssb, read and verified
  Clock::time_point started;  // before the model is loaded: time to first result counts from here
};

int Fail(int code, const std::string& message) { return ReportError("run", code, message); }

// Flags of one mode given in the other are errors, not silently ignored.
absl::Status CheckModeFlags(const ParsedArgs& args) {
  const bool trace = args.Has("trace");
  for (const char* flag : {"input", "bind", "repeats", "check", "inputs-from", "save-outputs", "profile"}) {
    if (trace && args.Has(flag)) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, " is for one request shape; a --trace sets the shapes",
                                                     std::string(flag) == "check" ? " (and checks with --check-every)" : ""));
    }
  }
  if (!trace && args.Has("check-every")) return absl::InvalidArgumentError("--check-every needs --trace");
  if (args.Has("inputs-from") && (args.Has("input") || args.Has("bind"))) {
    return absl::InvalidArgumentError("--inputs-from sets the request's shapes; drop --input and --bind");
  }
  return absl::OkStatus();
}

absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& raw_args) {
  FlagSpec spec;
  spec.valued = {"dim",   "input", "bind",        "repeats",       "seed",           "print-after",
                 "policy", "trace", "check-every", "recompile-log", "recompile-limit", "metrics-format", kCacheDirFlag,
                 "inputs-from", "save-outputs", "tuning", "tune-budget-s", kWeightsDirFlag};
  spec.switches = {"check", "json", "metrics", kNoCacheFlag, "no-small-row-packing", "panel-long-rows",
                   kWeightsInMemoryFlag, "no-fused-attention", "profile"};
  for (const std::string& flag : RemoteCacheFlagNames()) spec.valued.insert(flag);
  spec.valued.insert(kSignKeyFileFlag);
  AddDeviceFlags(&spec);
  absl::StatusOr<ParsedArgs> args = ParseArgs(raw_args, spec);
  if (!args.ok()) return args.status();
  if (args->positional.size() != 1) return absl::InvalidArgumentError("expected exactly one MODEL argument");
  if (absl::Status s = CheckModeFlags(*args); !s.ok()) return s;
  RunFlags flags;
  flags.model = args->positional[0];
  absl::StatusOr<std::map<std::string, DimRange>> dims = ParseDimFlags(args->All("dim"));
  if (!dims.ok()) return dims.status();
  flags.dims = *dims;
  if (args->Has("policy")) {
    absl::StatusOr<runtime::SpecializationPolicy> policy = runtime::ParseSpecializationPolicy(args->Get("policy"));
    if (!policy.ok()) return absl::InvalidArgumentError(absl::StrCat("--policy: ", policy.status().message()));
    flags.policy = *policy;
  }
  flags.recompile_log = args->Get("recompile-log");
  absl::StatusOr<std::string> cache_dir = CacheDirFromFlags(*args);
  if (!cache_dir.ok()) return cache_dir.status();
  flags.cache_dir = *cache_dir;
  if (args->Has("recompile-limit")) {
    int limit = 0;
    if (!absl::SimpleAtoi(args->Get("recompile-limit"), &limit) || limit < 0) {
      return absl::InvalidArgumentError("--recompile-limit: expected an integer >= 0");
    }
    flags.recompile_limit = limit;
  }
  flags.input_shapes = args->All("input");
  flags.bindings = args->All("bind");
  flags.inputs_from = args->Get("inputs-from");
  flags.save_outputs = args->Get("save-outputs");
  for (const char* flag : {"inputs-from", "save-outputs"}) {
    if (args->Has(flag) && args->Get(flag).empty()) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": empty DIR"));
  }
  flags.print_after = args->All("print-after");
  std::vector<std::string> passes = passes::PipelinePassNames();
  for (const std::string& pass : flags.print_after) {
    if (std::find(passes.begin(), passes.end(), pass) == passes.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--print-after ", pass, ": no such pass (passes: ", absl::StrJoin(passes, ", "), ")"));
    }
  }
  flags.trace = args->Get("trace");
  if (args->Has("trace") && flags.trace.empty()) return absl::InvalidArgumentError("--trace: empty trace spec");
  if (!absl::SimpleAtoi(args->Get("check-every", "50"), &flags.check_every) || flags.check_every < 0) {
    return absl::InvalidArgumentError("--check-every: expected an integer >= 0");
  }
  if (!absl::SimpleAtoi(args->Get("repeats", "10"), &flags.repeats) || flags.repeats < 1) {
    return absl::InvalidArgumentError("--repeats: expected an integer >= 1");
  }
  if (!absl::SimpleAtoi(args->Get("seed", "1"), &flags.seed)) {
    return absl::InvalidArgumentError("--seed: expected a non-negative integer");
  }
  flags.check = args->Has("check");
  flags.pack_small_row_gemms = !args->Has("no-small-row-packing");
  flags.long_rows_on_panels = args->Has("panel-long-rows");
  flags.fuse_attention = !args->Has("no-fused-attention");
  flags.profile = args->Has("profile");
  absl::StatusOr<std::string> weights_dir = WeightsDirFromFlags(*args, flags.cache_dir);
  if (!weights_dir.ok()) return weights_dir.status();
  flags.weights_dir = *std::move(weights_dir);
  if (args->Has("tuning")) {
    if (!flags.pack_small_row_gemms) {
      return absl::InvalidArgumentError("--tuning chooses the short-request path that --no-small-row-packing removes");
    }
    absl::StatusOr<runtime::GemmTuning> tuning = runtime::ReadTuningFile(args->Get("tuning"));
    if (!tuning.ok()) return absl::InvalidArgumentError(absl::StrCat("--tuning: ", tuning.status().message()));
    flags.tuning = std::make_shared<const runtime::GemmTuning>(*std::move(tuning));
  }
  if (absl::Status s = ApplyDeviceFlags(*args, &flags.device); !s.ok()) return s;
  if (flags.tuning != nullptr) flags.tuning_file = args->Get("tuning");
  if (flags.profile && flags.device.device != runtime::Device::kCpu) {
    return absl::InvalidArgumentError("--profile times the steps of CPU programs; a device's run asynchronously");
  }
  absl::StatusOr<double> budget = TuneBudgetFromFlags(*args);
  if (!budget.ok()) return budget.status();
  flags.tune_budget_s = *budget;
  if (args->Has("tune-budget-s") && flags.tune_budget_s > 0) {
    if (flags.tuning != nullptr || !flags.pack_small_row_gemms || flags.cache_dir.empty() ||
        flags.device.device != runtime::Device::kCpu) {
      return absl::InvalidArgumentError(
          "--tune-budget-s tunes this CPU's GEMMs into the cache dir: not with --tuning, --no-small-row-packing, "
          "--no-cache or --device cuda");
    }
  }
  flags.json = args->Has("json");
  const std::string metrics_format = args->Get("metrics-format", "text");
  if (metrics_format != "text" && metrics_format != "prometheus") {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-format ", metrics_format, ": expected text or prometheus"));
  }
  flags.metrics = args->Has("metrics") || args->Has("metrics-format");
  flags.prometheus = metrics_format == "prometheus";
  absl::StatusOr<runtime::persist::RemoteCacheOptions> remote = RemoteCacheFromFlags(*args);
  if (!remote.ok()) return remote.status();
  flags.remote_cache = *std::move(remote);
  absl::StatusOr<std::string> key = SigningKeyFromFlags(*args);
  if (!key.ok()) return key.status();
  flags.sign_key = *std::move(key);
  if (IsBundlePath(flags.model)) {
    for (const char* flag : {"dim", "policy", "print-after", "no-small-row-packing", "panel-long-rows", "device", "tuning",
                             "tune-budget-s", "no-fused-attention"}) {
      if (args->Has(flag)) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag, " cannot change a bundle (", flags.model,
                                                       " fixes its domain, policy and code)"));
      }
    }
  } else if (!flags.sign_key.empty()) {
    return absl::InvalidArgumentError("--sign-key-file verifies a bundle: MODEL must be a .ssb file");
  }
  return flags;
}

double PeakRssMb() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// The loaded model, split into what the session compiles and what the
// interpreter checks against (the unoptimized graph).
struct PreparedModel {
  // --print-after's IR, escaped (it prints the model's names); declared
  // first so it outlives the session, whose background compiles print too.
  std::unique_ptr<EscapedLineStream> ir_stream;
  std::vector<InputRecipe> recipes;
  std::unique_ptr<Graph> reference;
  std::vector<std::string> output_names;
  std::unique_ptr<runtime::Session> session;
  double create_us = 0;  // wall time of session creation (the ahead-of-time compile, if any)
};

absl::StatusOr<PreparedModel> Prepare(const RunFlags& flags, ImportedModel model) {
  PreparedModel prepared;
  prepared.recipes = InputRecipes(*model.graph);
  for (const Value* v : model.graph->outputs()) prepared.output_names.push_back(v->name());
  runtime::SessionOptions options;
  options.compile.print_after = flags.print_after;
  prepared.ir_stream = std::make_unique<EscapedLineStream>(stderr);
  options.compile.print_stream = prepared.ir_stream.get();
  options.compile.pack_small_row_gemms = flags.pack_small_row_gemms;
  options.compile.long_rows_on_panels = flags.long_rows_on_panels;
  options.compile.fuse_attention = flags.fuse_attention;
  options.compile.tuning = flags.tuning;
  options.compile.device = flags.device.device;
  options.compile.cuda = flags.device.cuda;
  options.policy = flags.policy;
  if (flags.recompile_limit) options.recompile_limit = *flags.recompile_limit;
  options.recompile_log = flags.recompile_log;
  options.cache_dir = flags.cache_dir;
  options.remote_cache = flags.remote_cache;
  options.weights_dir = flags.weights_dir;
  Clock::time_point start = Clock::now();
  absl::StatusOr<std::unique_ptr<runtime::Session>> session;
  if (flags.bundle != nullptr) {
    runtime::bundle::BundleSessionOptions bundle_options;
    bundle_options.cache_dir = flags.cache_dir;
    bundle_options.weights_dir = flags.weights_dir;
    bundle_options.remote_cache = flags.remote_cache;
    bundle_options.recompile_log = flags.recompile_log;
    if (flags.recompile_limit) bundle_options.recompile_limit = *flags.recompile_limit;
    session = runtime::bundle::OpenBundleSession(*flags.bundle, std::move(model), bundle_options);
  } else {
    session = runtime::Session::Create(
        runtime::ModelSource::Built(std::move(model.graph), std::move(model.env), flags.model), options);
  }
  if (!session.ok()) return session.status();
  prepared.create_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  prepared.session = *std::move(session);
  // Cloned from the session's model: the reference shares its (possibly
  // spilled) weights instead of holding the heap copy alive.
  prepared.reference = prepared.session->graph().Clone();
  return prepared;
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

// Adds the session's metrics to the report (--json) or prints them after it.
void EmitMetrics(const RunFlags& flags, const runtime::Session& session, nlohmann::ordered_json& r) {
  if (!flags.metrics) return;
  const runtime::SpecializationMetrics metrics = session.Metrics();
  if (flags.json) {
    if (flags.prometheus) {
      r["metrics_prometheus"] = runtime::FormatMetricsPrometheus(metrics);
    } else {
      r["metrics"] = MetricsJson(runtime::FormatMetricsText(metrics));
    }
    return;
  }
  const std::string text =
      flags.prometheus ? runtime::FormatMetricsPrometheus(metrics) : runtime::FormatMetricsText(metrics);
  std::printf("\n%s%s", flags.prometheus ? "" : "metrics:\n", EscapedLines(text).c_str());
}

// Device::kCuda: what the device programs of the session's entries did —
// the device, the module, the CUDA graph plan, captures and replays.
void AddDeviceReport(const RunFlags& flags, const runtime::Session& session, nlohmann::ordered_json& r) {
  r["device"] = runtime::DeviceName(flags.device.device);
  if (flags.device.device != runtime::Device::kCuda) return;
  nlohmann::ordered_json cuda = {{"graph_captures", 0}, {"graph_replays", 0}, {"direct_runs", 0},
                                 {"graph_invalidations", 0}, {"host_to_device_copies", 0},
                                 {"device_to_host_copies", 0}};
  std::string report;
  for (const auto& entry : session.dispatcher().cache().entries()) {
    const runtime::Program& program = *entry->artifact->program;
    std::optional<runtime::DeviceStats> s = program.device_stats();
    if (!s) continue;
    cuda["device"] = s->device;
    cuda["arch"] = s->arch;
    for (auto [key, value] : {std::pair{"graph_captures", s->graph_captures}, {"graph_replays", s->graph_replays},
                              {"direct_runs", s->direct_runs}, {"graph_invalidations", s->graph_invalidations},
                              {"host_to_device_copies", s->host_to_device_copies},
                              {"device_to_host_copies", s->device_to_host_copies}}) {
      cuda[key] = cuda[key].get<int64_t>() + value;
    }
    absl::StrAppend(&report, "entry #", entry->id, " ", program.device_report());
  }
  cuda["report"] = report;
  r["cuda"] = cuda;
}

void PrintDeviceReport(const nlohmann::ordered_json& r) {
  // The report names kernels and symbols from the model: printed escaped.
  if (r.contains("cuda")) std::printf("%s", EscapedLines(r["cuda"]["report"].get<std::string>()).c_str());
}

// What serves each constant-weight GEMM class's short requests (the
// skinny GEMM, oneDNN's small-rows primitives or its runtime-M GEMM), up to
// how many rows, and whether a tuning file decided it.
nlohmann::ordered_json ShortRequestGemmsJson(const runtime::Program& program) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const runtime::ShortRequestGemm& g : program.short_request_gemms()) {
    out.push_back({{"config", codegen::cpu::DescribeConfig(g.config)},
                   {"engine", g.engine},
                   {"min_rows", g.min_rows},
                   {"max_rows", g.max_rows},
                   {"long_engine", g.long_engine},
                   {"prefetch_rows", g.prefetch_rows},
                   {"tuned", g.tuned},
                   {"steps", g.steps}});
  }
  return out;
}

// Where the weights live (--weights-dir): the spill file's directory, how
// much it holds and how much of it the program gave back once packed; a
// directory that could not take them is a note.
void AddWeightsReport(const runtime::Session& session, const runtime::ProgramStats* program,
                      nlohmann::ordered_json& r) {
  if (!session.weights().note.empty()) r["notes"].push_back(session.weights().note);
  r["weights"] = WeightsJson(session, program);
}

// The model's past/present pairs and whether a caller can keep each in its
// own buffer, appended in place (runtime/kv_binding.h).
nlohmann::ordered_json KvCachesJson(const runtime::Program& program) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const runtime::KvPairInfo& pair : program.kv_pairs()) {
    out.push_back({{"input", pair.input},
                   {"output", pair.output},
                   {"axis", pair.axis},
                   {"bindable", pair.bindable()},
                   {"why_not", pair.why_not},
                   {"past_copied_by", pair.past_copied_by_attention ? "attention" : "concat"}});
  }
  return out;
}

void PrintKvCaches(const nlohmann::ordered_json& pairs) {
  if (pairs.empty()) return;
  int64_t bindable = 0, by_attention = 0;
  for (const auto& p : pairs) {
    bindable += p["bindable"].get<bool>() ? 1 : 0;
    by_attention += p["past_copied_by"] == "attention" ? 1 : 0;
  }
  std::printf("kv caches: %zu past/present pair(s), %lld bindable in place; unbound, %lld past(s) copied by the "
              "attention as it reads them\n",
              pairs.size(), static_cast<long long>(bindable), static_cast<long long>(by_attention));
  for (const auto& p : pairs) {
    if (p["bindable"].get<bool>()) continue;
    std::printf("  %s -> %s: not bindable: %s\n", Escaped(p["input"].get<std::string>()).c_str(),
                Escaped(p["output"].get<std::string>()).c_str(), Escaped(p["why_not"].get<std::string>()).c_str());
  }
}

void PrintShortRequests(const nlohmann::ordered_json& gemms) {
  if (gemms.empty()) return;
  std::printf("short requests: %zu constant-weight GEMM class(es)\n", gemms.size());
  for (const auto& g : gemms) {
    const long long lo = g["min_rows"].get<long long>(), hi = g["max_rows"].get<long long>();
    std::printf("  %s x%lld: %s%s (%s)%s\n", g["config"].get<std::string>().c_str(), g["steps"].get<long long>(),
                g["engine"].get<std::string>().c_str(),
                hi == 0 ? " for every row count" : absl::StrCat(" for ", lo, "..", hi, " rows").c_str(),
                g["tuned"].get<bool>() ? "tuned" : "default",
                hi == 0 ? "" : absl::StrCat(", other rows on ", g["long_engine"].get<std::string>()).c_str());
  }
}

void PrintShapeText(const nlohmann::ordered_json& r) {
  // The model's path and names are printed escaped.
  std::printf("model: %s (policy %s)\n", Escaped(r["model"].get<std::string>()).c_str(),
              r["policy"].get<std::string>().c_str());
  std::printf("request dims:");
  for (const auto& [name, value] : r["dims"].items()) {
    std::printf(" %s=%lld", Escaped(name).c_str(), value.get<long long>());
  }
  std::printf("\ncompile: %.1f ms, %lld compile(s), %lld loaded from the cache, %lld kernel(s), %lld GEMM primitive(s), "
              "%lld fused attention(s)\n",
              r["compile_ms"].get<double>(), r["compiles"].get<long long>(), r["cache_loads"].get<long long>(),
              r["kernels"].get<long long>(), r["gemms"].get<long long>(), r["fused_attentions"].get<long long>());
  PrintShortRequests(r["short_request_gemms"]);
  PrintKvCaches(r["kv_caches"]);
  for (const auto& out : r["outputs"]) {
    std::printf("output %s: %s%s sum=%.6g abs_sum=%.6g\n", Escaped(out["name"].get<std::string>()).c_str(),
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

// One request shape, run 1 + --repeats times.
// What the importer did that the user should know (a dim limited by the
// model, an IR version checked as an older one) is the report's `notes`, and
// one `note:` line each in text mode.
void PrintNotes(const nlohmann::ordered_json& r) {
  for (const auto& note : r["notes"]) std::printf("note: %s\n", Escaped(note.get<std::string>()).c_str());
}

int RunOneShape(const RunFlags& flags, ImportedModel model) {
  std::vector<std::string> notes = model.notes;
  notes.insert(notes.end(), flags.tuning_notes.begin(), flags.tuning_notes.end());
  std::vector<InputRecipe> recipes = InputRecipes(*model.graph);
  std::optional<std::vector<Tensor>> given;
  if (!flags.inputs_from.empty()) {
    absl::StatusOr<std::vector<Tensor>> read = ReadInputsFromDir(flags.inputs_from, recipes);
    if (!read.ok()) return Fail(kExitUsage, std::string(read.status().message()));
    given = *std::move(read);
  }
  // The shapes of files read by --inputs-from bind like --input flags would;
  // errors name the flag the user gave.
  absl::StatusOr<Assignment> dims =
      given ? BindRequestDims(recipes, *model.env, InputShapeFlags(recipes, *given), flags.bindings,
                              absl::StrCat("--inputs-from ", flags.inputs_from))
            : BindRequestDims(recipes, *model.env, flags.input_shapes, flags.bindings);
  if (!dims.ok()) return Fail(kExitUsage, std::string(dims.status().message()));
  absl::StatusOr<std::vector<Tensor>> inputs = given ? *std::move(given) : MakeInputs(recipes, *dims, flags.seed);
  if (!inputs.ok()) return Fail(kExitUsage, std::string(inputs.status().message()));
  absl::StatusOr<PreparedModel> prepared = Prepare(flags, std::move(model));
  if (!prepared.ok()) return Fail(kExitUsage, absl::StrCat("compile: ", prepared.status().message()));
  runtime::Session& session = *prepared->session;

  std::optional<std::vector<Tensor>> reference;
  if (flags.check) {
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(*prepared->reference, *inputs);
    if (!expected.ok()) return Fail(kExitUsage, absl::StrCat("interpreter: ", expected.status().message()));
    reference = *std::move(expected);
  }

  // The first request's outputs are the ones summarized, checked and saved,
  // right away: holding them through the repeats would double the outputs'
  // memory in the reported peak RSS (a decode step's presents are most of it).
  std::vector<double> latencies_ms;
  nlohmann::ordered_json output_summaries = nlohmann::ordered_json::array();
  std::optional<TensorComparison> comparison;
  double first_result_ms = 0;
  std::shared_ptr<runtime::StepProfile> profile = flags.profile ? std::make_shared<runtime::StepProfile>() : nullptr;
  for (int64_t i = 0; i <= flags.repeats; ++i) {
    Clock::time_point start = Clock::now();
    absl::StatusOr<std::vector<Tensor>> result = session.Run(*inputs);
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (!result.ok()) return Fail(kExitUsage, std::string(result.status().message()));
    latencies_ms.push_back(ms);
    if (i > 0) continue;
    if (profile != nullptr) session.ProfileSteps(profile);  // the repeats, not the first run
    first_result_ms = std::chrono::duration<double, std::milli>(Clock::now() - flags.started).count();
    for (size_t k = 0; k < result->size(); ++k) {
      output_summaries.push_back(OutputSummary(prepared->output_names.at(k), (*result)[k]));
    }
    if (reference) comparison = CompareTensorLists(*result, *reference);
    if (!flags.save_outputs.empty()) {
      if (absl::Status s = WriteOutputsToDir(flags.save_outputs, prepared->output_names, *result); !s.ok()) {
        return Fail(kExitUsage, std::string(s.message()));
      }
    }
  }
  const runtime::SessionStats stats = session.stats();
  std::vector<int64_t> slot_values;
  for (const std::string& slot : session.dispatcher().slots()) slot_values.push_back(dims->at(slot));
  std::shared_ptr<const runtime::CacheEntry> entry = session.dispatcher().cache().Find(slot_values);
  double compile_ms = 0;
  for (const runtime::RecompileEvent& event : session.events()) compile_ms += event.compile_ms;

  nlohmann::ordered_json r;
  r["model"] = flags.model;
  r["notes"] = notes;
  r["policy"] = runtime::SpecializationPolicyName(flags.policy);
  r["dims"] = nlohmann::ordered_json::object();
  for (const SymbolInfo& s : session.dispatcher().env().symbols()) {
    if (auto it = dims->find(s.name); it != dims->end()) r["dims"][s.name] = it->second;
  }
  r["compiles"] = stats.dispatcher.compiles;
  r["recompiles"] = stats.dispatcher.misses;
  r["cache_loads"] = stats.dispatcher.cache_loads;
  r["cache_dir"] = flags.cache_dir;
  r["compile_ms"] = compile_ms;
  r["compile_s"] = compile_ms / 1000.0;
  const runtime::ProgramStats* program = entry != nullptr ? &entry->artifact->program->stats() : nullptr;
  r["entry_tier"] = entry != nullptr ? runtime::TierName(entry->tier) : "none";
  r["kernels"] = program != nullptr ? program->kernels : 0;
  r["gemms"] = program != nullptr ? program->gemms : 0;
  r["fused_attentions"] = program != nullptr ? program->attention_calls : 0;
  r["tuned_gemms"] = program != nullptr ? program->tuned_gemms : 0;
  r["tuning_file"] = flags.tuning_file;
  r["short_request_gemms"] = entry != nullptr ? ShortRequestGemmsJson(*entry->artifact->program)
                                              : nlohmann::ordered_json::array();
  r["kv_caches"] = entry != nullptr ? KvCachesJson(*entry->artifact->program) : nlohmann::ordered_json::array();
  AddWeightsReport(session, program, r);
  r["outputs"] = std::move(output_summaries);
  r["first_run_ms"] = latencies_ms[0];
  std::vector<double> steady(latencies_ms.begin() + 1, latencies_ms.end());
  r["repeats"] = flags.repeats;
  r["median_ms"] = Percentile(steady, 0.5);
  r["p99_ms"] = Percentile(steady, 0.99);
  r["peak_rss_mb"] = PeakRssMb();
  bool passed = true;
  if (comparison) {
    r["max_abs_error"] = comparison->max_abs_error;
    r["check_passed"] = passed = comparison->agree;
  }
  r["create_ms"] = prepared->create_us / 1000.0;
  // Model (or bundle) loading, session creation and the first request.
  r["time_to_first_result_ms"] = first_result_ms;
  AddFleetReport(session, !flags.remote_cache.url.empty(), r);
  AddDeviceReport(flags, session, r);
  if (profile != nullptr) r["step_profile"] = StepProfileJson(*profile);
  if (flags.json) {
    EmitMetrics(flags, session, r);
    std::printf("%s\n", JsonText(r).c_str());
  } else {
    PrintNotes(r);
    PrintShapeText(r);
    if (profile != nullptr) PrintStepProfile(r["step_profile"]);
    PrintDeviceReport(r);
    EmitMetrics(flags, session, r);
  }
  return passed ? kExitOk : kExitNegative;
}

int RunTrace(const RunFlags& flags, ImportedModel model) {
  const double load_us = std::chrono::duration<double, std::micro>(Clock::now() - flags.started).count();
  std::vector<std::string> notes = model.notes;
  notes.insert(notes.end(), flags.tuning_notes.begin(), flags.tuning_notes.end());
  absl::StatusOr<std::vector<Assignment>> trace = MakeTrace(flags.trace, *model.env);
  if (!trace.ok()) return Fail(kExitUsage, std::string(trace.status().message()));
  absl::StatusOr<PreparedModel> prepared = Prepare(flags, std::move(model));
  if (!prepared.ok()) return Fail(kExitUsage, absl::StrCat("compile: ", prepared.status().message()));
  ReplayOptions options;
  options.seed = flags.seed;
  options.check_every = flags.check_every;
  options.setup_us = load_us + prepared->create_us;
  absl::StatusOr<ReplayResult> result =
      ReplayTrace(*prepared->session, *prepared->reference, prepared->recipes, *trace, options);
  if (!result.ok()) return Fail(kExitUsage, std::string(result.status().message()));
  ReplaySetup setup;
  setup.model = flags.model;
  setup.policy = runtime::SpecializationPolicyName(flags.policy);
  setup.trace = flags.trace;
  setup.cache_dir = flags.cache_dir;
  setup.seed = flags.seed;
  setup.check_every = flags.check_every;
  setup.load_us = load_us;
  setup.create_us = prepared->create_us;
  nlohmann::ordered_json r = ReplayReportJson(setup, *result);
  r["notes"] = notes;
  const runtime::SessionStats trace_stats = prepared->session->stats();
  AddWeightsReport(*prepared->session, &trace_stats.program, r);
  r["peak_rss_mb"] = PeakRssMb();
  AddFleetReport(*prepared->session, !flags.remote_cache.url.empty(), r);
  AddDeviceReport(flags, *prepared->session, r);
  if (flags.json) {
    EmitMetrics(flags, *prepared->session, r);
    std::printf("%s\n", JsonText(r).c_str());
  } else {
    PrintNotes(r);
    PrintReplayReport(r);
    PrintDeviceReport(r);
    EmitMetrics(flags, *prepared->session, r);
  }
  return result->wrong_results == 0 && result->errors == 0 ? kExitOk : kExitNegative;
}

int Run(const std::vector<std::string>& raw_args) {
  absl::StatusOr<RunFlags> flags = ParseRunFlags(raw_args);
  if (!flags.ok()) return UsageError("run", kUsage, std::string(flags.status().message()));
  flags->started = Clock::now();
  absl::StatusOr<ImportedModel> model;
  if (IsBundlePath(flags->model)) {
    absl::StatusOr<runtime::bundle::Bundle> bundle = runtime::bundle::ReadBundle(flags->model, flags->sign_key);
    if (!bundle.ok()) return Fail(kExitUsage, std::string(bundle.status().message()));
    flags->bundle = std::make_shared<runtime::bundle::Bundle>(*std::move(bundle));
    flags->policy = flags->bundle->header.policy;
    // Its weights go from the bundle file to the spill as for a model file.
    std::unique_ptr<ConstantSpill> spill = OpenSpillIfAny(flags->weights_dir);
    model = runtime::bundle::ImportBundleModel(*flags->bundle, spill.get());
    std::string().swap(flags->bundle->model_onnx);
  } else {
    // The weights go straight from the file to the spill (never also into
    // the heap); a directory that cannot take them leaves that to the
    // session, which keeps them in memory and says why.
    std::unique_ptr<ConstantSpill> spill = OpenSpillIfAny(flags->weights_dir);
    model = LoadModel(flags->model, flags->dims, spill.get());
    if (model.ok() && flags->tuning == nullptr && flags->pack_small_row_gemms &&
        flags->device.device == runtime::Device::kCpu) {
      CachedTuning cached = TuningFromCacheDir(flags->cache_dir, flags->model, *model, flags->tune_budget_s,
                                               flags->long_rows_on_panels || !flags->weights_dir.empty());
      flags->tuning = std::move(cached.tuning);
      flags->tuning_file = std::move(cached.file);
      flags->tuning_notes = std::move(cached.notes);
    }
  }
  if (!model.ok()) return Fail(kExitUsage, std::string(model.status().message()));
  return flags->trace.empty() ? RunOneShape(*flags, *std::move(model)) : RunTrace(*flags, *std::move(model));
}

}  // namespace

SHAPESHIFT_COMMAND(run, "run", "compile a model and run one request shape or replay a trace of shapes", kUsage, Run);

}  // namespace shapeshift::tools
