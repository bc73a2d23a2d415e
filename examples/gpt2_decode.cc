// gpt2_decode: token-by-token greedy decoding with a growing KV cache
// through the public C++ API.
//
// Why this example: decoding is the workload where a shape-specializing
// compiler recompiles on every token — the cache length `past` grows by one
// per step, so every step is a new shape. shapeshift compiles the GPT-2-style
// decoder (examples/models/gpt2.h, builtin:gpt2-kv) once, polymorphic in
// batch, seq and past, through a Session under the default
// (auto) policy; this program shows the compile count staying at 1 while
// past goes 0, P, P+1, ...
//
// The loop: step 0 is the prefill — the prompt's P tokens with empty caches
// (past = 0). Each step takes the argmax of the last position's logits as
// the next token (greedy), and the next step feeds that one token (seq = 1).
// The caches stay in place (runtime/kv_cache.h): one buffer per
// present_key_i / present_value_i with room for more positions, bound to
// the step (Session::Run with KvCache::bindings()), its first `past`
// positions passed as past_key_i / past_value_i; a step appends its new
// positions there and copies nothing else. Buffers grow by power-of-two
// buckets (capacity 16, 32, ...), each growth printed. `--plain` runs plain
// ONNX semantics instead: each step's fresh present_* outputs become the
// next step's past_* inputs (inputs and outputs interleave the same way,
// so outputs[1..] are the next inputs[1..]) — a copy of every cache per step.
//
//   build/examples/gpt2_decode [--steps N] [--prompt ID,ID,...] [--plain] [--json [--logits]]
//
// Prints per-step latency and the compile count; `--json` prints one object
// (mode, tokens, growths, and per step: seq, past, capacity, next_token,
// latency_us, compiles, and with `--logits` the last position's logits) for
// tests that check the decode against a no-cache run. Exit codes: 0 ok; 1
// the model compiled more than once or a step failed; 2 bad usage.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "examples/models/gpt2.h"
#include "nlohmann/json.hpp"
#include "runtime/kv_cache.h"
#include "runtime/session.h"

namespace {

using shapeshift::DType;
using shapeshift::Tensor;
using shapeshift::runtime::KvCache;
using shapeshift::runtime::TensorView;
using shapeshift::runtime::ModelSource;
using shapeshift::runtime::Session;
using shapeshift::runtime::SessionOptions;

struct Flags {
  int64_t steps = 16;
  std::vector<int64_t> prompt = {464, 2068, 7586};
  bool json = false;
  bool logits = false;
  bool plain = false;
};

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "gpt2_decode: %s\nusage: gpt2_decode [--steps N] [--prompt ID,ID,...] [--plain] [--json [--logits]]\n",
               why.c_str());
  return 2;
}

// Returns an empty string on success, else what is wrong.
std::string ParseFlags(int argc, char** argv, int64_t vocab, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--json") {
      flags.json = true;
    } else if (arg == "--logits") {
      flags.logits = true;
    } else if (arg == "--plain") {
      flags.plain = true;
    } else if (arg == "--steps" && has_value) {
      if (!absl::SimpleAtoi(argv[++i], &flags.steps) || flags.steps < 1) return "--steps: expected an integer >= 1";
    } else if (arg == "--prompt" && has_value) {
      flags.prompt.clear();
      for (absl::string_view part : absl::StrSplit(argv[++i], ',')) {
        int64_t id = 0;
        if (!absl::SimpleAtoi(part, &id) || id < 0 || id >= vocab) {
          return "--prompt: expected comma-separated token ids in 0.." + std::to_string(vocab - 1);
        }
        flags.prompt.push_back(id);
      }
    } else {
      return "unknown or incomplete argument '" + arg + "'";
    }
  }
  if (flags.logits && !flags.json) return "--logits needs --json";
  return "";
}

// A past cache at length 0: f32[1, heads, 0, head_dim].
std::vector<int64_t> EmptyCacheShape(const shapeshift::examples::Gpt2Config& config) {
  return {1, config.heads, 0, config.hidden / config.heads};
}

// Empty caches for the prefill: past_key_i / past_value_i.
std::vector<Tensor> EmptyCaches(const shapeshift::examples::Gpt2Config& config) {
  std::vector<Tensor> caches;
  for (int64_t i = 0; i < 2 * config.layers; ++i) {
    caches.push_back(Tensor::FromVector(DType::kF32, EmptyCacheShape(config), std::vector<float>{}));
  }
  return caches;
}

// The argmax of logits[0, last, :] and that row.
std::pair<int64_t, std::vector<float>> LastPosition(const Tensor& logits) {
  const int64_t seq = logits.shape()[1], vocab = logits.shape()[2];
  const float* row = logits.data<float>() + (seq - 1) * vocab;
  std::vector<float> values(row, row + vocab);
  return {std::max_element(values.begin(), values.end()) - values.begin(), std::move(values)};
}

}  // namespace

int main(int argc, char** argv) {
  shapeshift::examples::Gpt2Config config;  // 4 layers, hidden 256, 4 heads, vocab 8192
  config.kv_cache = true;                   // batch 1..8, seq 1..512, past 0..511
  Flags flags;
  if (std::string why = ParseFlags(argc, argv, config.vocab, flags); !why.empty()) return Usage(why);
  if (flags.prompt.empty()) return Usage("--prompt: at least one token");
  const int64_t prompt_len = static_cast<int64_t>(flags.prompt.size());
  if (prompt_len > config.seq.max || prompt_len + flags.steps - 1 > config.past.max + 1) {
    return Usage("the prompt plus the steps exceed the declared ranges (seq 1..512, past 0..511)");
  }

  auto model = shapeshift::examples::BuildGpt2(config);
  if (!model.ok()) {
    std::fprintf(stderr, "build: %s\n", model.status().ToString().c_str());
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  auto session = Session::Create(ModelSource::Built(std::move(model->graph), std::move(model->env)), SessionOptions{});
  const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!session.ok()) {
    std::fprintf(stderr, "compile: %s\n", session.status().ToString().c_str());
    return 1;
  }

  nlohmann::json report = {{"model", "builtin:gpt2-kv"},
                            {"mode", flags.plain ? "plain" : "bound"},
                            {"prompt", flags.prompt},
                            {"growths", nlohmann::json::array()},
                            {"steps", nlohmann::json::array()}};
  if (!flags.json) {
    std::printf("gpt2-kv (%lld layers, hidden %lld, vocab %lld) compiled in %.1f ms before the first token; caches %s\n",
                static_cast<long long>(config.layers), static_cast<long long>(config.hidden),
                static_cast<long long>(config.vocab), compile_ms,
                flags.plain ? "copied into fresh present tensors every step (--plain)" : "bound in place");
  }
  // The bound form: the session's KV pairs, each in a buffer of 16 positions
  // to start with, never more than the model's past + seq range.
  std::optional<KvCache> bound;
  if (!flags.plain) {
    const shapeshift::runtime::Program* program = (*session)->program();
    if (program == nullptr) {
      std::fprintf(stderr, "the session compiled no polymorphic program to bind caches to\n");
      return 1;
    }
    auto cache = KvCache::Create(program->kv_pairs(), EmptyCacheShape(config), 16, config.past.max + config.seq.max);
    if (!cache.ok()) {
      std::fprintf(stderr, "binding the caches: %s\n", cache.status().ToString().c_str());
      return 1;
    }
    bound = *std::move(cache);
  }
  std::vector<int64_t> tokens = flags.prompt;
  std::vector<int64_t> step_ids = flags.prompt;  // what this step feeds
  std::vector<Tensor> caches = flags.plain ? EmptyCaches(config) : std::vector<Tensor>{};
  const size_t num_inputs = (*session)->graph().inputs().size();
  int64_t past = 0, compiles = 0;
  size_t growths_reported = 0;
  for (int64_t step = 0; step < flags.steps; ++step) {
    const int64_t seq = static_cast<int64_t>(step_ids.size());
    std::vector<int64_t> ids_shape = {1, seq};
    auto step_start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<Tensor>> outputs;
    if (bound.has_value()) {
      std::vector<TensorView> inputs(num_inputs);
      inputs[0] = TensorView{DType::kI64, ids_shape, step_ids.data()};
      absl::Status prepared = bound->Prepare(seq, inputs);
      outputs = prepared.ok() ? (*session)->Run(inputs, bound->bindings()) : prepared;
      if (outputs.ok()) bound->Advance(seq);
    } else {
      std::vector<Tensor> inputs = {Tensor::FromVector(DType::kI64, {1, seq}, step_ids)};
      for (Tensor& cache : caches) inputs.push_back(std::move(cache));
      outputs = (*session)->Run(inputs);
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - step_start).count();
    if (!outputs.ok()) {
      std::fprintf(stderr, "step %lld (seq %lld, past %lld): %s\n", static_cast<long long>(step),
                   static_cast<long long>(seq), static_cast<long long>(past), outputs.status().ToString().c_str());
      return 1;
    }
    auto [next, logits] = LastPosition((*outputs)[0]);
    compiles = (*session)->stats().dispatcher.compiles;
    const int64_t capacity = bound.has_value() ? bound->capacity() : past + seq;
    nlohmann::json record = {{"step", step},         {"seq", seq},      {"past", past},          {"capacity", capacity},
                             {"next_token", next}, {"latency_us", us}, {"compiles", compiles}};
    if (bound.has_value()) {
      for (; growths_reported < bound->growths().size(); ++growths_reported) {
        const KvCache::Growth& g = bound->growths()[growths_reported];
        report["growths"].push_back({{"step", step}, {"from", g.from}, {"to", g.to}, {"length", g.length}, {"needed", g.needed}});
        if (!flags.json) {
          std::printf("         caches grew %lld -> %lld positions (holding %lld, the step needs %lld): one copy, no compile\n",
                      static_cast<long long>(g.from), static_cast<long long>(g.to), static_cast<long long>(g.length),
                      static_cast<long long>(g.needed));
        }
      }
    }
    if (flags.logits) record["logits"] = logits;
    report["steps"].push_back(std::move(record));
    if (!flags.json) {
      std::printf("step %3lld: %s past %3lld -> token %5lld in %8.0f us (compiles so far: %lld)\n",
                  static_cast<long long>(step), step == 0 ? "prefill," : "1 token,", static_cast<long long>(past),
                  static_cast<long long>(next), us, static_cast<long long>(compiles));
    }
    if (!bound.has_value()) {
      caches.assign(std::make_move_iterator(outputs->begin() + 1), std::make_move_iterator(outputs->end()));
    }
    past += seq;
    tokens.push_back(next);
    step_ids = {next};
  }
  report["tokens"] = tokens;
  report["compiles"] = compiles;
  report["compile_ms"] = compile_ms;
  if (flags.json) {
    std::printf("%s\n", report.dump().c_str());
  } else {
    std::printf("tokens:");
    for (int64_t t : tokens) std::printf(" %lld", static_cast<long long>(t));
    std::printf("\ncompiles: %lld (one polymorphic artifact serves every cache length)\n",
                static_cast<long long>(compiles));
  }
  return compiles == 1 ? 0 : 1;
}
