#include "codegen/cpu/parallel_run.h"

#include <omp.h>

#include <algorithm>

namespace shapeshift::codegen::cpu {

int TeamFor(int64_t items) {
  if (items <= 1 || omp_in_parallel()) return 1;
  return std::max(omp_get_max_threads(), 1);
}

void RunParallel(KernelFn fn, int64_t total, void* const* buffers, const int64_t* dims) {
  if (total <= 0) return;
  const int threads = TeamFor(total);
  if (threads <= 1) {
    fn(0, total, buffers, dims);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    int64_t t = omp_get_thread_num();
    int64_t n = omp_get_num_threads();
    int64_t begin = total * t / n;
    int64_t end = total * (t + 1) / n;
    if (begin < end) fn(begin, end, buffers, dims);
  }
}

void RunParallel(const CompiledKernel& kernel, void* const* buffers, const int64_t* dims) {
  RunParallel(kernel.fn, kernel.extent(dims), buffers, dims);
}

ScopedOmpThreads::ScopedOmpThreads(int threads) {
  if (threads <= 0) return;
  previous_ = omp_get_max_threads();
  omp_set_num_threads(threads);
}

ScopedOmpThreads::~ScopedOmpThreads() {
  if (previous_ > 0) omp_set_num_threads(previous_);
}

}  // namespace shapeshift::codegen::cpu
