// Machine probe: the measured FP32 FMA peak and stream bandwidth of this
// machine, so benchmarks report a fraction of what the hardware actually
// delivers here (a VM's clocks and memory are not the datasheet's).
//
// Header-only because every bench program is a single *_bench.cc file.
//  - FMA peak: each OpenMP thread runs a register-blocked loop of independent
//    AVX-512 FMAs (AVX2 FMA where AVX-512 is absent), 12 accumulators deep so
//    FMA latency is hidden; the best of several repeats counts.
//  - Stream bandwidth: the STREAM triad a = b + s*c over arrays far larger
//    than the last-level cache, counted as 3 arrays moved (STREAM's rule).
//    The stores are ordinary (checked: GCC emits no movnt here), so the
//    hardware also reads `a` for ownership: 4 streams move, 3 are counted.
//    A generated kernel with streaming stores moves exactly what it counts,
//    so a memory-bound one can exceed 1.0 of this figure.
//  - Read bandwidth: a sum over all three arrays (no stores), the ceiling of
//    a kernel that only reads, like a GEMV over weights. On the 2-core AMD
//    EPYC it is about the triad's figure, not 4/3 of it: two cores' reads
//    are bound by the misses each keeps in flight, not by the memory.
#ifndef SHAPESHIFT_BENCH_MACHINE_PROBE_H_
#define SHAPESHIFT_BENCH_MACHINE_PROBE_H_

#include <immintrin.h>
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace shapeshift::bench {

struct MachineProbe {
  double fma_gflops = 0;      // FP32, all threads, by wall-clock time
  double triad_gbytes_s = 0;  // all threads, by wall-clock time
  // The same by each thread's CPU time: what the machine delivers when the
  // threads are not time-sliced with other processes (a shared machine).
  double fma_gflops_cpu = 0;
  double triad_gbytes_s_cpu = 0;
  double read_gbytes_s = 0;  // all threads, by wall-clock time
  int threads = 0;
  int fma_lanes = 0;  // 16 with AVX-512, 8 with AVX2
};

namespace probe_internal {

inline double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace probe_internal

// CPU time consumed by the calling thread.
inline double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

namespace probe_internal {

constexpr int kAccumulators = 12;

__attribute__((target("avx512f"))) inline float FmaLoop512(int64_t iterations) {
  __m512 acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm512_set1_ps(0.001f * i);
  const __m512 mul = _mm512_set1_ps(0.9999f), add = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm512_fmadd_ps(acc[i], mul, add);
  }
  float sum = 0;
  for (int i = 0; i < kAccumulators; ++i) sum += _mm512_reduce_add_ps(acc[i]);
  return sum;
}

__attribute__((target("avx2,fma"))) inline float FmaLoop256(int64_t iterations) {
  __m256 acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm256_set1_ps(0.001f * i);
  const __m256 mul = _mm256_set1_ps(0.9999f), add = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm256_fmadd_ps(acc[i], mul, add);
  }
  alignas(32) float lanes[8];
  float sum = 0;
  for (int i = 0; i < kAccumulators; ++i) {
    _mm256_store_ps(lanes, acc[i]);
    for (float v : lanes) sum += v;
  }
  return sum;
}

// Sums x[begin, end) (end - begin a multiple of 32) with four independent
// 8-lane accumulators: loads only, two per cycle, far above what memory gives.
__attribute__((target("avx2"))) inline float ReadLoop256(const float* x, int64_t begin, int64_t end) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t i = begin; i < end; i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
    s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_loadu_ps(x + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_loadu_ps(x + i + 24));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  float sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

}  // namespace probe_internal

inline MachineProbe ProbeMachine() {
  using namespace probe_internal;
  MachineProbe probe;
  probe.threads = omp_get_max_threads();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  probe.fma_lanes = avx512 ? 16 : 8;
  const int64_t iterations = 20'000'000;
  volatile float sink = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    auto start = std::chrono::steady_clock::now();
    float total = 0;
    double rate_by_cpu = 0;  // sum over threads of flops / thread CPU time
    const double thread_flops = 2.0 * kAccumulators * probe.fma_lanes * iterations;
#pragma omp parallel reduction(+ : total, rate_by_cpu)
    {
      double cpu_start = ThreadCpuSeconds();
      total += avx512 ? FmaLoop512(iterations) : FmaLoop256(iterations);
      rate_by_cpu += thread_flops / (ThreadCpuSeconds() - cpu_start);
    }
    sink = total;  // keeps the loops alive
    double seconds = Seconds(start);
    probe.fma_gflops = std::max(probe.fma_gflops, thread_flops * probe.threads / seconds * 1e-9);
    probe.fma_gflops_cpu = std::max(probe.fma_gflops_cpu, rate_by_cpu * 1e-9);
  }

  const int64_t n = int64_t{16} << 20;  // 64 MiB per array, 2x the L3 of this machine
  std::vector<float> a(n), b(n), c(n);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0;
    b[i] = 1;
    c[i] = 2;
  }
  for (int repeat = 0; repeat < 5; ++repeat) {
    auto start = std::chrono::steady_clock::now();
    float* pa = a.data();
    const float* pb = b.data();
    const float* pc = c.data();
    double slowest_cpu = 0;
#pragma omp parallel reduction(max : slowest_cpu)
    {
      double cpu_start = ThreadCpuSeconds();
#pragma omp for schedule(static)
      for (int64_t i = 0; i < n; ++i) pa[i] = pb[i] + 3.0f * pc[i];
      slowest_cpu = ThreadCpuSeconds() - cpu_start;
    }
    double seconds = Seconds(start);
    double bytes = 3.0 * n * sizeof(float);
    probe.triad_gbytes_s = std::max(probe.triad_gbytes_s, bytes / seconds * 1e-9);
    probe.triad_gbytes_s_cpu = std::max(probe.triad_gbytes_s_cpu, bytes / slowest_cpu * 1e-9);
  }
  for (int repeat = 0; repeat < 5; ++repeat) {
    auto start = std::chrono::steady_clock::now();
    float total = 0;
    const float* arrays[3] = {a.data(), b.data(), c.data()};
#pragma omp parallel reduction(+ : total)
    {
      // Each thread a contiguous share of every array, in whole 32-float steps.
      const int64_t t = omp_get_thread_num(), count = omp_get_num_threads(), chunk = n / 32;
      for (const float* x : arrays) total += ReadLoop256(x, chunk * t / count * 32, chunk * (t + 1) / count * 32);
    }
    sink = total;
    probe.read_gbytes_s = std::max(probe.read_gbytes_s, 3.0 * n * sizeof(float) / Seconds(start) * 1e-9);
  }
  sink = a[n / 2];
  return probe;
}

}  // namespace shapeshift::bench

#endif  // SHAPESHIFT_BENCH_MACHINE_PROBE_H_
