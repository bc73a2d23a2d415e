// The oracle side of `shapeshift fuzz`: deterministic request inputs per
// shape, the reference interpreter's outputs for them (memoized), and the
// tolerance a compiled output is held to.
//
// Why memoize per shape: the interpreter is the slow half of every check
// (it is never clever, see graph/interpreter.h) and fuzz runs repeat shapes
// — edge values recur by design, and every policy re-visits them. Inputs are
// a pure function of (seed, shape), so one interpreter run per distinct
// shape serves every case, mutant and minimization step with that shape.
// The memo is bounded in bytes (oldest shapes evicted first) so a run over a
// wide domain recomputes instead of exhausting memory.
#ifndef SHAPESHIFT_TOOLS_FUZZ_REFERENCE_H_
#define SHAPESHIFT_TOOLS_FUZZ_REFERENCE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "graph/tensor_compare.h"
#include "tools/model_loader.h"

namespace shapeshift::tools {

// Compiled output vs reference: CompareTensorLists (graph/tensor_compare.h,
// the rule every command reports against).

class ReferenceOracle {
 public:
  // `graph`: the model as loaded (not optimized; owned). `slots`: the
  // dynamic dims in the order shapes list them.
  ReferenceOracle(std::unique_ptr<Graph> graph, std::vector<InputRecipe> recipes, std::vector<std::string> slots,
                  uint64_t seed, size_t max_bytes);

  // The request inputs for `shape` (slot values), deterministic in the seed
  // and the shape. Valid until the next call.
  absl::StatusOr<const std::vector<Tensor>*> Inputs(const std::vector<int64_t>& shape);
  // The interpreter's outputs for Inputs(shape). Valid until the next call.
  absl::StatusOr<const std::vector<Tensor>*> Expected(const std::vector<int64_t>& shape);

  int64_t interpreter_runs() const { return interpreter_runs_; }

 private:
  struct Memo {
    std::vector<Tensor> inputs;
    std::vector<Tensor> expected;
    bool has_expected = false;
    size_t bytes = 0;
  };
  absl::StatusOr<Memo*> Lookup(const std::vector<int64_t>& shape);
  void EvictOver(size_t budget);

  std::unique_ptr<Graph> graph_;
  std::vector<InputRecipe> recipes_;
  std::vector<std::string> slots_;
  uint64_t seed_;
  size_t max_bytes_;
  size_t bytes_ = 0;
  int64_t interpreter_runs_ = 0;
  absl::flat_hash_map<std::vector<int64_t>, Memo> memo_;
  std::deque<std::vector<int64_t>> insertion_order_;
};

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_FUZZ_REFERENCE_H_
