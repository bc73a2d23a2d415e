// Host emulation of the CUDA C that cuda_emitter.h and gather_kernel.h emit.
//
// Included first (`c++ -include cuda_emulation.h -x c++ module.cu`), it lets
// the host compiler build the *same text* NVRTC compiles, so tests run every
// generated kernel on machines without a GPU and compare it with the
// interpreter. It is not a general CUDA emulator; it gives the emitter's
// dialect its GPU meaning:
//  - a launch runs its blocks one after another (ss_emu_launch); blocks of a
//    kernel never communicate, so any order is a valid schedule;
//  - `SS_THREADS { ... }` (the code between two barriers) is a loop over the
//    block's threads, and the barrier `SS_SYNC` is where one loop ends and
//    the next begins ("__syncthreads as a loop split");
//  - values living across a barrier (`SS_PRIVATE`/`SS_P`) are arrays indexed
//    by threadIdx.x; `__shared__` arrays are locals of the block's call;
//  - threads run in increasing order, or decreasing with `reverse`: a phase
//    whose result depends on the order has a data race on the GPU, which a
//    test sees as a difference between the two runs. Blocks reverse too.
// `__syncthreads()` itself is deliberately undefined: generated code must
// synchronize only through SS_SYNC, where the emulation can split.
#ifndef SHAPESHIFT_CODEGEN_CUDA_CUDA_EMULATION_H_
#define SHAPESHIFT_CODEGEN_CUDA_CUDA_EMULATION_H_

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SS_HOST_EMULATION 1
#define __global__ __attribute__((visibility("default")))
#define __device__ static inline
#define __forceinline__
#define __launch_bounds__(threads)
#define __shared__

struct ss_dim3 {
  unsigned x, y, z;
};
static ss_dim3 threadIdx, blockIdx, blockDim, gridDim;
static int ss_emu_reverse;

static inline unsigned ss_emu_thread(unsigned k) { return ss_emu_reverse ? blockDim.x - 1 - k : k; }

#define SS_THREADS \
  for (unsigned ss_emu_k = 0; ss_emu_k < blockDim.x; ++ss_emu_k) if ((threadIdx.x = ss_emu_thread(ss_emu_k)), true)
#define SS_SYNC
#define SS_PRIVATE(T, name) T name[SS_MAX_BLOCK]
#define SS_P(name) name[threadIdx.x]

static inline float __int_as_float(unsigned bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
// Sequential blocks and threads: the atomic is a plain read-modify-write.
static inline long long atomicMin(long long* address, long long value) {
  long long old = *address;
  if (value < old) *address = value;
  return old;
}

typedef void (*ss_emu_kernel)(void* const* buffers, const long long* dims);

// Runs `kernel` over `grid` blocks of `block` threads. 0 on success; 1 when
// the block is empty or larger than SS_MAX_BLOCK (the arrays' size).
extern "C" __attribute__((visibility("default"))) int ss_emu_launch(ss_emu_kernel kernel, unsigned grid,
                                                                    unsigned block, int reverse,
                                                                    void* const* buffers, const long long* dims) {
  if (block == 0 || block > 256 || grid == 0) return 1;
  blockDim = {block, 1, 1};
  gridDim = {grid, 1, 1};
  threadIdx = {0, 0, 0};
  ss_emu_reverse = reverse;
  for (unsigned k = 0; k < grid; ++k) {
    blockIdx = {reverse ? grid - 1 - k : k, 0, 0};
    kernel(buffers, dims);
  }
  return 0;
}

#endif  // SHAPESHIFT_CODEGEN_CUDA_CUDA_EMULATION_H_
