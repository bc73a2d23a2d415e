// InputBinder: the one rule that turns a request's input tensors into the
// values of the model's dim symbols, and everything a request can get wrong
// about its inputs without running anything.
//
// The rule: each symbol is bound by the first input dim (in graph-input
// order, then dim order) that is exactly that symbol. Every other
// occurrence of a bound symbol must agree with it, a constant dim must
// equal its constant, and each bound value must lie in its symbol's
// declared range, and the bound values together must meet the domain's
// relations (ShapeEnv::domain_constraints(): GPT-2 with past serves
// `past_sequence + sequence <= 1024`). Dims that are expressions of symbols
// (`past + seq`, `2*seq`) are checked by whoever evaluates sizes (the
// Program's SymTape).
//
// Why one class: the Dispatcher binds a request before choosing an entry,
// and a Program binds the same request when it is run on its own; the CLI
// binds `--input NAME=SHAPE` flags by the same rule (bindings()). Written
// once, the three cannot disagree about which dim a symbol comes from or
// what an out-of-range message says.
#ifndef SHAPESHIFT_RUNTIME_INPUT_BINDER_H_
#define SHAPESHIFT_RUNTIME_INPUT_BINDER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/dtype.h"
#include "graph/graph.h"
#include "runtime/tensor_view.h"
#include "shapes/guard_program.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

// One bound symbol: where its value comes from and what it may be.
struct SymbolBinding {
  std::string name;
  int input = 0;  // inputs[input].shape[dim]
  int dim = 0;
  int64_t min = 0, max = 0;  // the declared range
  std::string note;          // RangeNoteSuffix: who limited the range ("" if nobody)
};

// What an input's dim is, for binding: it binds symbol `bind` (its first
// occurrence), repeats bound symbol `repeat`, is the constant `fixed`, or
// is an expression (none of these; the size evaluator checks it).
struct BoundInputDim {
  int bind = -1;
  int repeat = -1;
  std::optional<int64_t> fixed;
};

// The domain's relations between bound symbols, compiled once (a flat
// evaluator over the binder's slots: no allocation per request).
struct BoundRelations {
  GuardProgram program;  // atom k checks constraints[k] (pinned dims substituted)
  std::vector<DomainConstraint> constraints;
};

struct BoundInput {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<BoundInputDim> dims;
};

class InputBinder {
 public:
  // A symbol no ShapeEnv entry declares is an error naming the input and
  // dim, unless `allow_undeclared` (then its range is 0..INT64_MAX).
  static absl::StatusOr<InputBinder> Create(const Graph& graph, const ShapeEnv& env, bool allow_undeclared = false);

  // Checks the input count, each input's dtype, rank and constant dims,
  // binds each symbol into values[slot] (values.size() == symbols().size())
  // and checks its range, every repeated occurrence and the domain's
  // relations. Errors name the input, dim, symbol and range (a relation's
  // error: the symbols, their values, the relation and its note).
  absl::Status Bind(absl::Span<const TensorView> inputs, absl::Span<int64_t> values) const;

  // In binding order: slot i holds symbols()[i].
  const std::vector<SymbolBinding>& symbols() const { return symbols_; }
  const std::vector<BoundInput>& inputs() const { return inputs_; }
  std::vector<std::string> symbol_names() const;
  // The relations Bind checks (none: nullopt).
  const std::optional<BoundRelations>& relations() const { return relations_; }

 private:
  absl::Status RelationError(size_t failed, absl::Span<const int64_t> values) const;

  std::vector<SymbolBinding> symbols_;
  std::vector<BoundInput> inputs_;
  std::optional<BoundRelations> relations_;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_INPUT_BINDER_H_
