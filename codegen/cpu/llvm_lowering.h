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
// Also on AVX-512, the last store of an output row is non-temporal (bypasses
// the cache, no read-for-ownership) when the call's output is larger than
// `streaming_store_min_bytes`: the kernel holds a cached and a streaming
// version of its loop and picks one at entry from the dims.
//
// Emitted functions (the calling convention, see cpu_backend.h):
//   void <symbol>(int64_t begin, int64_t end, void* const* buffers, const int64_t* dims)
//   int64_t <symbol>_extent(const int64_t* dims)   // the parallel loop's trip count
#ifndef SHAPESHIFT_CODEGEN_CPU_LLVM_LOWERING_H_
#define SHAPESHIFT_CODEGEN_CPU_LLVM_LOWERING_H_

#include <cstdint>
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
  // A call whose streamable stores (see llvm_lowering.cc) write at least
  // this many bytes uses non-temporal stores for them: half the 32 MiB L3
  // of the machine this was tuned on; smaller outputs stay in the cache for
  // the kernel that reads them next.
  int64_t streaming_store_min_bytes = int64_t{16} << 20;
};

// Adds the kernel function `symbol` and `symbol`_extent to `module`.
// `kernel` must have passed Verify().
absl::Status LowerKernel(const Kernel& kernel, const LoweringOptions& options,
                         const std::string& symbol, llvm::Module* module);

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_LLVM_LOWERING_H_
