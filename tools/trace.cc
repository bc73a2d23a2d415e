#include "tools/trace.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "examples/models/model_builder.h"

namespace shapeshift::tools {
namespace {

// Sentence lengths: log-normal, median exp(3.2) ≈ 24 tokens.
constexpr double kLogMedian = 3.2;
constexpr double kLogSigma = 0.75;
// A bound on generated traces, so a typo cannot exhaust memory.
constexpr int64_t kMaxTraceRequests = 10'000'000;

// `flag` is the flag the user gave the spec with (`--trace`, `--warm`).
absl::Status SpecError(absl::string_view flag, const std::string& spec, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      flag, " ", spec, ": ", why, " (expected lognormal:N[:SEED], decode:N or file:PATH)"));
}

std::string KnownSymbols(const ShapeEnv& env) {
  std::vector<std::string> names;
  for (const SymbolInfo& s : env.symbols()) names.push_back(s.name);
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

// The names one dim goes by: ours first, then torch's exporter's. Every
// trace kind reads dims through this one table.
constexpr const char* kLengthNames[] = {"seq", "sequence"};
constexpr const char* kBatchNames[] = {"batch", "batch_size"};
constexpr const char* kPastNames[] = {"past", "past_sequence"};

// The first of `names` the model declares, or nullptr.
template <size_t N>
const SymbolInfo* FindFirst(const ShapeEnv& env, const char* const (&names)[N]) {
  for (const char* name : names) {
    if (const SymbolInfo* s = env.FindSymbol(name)) return s;
  }
  return nullptr;
}

// The model's dim `name` refers to: itself, or the model's spelling of the
// same dim (`seq` for a model with `sequence`), or nullptr.
const SymbolInfo* FindDim(const ShapeEnv& env, absl::string_view name) {
  if (const SymbolInfo* s = env.FindSymbol(std::string(name))) return s;
  for (const auto* names : {&kLengthNames, &kBatchNames, &kPastNames}) {
    if (std::find(std::begin(*names), std::end(*names), name) != std::end(*names)) return FindFirst(env, *names);
  }
  return nullptr;
}

// Every symbol at its declared minimum: the base each request overrides.
Assignment Minimums(const ShapeEnv& env) {
  Assignment dims;
  for (const SymbolInfo& s : env.symbols()) dims[s.name] = s.min;
  return dims;
}

absl::StatusOr<int64_t> ParseCount(absl::string_view flag, const std::string& spec, const std::string& text) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n < 1 || n > kMaxTraceRequests) {
    return SpecError(flag, spec, absl::StrCat("N must be an integer in 1..", kMaxTraceRequests));
  }
  return n;
}

int64_t BatchSize(examples::WeightGenerator& rng, const SymbolInfo& batch) {
  int64_t roll = rng.UniformInt(0, 99);
  int64_t size = roll < 80 ? batch.min : roll < 90 ? 2 : roll < 96 ? 4 : 8;
  return std::clamp(size, batch.min, batch.max);
}

absl::StatusOr<std::vector<Assignment>> LogNormalTrace(absl::string_view flag, const std::string& spec,
                                                       const std::string& args, const ShapeEnv& env) {
  std::vector<std::string> parts = absl::StrSplit(args, ':');
  if (parts.size() > 2) return SpecError(flag, spec, "too many ':' fields");
  absl::StatusOr<int64_t> n = ParseCount(flag, spec, parts[0]);
  if (!n.ok()) return n.status();
  uint64_t seed = 1;
  if (parts.size() == 2 && !absl::SimpleAtoi(parts[1], &seed)) {
    return SpecError(flag, spec, "SEED must be a non-negative integer");
  }
  const SymbolInfo* length = FindFirst(env, kLengthNames);
  if (length == nullptr) {
    return SpecError(flag, spec, absl::StrCat("the model has no length dim named seq or sequence (its dims: ",
                                              KnownSymbols(env), ")"));
  }
  const SymbolInfo* batch = FindFirst(env, kBatchNames);
  examples::WeightGenerator rng(seed);
  const Assignment base = Minimums(env);
  std::vector<Assignment> trace;
  trace.reserve(static_cast<size_t>(*n));
  for (int64_t i = 0; i < *n; ++i) {
    Assignment dims = base;
    double drawn = std::exp(kLogMedian + rng.Normal(static_cast<float>(kLogSigma)));
    dims[length->name] = std::clamp<int64_t>(std::llround(drawn), length->min, length->max);
    if (batch != nullptr) dims[batch->name] = BatchSize(rng, *batch);
    trace.push_back(std::move(dims));
  }
  return trace;
}

absl::StatusOr<std::vector<Assignment>> DecodeTrace(absl::string_view flag, const std::string& spec,
                                                    const std::string& args, const ShapeEnv& env) {
  absl::StatusOr<int64_t> n = ParseCount(flag, spec, args);
  if (!n.ok()) return n.status();
  const SymbolInfo* past = FindFirst(env, kPastNames);
  if (past == nullptr) {
    return SpecError(flag, spec, absl::StrCat("the model has no KV-cache dim 'past' or 'past_sequence' (its dims: ",
                                        KnownSymbols(env), "); decode traces need a model like builtin:gpt2-kv"));
  }
  if (*n - 1 > past->max - past->min) {
    return SpecError(flag, spec, absl::StrCat(*n, " steps grow past from ", past->min, " to ", past->min + *n - 1,
                                        ", beyond its declared range ", past->min, "..", past->max,
                                        " (declare a wider one with --dim ", past->name, "=LO..HI)"));
  }
  const SymbolInfo* seq = FindFirst(env, kLengthNames);
  if (seq != nullptr && (seq->min > 1 || seq->max < 1)) {
    return SpecError(flag, spec, absl::StrCat("a decode step has ", seq->name, " = 1, outside the declared range ",
                                        seq->min, "..", seq->max));
  }
  Assignment dims = Minimums(env);
  if (seq != nullptr) dims[seq->name] = 1;
  std::vector<Assignment> trace;
  trace.reserve(static_cast<size_t>(*n));
  for (int64_t step = 0; step < *n; ++step) {
    dims[past->name] = past->min + step;
    trace.push_back(dims);
  }
  return trace;
}

// The NAME=VALUE fields of one trace-file line, `batch=1 seq=37  # comment`;
// none for blank and comment lines.
absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ParseTraceLine(absl::string_view line) {
  line = line.substr(0, line.find('#'));
  std::vector<std::pair<std::string, int64_t>> fields;
  for (absl::string_view field : absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty())) {
    std::vector<absl::string_view> kv = absl::StrSplit(field, absl::MaxSplits('=', 1));
    int64_t value = 0;
    if (kv.size() != 2 || kv[0].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("'", field, "' is not NAME=VALUE (e.g. seq=37)"));
    }
    if (!absl::SimpleAtoi(kv[1], &value)) {
      return absl::InvalidArgumentError(absl::StrCat("'", field, "': the value is not an integer"));
    }
    fields.emplace_back(std::string(kv[0]), value);
  }
  return fields;
}

absl::StatusOr<std::vector<Assignment>> FileTrace(absl::string_view flag, const std::string& path,
                                                  const ShapeEnv& env) {
  std::error_code dir_error;
  if (std::filesystem::is_directory(path, dir_error)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " file:", path, ": is a directory, not a trace file"));
  }
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat(flag, " file:", path, ": cannot open the trace file"));
  const Assignment base = Minimums(env);
  std::vector<Assignment> trace;
  std::string line;
  for (int line_number = 1; std::getline(file, line); ++line_number) {
    auto error = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_number, ": ", why));
    };
    absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> fields = ParseTraceLine(line);
    if (!fields.ok()) return error(fields.status().message());
    if (fields->empty()) continue;
    Assignment dims = base;
    absl::flat_hash_set<std::string> given;
    for (const auto& [name, value] : *fields) {
      const SymbolInfo* s = FindDim(env, name);
      if (s == nullptr) {
        return error(absl::StrCat("the model has no dim '", name, "' (its dims: ", KnownSymbols(env), ")"));
      }
      const std::string aka = s->name == name ? "" : absl::StrCat(" (the model's ", s->name, ")");
      if (!given.insert(s->name).second) return error(absl::StrCat(name, aka, " is given twice"));
      if (value < s->min || value > s->max) {
        return error(absl::StrCat(name, aka, " = ", value, " is outside the declared range ", s->min, "..", s->max));
      }
      dims[s->name] = value;
    }
    trace.push_back(std::move(dims));
    if (static_cast<int64_t>(trace.size()) > kMaxTraceRequests) {
      return error(absl::StrCat("more than ", kMaxTraceRequests, " requests"));
    }
  }
  if (file.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  if (trace.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": the trace has no requests"));
  return trace;
}

}  // namespace

absl::StatusOr<std::vector<Assignment>> MakeTrace(const std::string& spec, const ShapeEnv& env,
                                                  absl::string_view flag) {
  size_t colon = spec.find(':');
  if (colon == std::string::npos) return SpecError(flag, spec, "missing KIND:");
  const std::string kind = spec.substr(0, colon);
  const std::string args = spec.substr(colon + 1);
  if (kind == "lognormal") return LogNormalTrace(flag, spec, args, env);
  if (kind == "decode") return DecodeTrace(flag, spec, args, env);
  if (kind == "file") {
    if (args.empty()) return SpecError(flag, spec, "missing PATH");
    return FileTrace(flag, args, env);
  }
  return SpecError(flag, spec, absl::StrCat("unknown kind '", kind, "'"));
}

std::string FormatRequest(const Assignment& request, const ShapeEnv& env) {
  std::vector<std::string> parts;
  for (const SymbolInfo& s : env.symbols()) {
    if (auto it = request.find(s.name); it != request.end()) parts.push_back(absl::StrCat(s.name, "=", it->second));
  }
  return absl::StrJoin(parts, " ");
}

}  // namespace shapeshift::tools
