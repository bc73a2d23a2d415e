// Which of the three thread mappings (cuda_emitter.h) a kernel gets, from
// its structure alone: the questions the emitter asks of the IR before it
// writes any text, apart from the text itself. Internal to cuda/.
#ifndef SHAPESHIFT_CODEGEN_CUDA_THREAD_MAPPING_H_
#define SHAPESHIFT_CODEGEN_CUDA_THREAD_MAPPING_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/kernel_ir.h"

namespace shapeshift::codegen::cuda {

// A top-level loop of a block-per-row kernel and what it reduces.
struct RowLoopPlan {
  std::vector<std::string> reduced;  // top-level accumulators combined after the loop
  std::vector<ReduceOp> ops;         // their reduce op, one per entry of `reduced`
};

struct MappingPlan {
  ThreadMapping mapping = ThreadMapping::kThreadPerIteration;
  absl::flat_hash_map<const Stmt*, RowLoopPlan> loops;  // kBlockPerRow: per top-level loop
};

// kFlat when the body is one loop with dims-only bounds that may spread
// over threads; kBlockPerRow when every top-level loop reduces top-level
// accumulators it does not read (one op each); kThreadPerIteration else.
MappingPlan ChooseMapping(const Kernel& k);

// Whether `e` mentions only the kernel's dims.
bool OnlyDims(SymExpr e, const Kernel& k);
// max(end - begin, 0).
SymExpr TripCount(const Stmt& loop);

}  // namespace shapeshift::codegen::cuda

#endif  // SHAPESHIFT_CODEGEN_CUDA_THREAD_MAPPING_H_
