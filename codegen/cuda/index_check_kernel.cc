#include "codegen/cuda/index_check_kernel.h"

namespace shapeshift::codegen::cuda {

CudaKernelSource IndexCheckKernel() {
  CudaKernelSource k;
  k.entry = kIndexCheckEntry;
  k.mapping = ThreadMapping::kFlat;
  k.work = SymExpr::Symbol("count");
  k.function = R"(
extern "C" __global__ void __launch_bounds__(256) ss_check_indices(void* const* buffers, const long long* dims) {
  const void* indices = buffers[0];
  long long* status = (long long*)buffers[1];
  const long long count = dims[0], indices_i32 = dims[1], axes = dims[2];
  SS_THREADS {
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < count;
         t += (long long)gridDim.x * blockDim.x) {
      const long long id = indices_i32 ? (long long)((const int*)indices)[t] : ((const long long*)indices)[t];
      const long long dim = dims[3 + t % axes];
      if (id < -dim || id >= dim) atomicMin(status, t);
    }
  }
}
)";
  return k;
}

}  // namespace shapeshift::codegen::cuda
