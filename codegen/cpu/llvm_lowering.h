// Lowering of verified kernel IR to LLVM IR for the host CPU.
//
// The innermost loops are vectorized here, explicitly, rather than left to
// LLVM's loop vectorizer: the loop bounds are symbolic, the bodies call our
// vector exp/erf/tanh, and reductions need a vector accumulator; the loop
// vectorizer handles none of these reliably. Each innermost loop becomes a
// <W x T> main loop over floor(n/W)*W iterations followed by a
// remainder, so every length (0, 1, primes, 513) is correct.
// Loads/stores whose index is affine in the vector variable with stride 1
// become vector loads/stores, stride 0 a broadcast, anything else a
// gather/scatter. With `masked_tail` (AVX-512, where masked memory
// operations are native) the remainder is one masked vector iteration
// instead of a scalar loop, so short rows (n < W) run vectorized too.
//
// Emitted functions (the calling convention, see cpu_backend.h):
//   void <symbol>(int64_t begin, int64_t end, void* const* buffers, const int64_t* dims)
//   int64_t <symbol>_extent(const int64_t* dims)   // the parallel loop's trip count
#ifndef SHAPESHIFT_CODEGEN_CPU_LLVM_LOWERING_H_
#define SHAPESHIFT_CODEGEN_CPU_LLVM_LOWERING_H_

#include <string>

#include "absl/status/status.h"
#include "codegen/kernel_ir.h"
#include "llvm/IR/Module.h"

namespace shapeshift::codegen::cpu {

struct LoweringOptions {
  int vector_width = 16;     // lanes for f32; 1 disables explicit vectorization
  bool masked_tail = false;  // remainder as one masked vector iteration
  std::string cpu;           // "target-cpu" function attribute
  std::string features;      // "target-features" function attribute
};

// Adds the kernel function `symbol` and `symbol`_extent to `module`.
// `kernel` must have passed Verify().
absl::Status LowerKernel(const Kernel& kernel, const LoweringOptions& options,
                         const std::string& symbol, llvm::Module* module);

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_LLVM_LOWERING_H_
