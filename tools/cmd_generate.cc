// `shapeshift generate`: greedy decoding of a causal language model exported
// with its KV caches (past inputs, present outputs) — a prefill of a prompt
// with empty caches, then one token per step, each the argmax of the last
// position's logits — timed per step.
//
// Why a command: decoding is the workload whose shapes change on every step
// (the cache grows by one), and the one users measure in tokens per second.
// `run` times one request shape; this times the loop a serving system runs,
// on any export with caches (`export_models.py --llama-1b`, the zoo's
// `*-past` files), with the caches bound in place (runtime/kv_cache.h: each
// step appends its new positions to buffers that grow by powers of two) or,
// with `--plain-kv`, ONNX's plain semantics (each step's fresh `present`
// tensors become the next step's past: a copy of every cache per step).
//
// Inputs the loop feeds, decided by tools/model_loader.h's recipes: the
// token ids (`input_ids`, or the one input read as indices into an embedding
// table; ids drawn below its rows, else the logits' width), a mask
// (all ones over past + new positions), `position_ids` if present (past +
// 0..seq-1), and each past input of the Program's KV pairs; any other input is
// an error naming it. The prompt's ids are deterministic (--seed). The
// prefill's past is empty, so the past dim's range must include 0: a cache
// dim's default range does (graph/onnx/cache_dims.h); a declared one without
// 0 (`--dim past_sequence=1..N`) is exit 2 naming the dim.
//
// Prints the prefill time, per-step latency (median, p90, max), decode
// tokens/s (batch × steps / their total time), compiles, cache growths and
// the generated ids of the first row; `--json` prints them as one object.
// Exit codes: 0 ok; 1 a step failed; 2 bad usage, a model that cannot be
// loaded or compiled, or one that is not a decoder with KV caches.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/constant_spill.h"
#include "nlohmann/json.hpp"
#include "runtime/kv_cache.h"
#include "runtime/session.h"
#include "runtime/specialization/policy.h"
#include "tools/args.h"
#include "tools/command.h"
#include "tools/lazy_tuning.h"
#include "tools/model_loader.h"
#include "tools/run_cache_dir.h"
#include "tools/run_replay.h"
#include "tools/terminal_text.h"

namespace shapeshift::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kName[] = "generate";
constexpr char kUsage[] =
    "usage: shapeshift generate MODEL.onnx [--prompt BxP] [--steps N] [--repeats R] [--dim name=lo..hi]...\n"
    "                           [--seed S | --prompt-ids ID,ID,...] [--plain-kv] [--policy P] [--no-fused-attention]\n"
    "                           [--cache-dir DIR | --no-cache] [--weights-dir DIR | --weights-in-memory]\n"
    "                           [--tune-budget-s S] [--json]\n"
    "  Greedy decoding of a causal LM exported with KV caches (past inputs, present outputs): a prefill of\n"
    "  B prompts of P deterministic token ids (--prompt, default 1x16; --seed, or --prompt-ids: the B*P ids,\n"
    "  row-major) with empty caches, then N - 1 one-token steps (--steps N generated tokens per row, default\n"
    "  32), each feeding the argmax of the last position's logits. The caches stay in place, in buffers\n"
    "  growing by powers of two (runtime/kv_cache.h); --plain-kv feeds each step's present outputs back as\n"
    "  its past inputs instead (ONNX's plain semantics: a copy of every cache per step). The prefill's past\n"
    "  is empty: a cache dim's default range starts at 0; a declared one must too (--dim past_sequence=0..N).\n"
    "  Prints the prefill time, per-step latency (median, p90, max), decode tokens/s, compiles, cache\n"
    "  growths and the first row's generated ids (--json: one object); --repeats R generates R times from\n"
    "  fresh caches (the prefill's median and\n"
    "  every step pooled). --policy, --no-fused-attention, --cache-dir/--no-cache, --weights-dir/\n"
    "  --weights-in-memory, --tune-budget-s (a model's first run here measures its GEMMs: default 10 s, 0 off):\n"
    "  as for run.\n"
    "  Exit: 0 ok, 1 a step failed, 2 bad usage or a model that is not a decoder with KV caches.\n";

struct GenerateFlags {
  std::string model;
  std::map<std::string, DimRange> dims;
  int64_t batch = 1, prompt = 16, steps = 32, repeats = 1;
  uint32_t seed = 1;
  std::vector<int64_t> prompt_ids;  // empty: random, from the seed
  bool plain = false, json = false, fuse_attention = true;
  std::optional<runtime::SpecializationPolicy> policy;
  std::string cache_dir, weights_dir;
  double tune_budget_s = kDefaultTuneBudgetS;
};

absl::StatusOr<GenerateFlags> ParseFlags(const std::vector<std::string>& raw) {
  FlagSpec spec;
  spec.valued = {"prompt", "prompt-ids", "steps", "repeats", "dim", "seed", "policy", "tune-budget-s", kCacheDirFlag,
                 kWeightsDirFlag};
  spec.switches = {"plain-kv", "json", "no-fused-attention", kNoCacheFlag, kWeightsInMemoryFlag};
  absl::StatusOr<ParsedArgs> args = ParseArgs(raw, spec);
  if (!args.ok()) return args.status();
  if (args->positional.size() != 1) return absl::InvalidArgumentError("expected exactly one MODEL argument");
  GenerateFlags flags;
  flags.model = args->positional[0];
  absl::StatusOr<std::map<std::string, DimRange>> dims = ParseDimFlags(args->All("dim"));
  if (!dims.ok()) return dims.status();
  flags.dims = *dims;
  const std::vector<std::string> prompt = absl::StrSplit(args->Get("prompt", "1x16"), 'x');
  if (prompt.size() != 2 || !absl::SimpleAtoi(prompt[0], &flags.batch) || !absl::SimpleAtoi(prompt[1], &flags.prompt) ||
      flags.batch < 1 || flags.prompt < 1 || flags.batch > 4096 || flags.prompt > 1 << 20) {
    return absl::InvalidArgumentError("--prompt: expected BxP, a batch and a prompt length >= 1 (e.g. 1x16)");
  }
  if (!absl::SimpleAtoi(args->Get("steps", "32"), &flags.steps) || flags.steps < 1 || flags.steps > 1 << 20) {
    return absl::InvalidArgumentError("--steps: expected an integer >= 1");
  }
  if (!absl::SimpleAtoi(args->Get("repeats", "1"), &flags.repeats) || flags.repeats < 1 || flags.repeats > 1000) {
    return absl::InvalidArgumentError("--repeats: expected an integer in 1..1000");
  }
  if (!absl::SimpleAtoi(args->Get("seed", "1"), &flags.seed)) {
    return absl::InvalidArgumentError("--seed: expected a non-negative integer");
  }
  if (args->Has("prompt-ids")) {
    if (args->Has("seed")) return absl::InvalidArgumentError("--prompt-ids gives the prompt: --seed draws it");
    for (absl::string_view part : absl::StrSplit(args->Get("prompt-ids"), ',')) {
      int64_t id = 0;
      if (!absl::SimpleAtoi(part, &id) || id < 0) {
        return absl::InvalidArgumentError("--prompt-ids: expected comma-separated token ids >= 0");
      }
      flags.prompt_ids.push_back(id);
    }
    if (static_cast<int64_t>(flags.prompt_ids.size()) != flags.batch * flags.prompt) {
      return absl::InvalidArgumentError(absl::StrCat("--prompt-ids: ", flags.prompt_ids.size(),
                                                     " ids for --prompt ", flags.batch, "x", flags.prompt,
                                                     " (expected ", flags.batch * flags.prompt, ")"));
    }
  }
  if (args->Has("policy")) {
    absl::StatusOr<runtime::SpecializationPolicy> policy = runtime::ParseSpecializationPolicy(args->Get("policy"));
    if (!policy.ok()) return absl::InvalidArgumentError(absl::StrCat("--policy: ", policy.status().message()));
    flags.policy = *policy;
  }
  flags.plain = args->Has("plain-kv");
  flags.json = args->Has("json");
  flags.fuse_attention = !args->Has("no-fused-attention");
  absl::StatusOr<std::string> cache_dir = CacheDirFromFlags(*args);
  if (!cache_dir.ok()) return cache_dir.status();
  flags.cache_dir = *cache_dir;
  absl::StatusOr<double> budget = TuneBudgetFromFlags(*args);
  if (!budget.ok()) return budget.status();
  flags.tune_budget_s = *budget;
  absl::StatusOr<std::string> weights_dir = WeightsDirFromFlags(*args, flags.cache_dir);
  if (!weights_dir.ok()) return weights_dir.status();
  flags.weights_dir = *std::move(weights_dir);
  return flags;
}

// What the loop feeds each graph input.
enum class Feed { kTokens, kMask, kPositions, kPast };

struct Plan {
  std::vector<Feed> feeds;  // per graph input
  int64_t vocab = 0;        // token ids are drawn from [0, vocab)
  int logits = -1;          // output index
  std::vector<int64_t> cache_shape;  // a past input's shape at length 0 for this batch
};

// Decides the feeds from the recipes and the Program's KV pairs; errors name
// the input or output that does not fit.
absl::StatusOr<Plan> PlanFeeds(const std::vector<InputRecipe>& recipes, const Graph& graph,
                               const runtime::Program& program, int64_t batch) {
  Plan plan;
  plan.feeds.resize(recipes.size());
  std::vector<const runtime::KvPairInfo*> past_pair(recipes.size(), nullptr);  // by graph input
  if (program.kv_pairs().empty()) {
    return absl::InvalidArgumentError(
        "the model has no KV caches (no past input whose present output is its Concat with new positions): "
        "generate decodes causal LMs exported with past key/values");
  }
  for (const runtime::KvPairInfo& pair : program.kv_pairs()) past_pair[pair.input_index] = &pair;
  int tokens = 0;
  for (size_t i = 0; i < recipes.size(); ++i) {
    const InputRecipe& r = recipes[i];
    if (const runtime::KvPairInfo* pair = past_pair[i]) {
      plan.feeds[i] = Feed::kPast;
      std::vector<int64_t> shape;
      for (size_t d = 0; d < r.type.shape.size(); ++d) {
        std::optional<int64_t> c = r.type.shape[d].AsConst();
        if (d == 0) {
          shape.push_back(batch);
        } else if (static_cast<int64_t>(d) == pair->axis) {
          shape.push_back(0);
        } else if (c) {
          shape.push_back(*c);
        } else {
          return absl::InvalidArgumentError(absl::StrCat("past input '", r.name, "': dim ", d,
                                                         " is neither the batch, the positions nor a constant"));
        }
      }
      if (!plan.cache_shape.empty() && plan.cache_shape != shape) {
        return absl::InvalidArgumentError(absl::StrCat("past input '", r.name,
                                                       "' has another shape than the first cache: generate keeps one "
                                                       "shape for every cache"));
      }
      plan.cache_shape = shape;
    } else if (r.type.dtype != DType::kI64 || r.type.rank() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("input '", r.name, "': generate feeds token ids, a mask and "
                                                     "position_ids as int64 [batch, positions], and the KV caches"));
    } else if (r.kind == InputRecipe::Kind::kTokenIds || r.name == "input_ids") {
      plan.feeds[i] = Feed::kTokens;
      if (r.kind == InputRecipe::Kind::kTokenIds) plan.vocab = r.limit;
      ++tokens;
    } else if (r.kind == InputRecipe::Kind::kMask) {
      plan.feeds[i] = Feed::kMask;
    } else if (r.name == "position_ids") {
      plan.feeds[i] = Feed::kPositions;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", r.name, "': generate feeds token ids, a mask, position_ids and the KV caches, not this input"));
    }
  }
  if (tokens != 1) {
    return absl::InvalidArgumentError(absl::StrCat("expected one token-id input (input_ids, or read as indices into an "
                                                   "embedding table), found ", tokens));
  }
  for (size_t o = 0; o < graph.outputs().size(); ++o) {
    const Value* v = graph.outputs()[o];
    if (v->name() == "logits" || (plan.logits < 0 && v->type().rank() == 3 && v->type().dtype == DType::kF32 &&
                                  std::none_of(program.kv_pairs().begin(), program.kv_pairs().end(),
                                               [&](const runtime::KvPairInfo& p) { return p.output_index == static_cast<int>(o); }))) {
      plan.logits = static_cast<int>(o);
    }
  }
  if (plan.logits < 0) return absl::InvalidArgumentError("no logits output (f32 [batch, sequence, vocab])");
  // Token ids index the embedding table where the recipe found one, else
  // the logits' vocabulary.
  std::optional<int64_t> vocab = graph.outputs()[plan.logits]->type().shape.back().AsConst();
  if (plan.vocab == 0 && vocab) plan.vocab = *vocab;
  if (plan.vocab < 1) return absl::InvalidArgumentError("the vocabulary size is unknown (logits' last dim is not a constant)");
  return plan;
}

// Each row's argmax over the last position of logits [batch, seq, vocab].
std::vector<int64_t> NextTokens(const Tensor& logits) {
  const int64_t batch = logits.shape()[0], seq = logits.shape()[1], vocab = logits.shape()[2];
  std::vector<int64_t> next(batch);
  for (int64_t b = 0; b < batch; ++b) {
    const float* row = logits.data<float>() + (b * seq + seq - 1) * vocab;
    next[b] = std::max_element(row, row + vocab) - row;
  }
  return next;
}

// One generation: the prefill of `prompt` with empty caches, then
// flags.steps - 1 one-token steps.
struct Decoded {
  absl::Status status;
  int64_t failed_step = -1;
  double prefill_ms = 0;
  std::vector<double> step_ms;
  std::vector<int64_t> generated;  // the first row's
  int64_t past = 0;                // positions cached at the end (or at the failed step)
  size_t growths = 0;
  int64_t capacity = 0;
};

Decoded Decode(runtime::Session& session, const Plan& plan, const GenerateFlags& flags, std::vector<int64_t> ids) {
  Decoded d;
  const std::vector<runtime::KvPairInfo>& pairs = session.program()->kv_pairs();
  std::optional<runtime::KvCache> bound;
  // --plain-kv: each past input's tensor, by graph-input index.
  std::vector<Tensor> plain(plan.feeds.size());
  if (flags.plain) {
    for (const runtime::KvPairInfo& pair : pairs) {
      plain[pair.input_index] = Tensor::FromVector(DType::kF32, plan.cache_shape, std::vector<float>{});
    }
  } else {
    absl::StatusOr<runtime::KvCache> cache = runtime::KvCache::Create(pairs, plan.cache_shape);
    if (!cache.ok()) {
      d.status = absl::InvalidArgumentError(absl::StrCat("binding the caches: ", cache.status().message()));
      d.failed_step = 0;
      return d;
    }
    bound = *std::move(cache);
  }
  for (int64_t step = 0; step < flags.steps; ++step) {
    const int64_t seq = static_cast<int64_t>(ids.size()) / flags.batch;
    std::vector<int64_t> mask(flags.batch * (d.past + seq), 1);
    std::vector<int64_t> positions(flags.batch * seq);
    for (int64_t b = 0; b < flags.batch; ++b) {
      for (int64_t s = 0; s < seq; ++s) positions[b * seq + s] = d.past + s;
    }
    const std::vector<int64_t> ids_shape = {flags.batch, seq}, mask_shape = {flags.batch, d.past + seq};
    std::vector<runtime::TensorView> inputs(plan.feeds.size());
    for (size_t i = 0; i < plan.feeds.size(); ++i) {
      switch (plan.feeds[i]) {
        case Feed::kTokens: inputs[i] = {DType::kI64, ids_shape, ids.data()}; break;
        case Feed::kMask: inputs[i] = {DType::kI64, mask_shape, mask.data()}; break;
        case Feed::kPositions: inputs[i] = {DType::kI64, ids_shape, positions.data()}; break;
        case Feed::kPast:
          if (flags.plain) inputs[i] = runtime::TensorView::Of(plain[i]);
          break;  // bound: KvCache::Prepare sets it
      }
    }
    const Clock::time_point start = Clock::now();
    absl::StatusOr<std::vector<Tensor>> outputs;
    if (bound) {
      absl::Status prepared = bound->Prepare(seq, inputs);
      outputs = prepared.ok() ? session.Run(inputs, bound->bindings()) : prepared;
      if (outputs.ok()) bound->Advance(seq);
    } else {
      outputs = session.Run(inputs);
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (!outputs.ok()) {
      d.status = outputs.status();
      d.failed_step = step;
      return d;
    }
    (step == 0 ? d.prefill_ms : d.step_ms.emplace_back()) = ms;
    std::vector<int64_t> next = NextTokens((*outputs)[plan.logits]);
    d.generated.push_back(next[0]);
    for (const runtime::KvPairInfo& pair : pairs) {
      if (flags.plain) plain[pair.input_index] = std::move((*outputs)[pair.output_index]);
    }
    d.past += seq;
    ids = std::move(next);
  }
  d.growths = bound ? bound->growths().size() : 0;
  d.capacity = bound ? bound->capacity() : d.past;
  return d;
}

int Generate(const std::vector<std::string>& raw) {
  absl::StatusOr<GenerateFlags> parsed = ParseFlags(raw);
  if (!parsed.ok()) return UsageError(kName, kUsage, std::string(parsed.status().message()));
  const GenerateFlags& flags = *parsed;
  // The weights go straight from the file to the spill, as for run.
  std::unique_ptr<ConstantSpill> spill = OpenSpillIfAny(flags.weights_dir);
  absl::StatusOr<ImportedModel> model = LoadModel(flags.model, flags.dims, spill.get());
  if (!model.ok()) return UsageError(kName, nullptr, std::string(model.status().message()));
  const std::vector<InputRecipe> recipes = InputRecipes(*model->graph);
  // This machine's GEMM choices, measured on the model's first run here.
  const CachedTuning tuning = TuningFromCacheDir(flags.cache_dir, flags.model, *model, flags.tune_budget_s,
                                                 /*long_rows_on_panels=*/!flags.weights_dir.empty());
  if (!flags.json) {
    for (const std::string& note : tuning.notes) std::fprintf(stderr, "note: %s\n", EscapedLines(note).c_str());
  }
  runtime::SessionOptions options;
  options.compile.fuse_attention = flags.fuse_attention;
  options.compile.tuning = tuning.tuning;
  if (flags.policy) options.policy = *flags.policy;
  options.cache_dir = flags.cache_dir;
  options.weights_dir = flags.weights_dir;
  const Clock::time_point create_start = Clock::now();
  absl::StatusOr<std::unique_ptr<runtime::Session>> created = runtime::Session::Create(
      runtime::ModelSource::Built(std::move(model->graph), std::move(model->env), flags.model), options);
  if (!created.ok()) return UsageError(kName, nullptr, std::string(created.status().message()));
  runtime::Session& session = **created;
  const double create_ms = std::chrono::duration<double, std::milli>(Clock::now() - create_start).count();
  if (session.program() == nullptr) {
    return UsageError(kName, nullptr, "the session compiled no polymorphic program to decode with");
  }
  absl::StatusOr<Plan> plan = PlanFeeds(recipes, session.graph(), *session.program(), flags.batch);
  if (!plan.ok()) return UsageError(kName, nullptr, std::string(plan.status().message()));

  std::vector<int64_t> ids = flags.prompt_ids;
  if (ids.empty()) {
    std::mt19937 rng(flags.seed);
    ids.resize(flags.batch * flags.prompt);
    for (int64_t& id : ids) id = static_cast<int64_t>(rng() % static_cast<uint64_t>(plan->vocab));
  }
  for (int64_t id : ids) {
    if (id >= plan->vocab) {
      return UsageError(kName, nullptr, absl::StrCat("--prompt-ids: id ", id, " is outside the vocabulary 0..",
                                                     plan->vocab - 1));
    }
  }
  std::vector<double> prefills_ms, step_ms;
  Decoded decoded;
  for (int64_t repeat = 0; repeat < flags.repeats; ++repeat) {
    decoded = Decode(session, *plan, flags, ids);
    if (!decoded.status.ok()) {
      std::fprintf(stderr, "shapeshift generate: step %lld (batch %lld, past %lld): %s\n",
                   static_cast<long long>(decoded.failed_step), static_cast<long long>(flags.batch),
                   static_cast<long long>(decoded.past), EscapedLines(std::string(decoded.status.message())).c_str());
      if (decoded.failed_step == 0) {
        std::fprintf(stderr, "  (the prefill's caches are empty: the past dim's range must admit 0, e.g. "
                             "--dim past_sequence=0..N)\n");
        return kExitUsage;
      }
      return kExitNegative;
    }
    prefills_ms.push_back(decoded.prefill_ms);
    step_ms.insert(step_ms.end(), decoded.step_ms.begin(), decoded.step_ms.end());
  }
  const std::vector<int64_t>& generated = decoded.generated;
  const double prefill_ms = Percentile(prefills_ms, 0.5);
  double decode_s = 0;
  for (double ms : step_ms) decode_s += ms / 1e3;
  const double tokens_per_s = decode_s > 0 ? static_cast<double>(flags.batch * step_ms.size()) / decode_s : 0;
  const int64_t compiles = session.stats().dispatcher.compiles;
  nlohmann::ordered_json r = {{"model", flags.model},
                              {"mode", flags.plain ? "plain" : "bound"},
                              {"batch", flags.batch},
                              {"prompt", flags.prompt},
                              {"steps", flags.steps},
                              {"create_ms", create_ms},
                              {"prefill_ms", prefill_ms},
                              {"prefills_ms", prefills_ms},
                              {"step_ms", {{"median", Percentile(step_ms, 0.5)}, {"p90", Percentile(step_ms, 0.9)},
                                           {"max", Percentile(step_ms, 1.0)}}},
                              {"decode_tokens_per_s", tokens_per_s},
                              {"compiles", compiles},
                              {"fused_attentions", session.program()->stats().attention_calls},
                              {"repeats", flags.repeats},
                              {"cache_growths", decoded.growths},
                              {"cache_capacity", decoded.capacity},
                              {"tuning_file", tuning.file},
                              {"notes", tuning.notes},
                              {"tokens", generated}};
  if (flags.json) {
    std::printf("%s\n", r.dump().c_str());
    return kExitOk;
  }
  std::printf("%s: batch %lld, prompt %lld, %lld tokens per row, caches %s\n", EscapedLines(flags.model).c_str(),
              static_cast<long long>(flags.batch), static_cast<long long>(flags.prompt),
              static_cast<long long>(flags.steps),
              flags.plain ? "copied into fresh present tensors every step (--plain-kv)" : "bound in place");
  std::printf("session created in %.1f ms; prefill %.2f ms\n", create_ms, prefill_ms);
  if (!step_ms.empty()) {
    std::printf("decode: %zu steps, median %.2f ms, p90 %.2f ms, max %.2f ms per step; %.1f tokens/s\n", step_ms.size(),
                Percentile(step_ms, 0.5), Percentile(step_ms, 0.9), Percentile(step_ms, 1.0), tokens_per_s);
  }
  std::printf("compiles: %lld; cache growths: %zu (capacity %lld)\n", static_cast<long long>(compiles), decoded.growths,
              static_cast<long long>(decoded.capacity));
  std::printf("tokens (row 0):");
  for (int64_t t : generated) std::printf(" %lld", static_cast<long long>(t));
  std::printf("\n");
  return kExitOk;
}

}  // namespace

SHAPESHIFT_COMMAND(generate, "generate", "greedy decoding of a causal LM with its KV caches bound in place, timed per step",
                   kUsage, Generate);

}  // namespace shapeshift::tools
