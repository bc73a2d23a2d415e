#include "codegen/cuda/gather_kernel.h"

namespace shapeshift::codegen::cuda {

int64_t GatherWordsPerRow(int64_t row_bytes) { return row_bytes % 4 == 0 ? row_bytes / 4 : row_bytes; }

CudaKernelSource GatherRowsKernel() {
  CudaKernelSource k;
  k.entry = kGatherRowsEntry;
  k.mapping = ThreadMapping::kFlat;
  k.work = SymExpr::Symbol("count") * SymExpr::Symbol("words_per_row");  // the launcher evaluates it natively
  k.function = R"(
extern "C" __global__ void __launch_bounds__(256) ss_gather_rows(void* const* buffers, const long long* dims) {
  const unsigned char* __restrict__ table = (const unsigned char*)buffers[0];
  const void* indices = buffers[1];
  unsigned char* __restrict__ out = (unsigned char*)buffers[2];
  long long* status = (long long*)buffers[3];
  const long long count = dims[0], row_bytes = dims[1], rows = dims[2], indices_i32 = dims[3];
  const long long word = row_bytes % 4 == 0 ? 4 : 1;
  const long long words = row_bytes / word;
  const long long total = count * words;
  SS_THREADS {
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
      const long long r = t / words, w = t - r * words;
      long long id = indices_i32 ? (long long)((const int*)indices)[r] : ((const long long*)indices)[r];
      if (id < 0) id += rows;
      if (id < 0 || id >= rows) {
        if (w == 0) atomicMin(status, r);
        continue;
      }
      if (word == 4) {
        ((unsigned int*)out)[r * words + w] = ((const unsigned int*)table)[id * words + w];
      } else {
        out[r * row_bytes + w] = table[id * row_bytes + w];
      }
    }
  }
}
)";
  return k;
}

}  // namespace shapeshift::codegen::cuda
