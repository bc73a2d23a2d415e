// The memory budget of one `shapeshift fuzz` case: what a request shape
// would allocate, estimated before anything is allocated, and the limit it
// must stay under.
//
// Why: the declared domain of an exported model is often the importer's
// default, 1..65536 per dim, and a draw from its top octaves (batch 30000 x
// sequence 40000; fuzz_cases.h) asks for tens of gigabytes before the first kernel runs —
// the inputs alone. Under a memory limit that ended in std::bad_alloc and an
// abort. Each case is now sized from the model's symbolic types first; a
// shape over the budget is skipped and counted, never attempted.
//
// The estimate (bytes, saturating): the request's inputs; the reference
// interpreter's live intermediates at their peak, replaying its
// free-after-last-read order over the graph (graph/interpreter.cc), which
// includes the expected outputs; the compiled program's outputs; and its
// arena — the memory plan's own size expression (Program::arena_bytes())
// evaluated at the shape, from the entries that would serve it (FuzzRunner),
// or, before any entry exists, every intermediate of the graph summed (the
// planner's arena never exceeds its buffers laid end to end, and fusion
// only removes buffers). Sizes that depend on data (symbols a request does
// not bind) count as 0. A case that refuses the request (outside the
// domain, wrong rank or dtype) only allocates its inputs and a malformed
// copy: twice the inputs.
#ifndef SHAPESHIFT_TOOLS_FUZZ_BUDGET_H_
#define SHAPESHIFT_TOOLS_FUZZ_BUDGET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/sym_expr.h"

namespace shapeshift::tools {

struct CaseFootprint {
  uint64_t inputs = 0;
  uint64_t interpreter_peak = 0;     // live intermediates and outputs
  uint64_t outputs = 0;              // one copy
  uint64_t intermediates_total = 0;  // every intermediate at once: the arena's bound
  uint64_t arena = 0;                // the compiled run's arena (set by the caller)
  // Everything a served and checked case holds at once: inputs, the
  // interpreter's peak, the compiled run's arena and outputs.
  uint64_t served_total() const;
  // A refused case: the inputs and one malformed copy.
  uint64_t refused_total() const;
};

class CaseFootprintEstimator {
 public:
  // Reads the types and use lists of `graph` (the model as loaded, before
  // optimization); keeps no reference to it.
  explicit CaseFootprintEstimator(const Graph& graph);
  CaseFootprint Estimate(const Assignment& dims) const;

 private:
  struct SizedValue {
    uint64_t element_bytes = 0;
    std::vector<SymExpr> dims;
  };
  struct Step {
    std::vector<int> defines;  // indices into values_
    std::vector<int> frees;    // intermediates read for the last time here
  };
  uint64_t Bytes(int value, const Assignment& dims) const;

  std::vector<SizedValue> values_;
  std::vector<int> inputs_;
  std::vector<int> outputs_;
  std::vector<Step> steps_;
};

// The default --max-case-bytes: a quarter of the physical memory this
// process may use (the machine's, or the cgroup's memory.max when lower),
// and at most half the address-space limit (`ulimit -v`) when one is set.
uint64_t DefaultMaxCaseBytes();

// `--max-case-bytes` text: a positive integer of bytes, optionally with a
// binary suffix K, M, G or T (`512M`, `2G`).
absl::StatusOr<uint64_t> ParseByteCount(const std::string& text);

// `1.5 GiB`, for reports.
std::string FormatBytes(uint64_t bytes);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_FUZZ_BUDGET_H_
