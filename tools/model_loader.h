// Model arguments of the CLI: `path/to/model.onnx` or `builtin:bert`,
// `builtin:gpt2`, `builtin:gpt2-kv` (the examples/ models at their default
// size), `builtin:bert-base` and `builtin:gpt2-base-kv` (the same builders
// at BERT-base's and GPT-2 small's sizes, random weights: what
// scripts/gpu-check.sh runs where no exporter is installed), plus `--dim name=lo..hi` overrides of the declared ranges — and the
// deterministic inputs a command feeds such a model for one request shape.
//
// Why one place: `run`, `demo`, tests and benchmarks must agree on what a
// built-in is (its size, its default ranges) and on what "random inputs of
// the right kind" means (token ids inside the vocabulary, masks of ones), or
// their numbers are not comparable.
//
// Default ranges. Built-ins: batch 1..8, seq 1..512 and, for gpt2-kv,
// past 0..511. ONNX files: the ranges the shapeshift exporter recorded in
// the file's metadata, else the importer's default (1..65536). `--dim`
// overrides either; a name the model does not have is an error listing the
// names it has.
#ifndef SHAPESHIFT_TOOLS_MODEL_LOADER_H_
#define SHAPESHIFT_TOOLS_MODEL_LOADER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/onnx/importer.h"
#include "graph/tensor.h"
#include "shapes/sym_expr.h"

namespace shapeshift::tools {

// The built-in model names (without the `builtin:` prefix), for help texts.
std::vector<std::string> BuiltinModelNames();

// Parses repeated `--dim name=lo..hi` values.
absl::StatusOr<std::map<std::string, DimRange>> ParseDimFlags(const std::vector<std::string>& flags);

// Loads `model_arg` with the declared ranges overridden by `dims`. The
// result's env holds every symbol with its final range. Errors name the
// argument (unknown built-in, unreadable file, unknown dim name). With
// `spill`, an ONNX file's large initializers go straight to it
// (ImportOptions::spill); built-in models are made in memory.
absl::StatusOr<ImportedModel> LoadModel(const std::string& model_arg, const std::map<std::string, DimRange>& dims,
                                        ConstantSpill* spill = nullptr);

// What one graph input is fed with.
struct InputRecipe {
  enum class Kind {
    kTokenIds,  // integer indices into a constant table: uniform in [0, limit)
    kMask,      // integer/bool input named like a mask: all ones
    kIntegers,  // other integers: uniform in [0, limit)
    kFloats,    // N(0, 1)
  };
  std::string name;
  TensorType type;
  Kind kind = Kind::kFloats;
  int64_t limit = 2;
};

// Decides each input's recipe from the graph (call before compiling: the
// compiler rewrites the graph). Token ids are recognized as inputs read as
// indices by a Gather on a constant table — directly or through Reshape,
// (Un)Squeeze, Flatten, Identity or an integer Cast — whose first dim is the
// limit.
std::vector<InputRecipe> InputRecipes(const Graph& graph);

// Binds symbols for one request: each `NAME=SHAPE` (`2x128`, `2,128`)
// binds the symbols of input NAME's declared dims, each `SYMBOL=N` in
// `bindings` binds one directly; symbols left unbound take their declared
// minimum. Errors name the flag: unknown input, wrong rank, a constant dim
// given another size, two flags disagreeing on a symbol, a value outside
// the symbol's declared range. `input_flag` is what the user gave the
// shapes with (`--inputs-from DIR` when they are read from files).
absl::StatusOr<Assignment> BindRequestDims(const std::vector<InputRecipe>& recipes, const ShapeEnv& env,
                                           const std::vector<std::string>& input_shapes,
                                           const std::vector<std::string>& bindings,
                                           const std::string& input_flag = "--input");

// Deterministic inputs (graph-input order) for the request `dims`.
absl::StatusOr<std::vector<Tensor>> MakeInputs(const std::vector<InputRecipe>& recipes, const Assignment& dims,
                                               uint64_t seed);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_MODEL_LOADER_H_
