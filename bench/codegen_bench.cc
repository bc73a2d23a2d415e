// CPU kernel benchmarks (issue 4): oneDNN matmuls on BERT-base shapes with
// runtime vs static dims, and the generated fused memory-bound kernels.
// Every number is also printed as a fraction of this machine's measured peak
// (bench/machine_probe.h), measured at start-up in the same run:
//   frac_peak   = GFLOP/s / measured FP32 FMA peak      (matmuls)
//   frac_stream = GB/s    / measured stream triad bandwidth (fused kernels)
// (Rate counters print with a "/s" suffix; the fractions are plain ratios.)
// The *_cpu counters divide by the main thread's CPU time instead of wall
// time, against a probe measured the same way: on a machine shared with
// other jobs they estimate the uncontended numbers (OpenMP's spin-waiting
// counts as busy time, so they err low).
// Bytes for fused kernels are the minimum traffic: every input read once and
// the output written once.
//
//   build-c1/bench/codegen_bench --benchmark_min_time=0.3
#include <benchmark/benchmark.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/machine_probe.h"
#include "codegen/cpu/cpu_backend.h"
#include "codegen/cpu/onednn_matmul.h"
#include "codegen/cpu/parallel_run.h"
#include "codegen/kernel_library.h"

namespace shapeshift::bench {
namespace {

using codegen::cpu::kRuntimeDim;
using codegen::cpu::MatmulActivation;
using codegen::cpu::MatmulConfig;
using codegen::cpu::MatmulShape;
using codegen::cpu::OnednnMatmul;

MachineProbe g_probe;

std::vector<float> Filled(int64_t n, float value) { return std::vector<float>(n, value); }

// ---- Matmuls -------------------------------------------------------------------

struct GemmCase {
  std::string name;
  MatmulConfig config;  // with every dim static; runtime variants blank some
  MatmulShape shape;
};

void RunGemm(benchmark::State& state, GemmCase c, bool runtime_dims, bool packed) {
  MatmulConfig cfg = c.config;
  cfg.pack_b = packed;
  if (runtime_dims) {
    cfg.m = kRuntimeDim;
    if (cfg.batch != 0) cfg.batch = kRuntimeDim;
    // Attention matmuls vary with the sequence length in n (Q·Kᵀ) or k (P·V).
    if (cfg.batch != 0 && cfg.transpose_b) cfg.n = kRuntimeDim;
    if (cfg.batch != 0 && !cfg.transpose_b) cfg.k = kRuntimeDim;
  }
  auto mm = OnednnMatmul::Create(cfg);
  if (!mm.ok()) {
    state.SkipWithError(std::string(mm.status().message()).c_str());
    return;
  }
  const MatmulShape& s = c.shape;
  int64_t batch = cfg.batch == 0 ? 1 : s.batch;
  std::vector<float> a = Filled(batch * s.m * s.k, 0.01f), b = Filled(batch * s.k * s.n, 0.02f);
  std::vector<float> bias = Filled(s.n, 0.1f), out = Filled(batch * s.m * s.n, 0.0f);
  codegen::cpu::MatmulOperands ops{a.data(), b.data(), bias.data(), out.data(), out.data()};
  codegen::cpu::PackedWeights packed_b;
  if (packed) {
    auto made = (*mm)->PackB(b.data());
    if (!made.ok()) {
      state.SkipWithError(std::string(made.status().message()).c_str());
      return;
    }
    packed_b = *made;
    ops.b = packed_b.data();
  }
  double cpu_start = ThreadCpuSeconds();
  for (auto _ : state) {
    absl::Status st = (*mm)->Execute(s, ops);
    if (!st.ok()) {
      state.SkipWithError(std::string(st.message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out.data());
  }
  double cpu_seconds = ThreadCpuSeconds() - cpu_start;
  double flops = 2.0 * batch * s.m * s.k * s.n;
  state.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["frac_peak"] =
      benchmark::Counter(flops * 1e-9 / g_probe.fma_gflops, benchmark::Counter::kIsIterationInvariantRate);
  double gflops_cpu = flops * state.iterations() / cpu_seconds * 1e-9;
  state.counters["GFLOPS_cpu"] = gflops_cpu;
  state.counters["frac_peak_cpu"] = gflops_cpu / g_probe.fma_gflops_cpu;
  state.SetLabel((*mm)->implementation());
}

std::vector<GemmCase> BertGemms() {
  std::vector<GemmCase> cases;
  const int64_t hidden = 768, ffn = 3072, heads = 12, head_dim = 64;
  for (int64_t seq : {128, 384, 512}) {
    int64_t m = seq;  // batch 1: M = batch * seq
    cases.push_back({absl::StrCat("qkv_proj/M", m, "xK768xN768"),
                     MatmulConfig{.m = m, .k = hidden, .n = hidden, .bias = true}, {1, m, hidden, hidden}});
    cases.push_back({absl::StrCat("ffn_up_gelu/M", m, "xK768xN3072"),
                     MatmulConfig{.m = m, .k = hidden, .n = ffn, .bias = true, .activation = MatmulActivation::kGeluErf},
                     {1, m, hidden, ffn}});
    cases.push_back({absl::StrCat("ffn_down_residual/M", m, "xK3072xN768"),
                     MatmulConfig{.m = m, .k = ffn, .n = hidden, .bias = true, .residual = true}, {1, m, ffn, hidden}});
    cases.push_back({absl::StrCat("attn_qkT/B12xS", seq),
                     MatmulConfig{.batch = heads, .m = seq, .k = head_dim, .n = seq, .transpose_b = true, .scale = 0.125f},
                     {heads, seq, head_dim, seq}});
    cases.push_back({absl::StrCat("attn_pv/B12xS", seq),
                     MatmulConfig{.batch = heads, .m = seq, .k = seq, .n = head_dim}, {heads, seq, seq, head_dim}});
  }
  // batch 8 x seq 128: the serving case with several requests.
  cases.push_back({"qkv_proj/M1024xK768xN768", MatmulConfig{.m = 1024, .k = hidden, .n = hidden, .bias = true},
                   {1, 1024, hidden, hidden}});
  cases.push_back({"ffn_up_gelu/M1024xK768xN3072",
                   MatmulConfig{.m = 1024, .k = hidden, .n = ffn, .bias = true, .activation = MatmulActivation::kGeluErf},
                   {1, 1024, hidden, ffn}});
  return cases;
}

// ---- Fused kernels ----------------------------------------------------------------

codegen::cpu::CpuBackend* Backend() {
  static codegen::cpu::CpuBackend* backend = [] {
    auto created = codegen::cpu::CpuBackend::Create();
    if (!created.ok()) {
      std::fprintf(stderr, "CpuBackend: %s\n", std::string(created.status().message()).c_str());
      std::abort();
    }
    return created->release();
  }();
  return backend;
}

// Runs `kernel` over buffers sized `sizes` (floats), reporting `bytes` per run.
void RunFused(benchmark::State& state, const codegen::Kernel& kernel, std::vector<int64_t> sizes,
              std::vector<int64_t> dims, double bytes) {
  auto compiled = Backend()->Compile(kernel);
  if (!compiled.ok()) {
    state.SkipWithError(std::string(compiled.status().message()).c_str());
    return;
  }
  std::vector<std::vector<float>> storage;
  std::vector<void*> buffers;
  for (int64_t n : sizes) {
    storage.push_back(Filled(n, 0.5f));
    buffers.push_back(storage.back().data());
  }
  double cpu_start = ThreadCpuSeconds();
  for (auto _ : state) {
    codegen::cpu::RunParallel(**compiled, buffers.data(), dims.data());
    benchmark::ClobberMemory();
  }
  double cpu_seconds = ThreadCpuSeconds() - cpu_start;
  state.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["frac_stream"] =
      benchmark::Counter(bytes * 1e-9 / g_probe.triad_gbytes_s, benchmark::Counter::kIsIterationInvariantRate);
  double gbps_cpu = bytes * state.iterations() / cpu_seconds * 1e-9;
  state.counters["GBps_cpu"] = gbps_cpu;
  state.counters["frac_stream_cpu"] = gbps_cpu / g_probe.triad_gbytes_s_cpu;
  state.counters["compile_cpu_ms"] = (*compiled)->compile_cpu_seconds * 1e3;
}

// Kernels run on all OpenMP threads: time is wall-clock time.
void AddFused(const std::string& name, std::function<void(benchmark::State&)> run) {
  benchmark::RegisterBenchmark(name.c_str(), std::move(run))->UseRealTime();
}

void RegisterFused() {
  // Attention probabilities: [batch*heads*seq, seq] rows, mask per batch element.
  for (int64_t batch : {1, 4}) {
    const int64_t seq = 512, rows = batch * 12 * seq;
    double bytes = 4.0 * (2 * rows * seq + batch * seq);
    AddFused(absl::StrCat("fused/softmax_mask/rows", rows, "xn", seq).c_str(),
                                 [=](benchmark::State& s) {
                                   RunFused(s, codegen::SoftmaxKernel(0.125f), {rows * seq, batch * seq, rows * seq},
                                            {rows, seq, 12 * seq}, bytes);
                                 });
  }
  for (int64_t rows : {512, 16384}) {
    const int64_t n = 768;
    AddFused(absl::StrCat("fused/layer_norm/rows", rows, "xn", n).c_str(),
                                 [=](benchmark::State& s) {
                                   RunFused(s, codegen::LayerNormKernel(1e-12f), {rows * n, n, n, rows * n},
                                            {rows, n}, 4.0 * (2 * rows * n + 2 * n));
                                 });
  }
  for (int64_t rows : {512, 4096}) {
    const int64_t n = 3072;
    for (auto form : {codegen::GeluForm::kErf, codegen::GeluForm::kTanh}) {
      AddFused(
          absl::StrCat("fused/bias_gelu_", form == codegen::GeluForm::kErf ? "erf" : "tanh", "/rows", rows, "xn", n)
              .c_str(),
          [=](benchmark::State& s) {
            RunFused(s, codegen::BiasGeluKernel(form), {rows * n, n, rows * n}, {rows, n}, 4.0 * (2 * rows * n + n));
          });
    }
  }
  {
    const int64_t rows = 16384, n = 768;
    AddFused("fused/bias_residual/rows16384xn768", [=](benchmark::State& s) {
      RunFused(s, codegen::BiasResidualKernel(), {rows * n, n, rows * n, rows * n}, {rows, n}, 4.0 * (3 * rows * n + n));
    });
    // [batch 32, seq 512, heads 12, 64] -> [32, 12, 512, 64]
    const int64_t a = 32, b = 512, c = 12, d = 64;
    AddFused("fused/transpose_0213/32x512x12x64", [=](benchmark::State& s) {
      RunFused(s, codegen::Transpose0213Kernel(), {a * b * c * d, a * b * c * d}, {a, b, c, d}, 8.0 * a * b * c * d);
    });
  }
}

void RegisterAll() {
  benchmark::RegisterBenchmark("probe/fma_peak", [](benchmark::State& s) {
    // The probe ran in main(); this entry only reports it. (DoNotOptimize on
    // a global double corrupts it with GCC and benchmark 1.7, so: a copy.)
    for (auto _ : s) {
      double copy = g_probe.fma_gflops;
      benchmark::DoNotOptimize(copy);
    }
      s.counters["GFLOPS"] = g_probe.fma_gflops;
    s.counters["GFLOPS_cpu"] = g_probe.fma_gflops_cpu;
    s.counters["threads"] = g_probe.threads;
    s.counters["lanes"] = g_probe.fma_lanes;
  })->Iterations(1);
  benchmark::RegisterBenchmark("probe/stream_triad", [](benchmark::State& s) {
    for (auto _ : s) {
      double copy = g_probe.triad_gbytes_s;
      benchmark::DoNotOptimize(copy);
    }
    s.counters["GBps"] = g_probe.triad_gbytes_s;
    s.counters["GBps_cpu"] = g_probe.triad_gbytes_s_cpu;
  })->Iterations(1);
  for (const GemmCase& c : BertGemms()) {
    for (bool packed : {false, true}) {
      if (packed && c.config.batch != 0) continue;  // attention operands are activations
      for (bool runtime : {true, false}) {
        std::string variant = absl::StrCat(runtime ? "/runtime_dims" : "/static_dims", packed ? "_packed" : "");
        benchmark::RegisterBenchmark(absl::StrCat("matmul/", c.name, variant).c_str(),
                                     [=](benchmark::State& s) { RunGemm(s, c, runtime, packed); })
            ->UseRealTime();
      }
    }
  }
  RegisterFused();
}

}  // namespace
}  // namespace shapeshift::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  shapeshift::bench::g_probe = shapeshift::bench::ProbeMachine();
  const shapeshift::bench::MachineProbe& p = shapeshift::bench::g_probe;
  std::printf(
      "machine probe: FP32 FMA peak %.1f GFLOP/s (by CPU time %.1f; %d threads, %d lanes), stream triad %.1f GB/s "
      "(by CPU time %.1f), LLVM cpu %s\n",
      p.fma_gflops, p.fma_gflops_cpu, p.threads, p.fma_lanes, p.triad_gbytes_s, p.triad_gbytes_s_cpu,
      shapeshift::bench::Backend()->cpu_name().c_str());
  shapeshift::bench::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
