// The fused attention core (codegen/cpu/fused_attention.h) against the
// unfused way the compiler runs attention today: oneDNN's batched Q·Kᵀ
// (runtime batch, S and T, static head dim, transpose_b, the 1/sqrt(d)
// scale as its output scale — OnednnMatmul exactly as lower_group.cc
// configures it), a vectorized softmax over the [b·h, S, T] scores with the
// mask (or the causal fill), and the batched P·V.
//
// Shapes are BERT-base-like: 12 heads of 64, S = T in {32, 128, 256, 512},
// batch 1 and 8, with a [b, 1, 1, T] padding mask (the last eighth of each
// sequence masked with the lowest float); and causal S = T = 128, 512 with
// fill = lowest. Both paths read dense [b, h, S, d] operands (the fused
// kernel could also read [b, S, h, d] in place: no transposes around it).
//
// Per shape and path: the median of --repeats calls (interleaved, after a
// warm-up), GFLOP/s counting 4·b·h·S·T·d flops (the dense count, also for
// causal rows, where the fused kernel skips the blocks above the diagonal)
// and that as a fraction of the FMA peak measured at start
// (bench/machine_probe.h); the max |fused - unfused| as a sanity check.
// Time is wall-clock: note the load average.
//
//   build/bench/attention_bench [--repeats 11] [--threads T] [--isa avx512|avx2|portable]
//                               [--breakdown] [--seq 32,128,...] [--fused-only]
//
// --breakdown also prints the unfused path's three steps, each timed alone
// (median ms and, for the GEMMs, GFLOP/s at 2·b·h·S·T·d flops each);
// --seq keeps only those sequence lengths; --fused-only times only the
// fused kernel (for perf record).
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/machine_probe.h"
#include "codegen/cpu/fused_attention.h"
#include "codegen/cpu/onednn_matmul.h"

namespace shapeshift::bench {
namespace {

using codegen::cpu::AttentionArgs;
using codegen::cpu::AttentionIsa;
using codegen::cpu::AttentionIsaName;
using codegen::cpu::kRuntimeDim;
using codegen::cpu::MatmulConfig;
using codegen::cpu::MatmulOperands;
using codegen::cpu::MatmulShape;
using codegen::cpu::OnednnMatmul;

constexpr float kLowest = -3.4028235e38f;
constexpr int64_t kHeads = 12, kHeadDim = 64;

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

[[noreturn]] void Fail(const absl::Status& s) {
  std::fprintf(stderr, "attention_bench: %s\n", std::string(s.message()).c_str());
  std::exit(1);
}

// exp(x) for x <= 0, 0 below -87 (as the compiler's softmax kernel does it:
// a polynomial after range reduction by 2^n).
__attribute__((target("avx512f,fma"))) inline __m512 Exp512(__m512 x) {
  const __m512 floor = _mm512_set1_ps(-87.0f);
  const __mmask16 keep = _mm512_cmp_ps_mask(x, floor, _CMP_NLT_UQ);
  x = _mm512_max_ps(x, floor);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  for (float c : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f}) {
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  }
  return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(p, n));
}

// The unfused softmax over rows of T scores (rows = b·h·S, row r is query
// i = r % S of batch r / (h·S)): y = s + mask[b][j] (or, causal, s + fill
// above the diagonal), then exp(y - max) / sum, in place, three passes per
// row, parallel over rows.
__attribute__((target("avx512f,fma"))) void Softmax512(float* scores, int64_t rows, int64_t S, int64_t T,
                                                       const float* mask, bool causal, float fill) {
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    float* s = scores + row * T;
    const int64_t i = row % S, b = row / (kHeads * S);
    const float* m = mask == nullptr ? nullptr : mask + b * T;
    const int64_t allowed = causal ? std::min(T, i + (T - S) + 1) : T;
    __m512 top = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    for (int64_t j = 0; j < T; j += 16) {
      const __mmask16 live = static_cast<__mmask16>(T - j >= 16 ? 0xFFFF : (1u << (T - j)) - 1);
      __m512 y = _mm512_maskz_loadu_ps(live, s + j);
      if (m != nullptr) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(live, m + j));
      if (causal) {
        const int64_t past = std::clamp<int64_t>(allowed - j, 0, 16);
        const __mmask16 filled = static_cast<__mmask16>(~((1u << past) - 1));
        y = _mm512_mask_add_ps(y, filled, y, _mm512_set1_ps(fill));
      }
      _mm512_mask_storeu_ps(s + j, live, y);
      top = _mm512_mask_max_ps(top, live, top, y);
    }
    const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(top));
    __m512 sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < T; j += 16) {
      const __mmask16 live = static_cast<__mmask16>(T - j >= 16 ? 0xFFFF : (1u << (T - j)) - 1);
      const __m512 e = _mm512_maskz_mov_ps(live, Exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(live, s + j), mx)));
      _mm512_mask_storeu_ps(s + j, live, e);
      sum = _mm512_add_ps(sum, e);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (int64_t j = 0; j < T; j += 16) {
      const __mmask16 live = static_cast<__mmask16>(T - j >= 16 ? 0xFFFF : (1u << (T - j)) - 1);
      _mm512_mask_storeu_ps(s + j, live, _mm512_mul_ps(_mm512_maskz_loadu_ps(live, s + j), inv));
    }
  }
}

// The same in plain C++, for CPUs without AVX-512.
void SoftmaxPlain(float* scores, int64_t rows, int64_t S, int64_t T, const float* mask, bool causal, float fill) {
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    float* s = scores + row * T;
    const int64_t i = row % S, b = row / (kHeads * S);
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < T; ++j) {
      const bool allowed = !causal || j <= i + (T - S);
      s[j] = allowed ? s[j] + (mask == nullptr ? 0.0f : mask[b * T + j]) : s[j] + fill;
      top = std::max(top, s[j]);
    }
    float sum = 0;
    for (int64_t j = 0; j < T; ++j) sum += s[j] = std::exp(s[j] - top);
    for (int64_t j = 0; j < T; ++j) s[j] /= sum;
  }
}

struct Shape {
  int64_t batch, seq;
  bool causal;
};

int Main(int argc, char** argv) {
  int repeats = 11, threads = 0;
  bool breakdown = false, fused_only = false;
  std::vector<int64_t> seqs;
  AttentionIsa isa = codegen::cpu::SelectedAttentionIsa();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "attention_bench: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--repeats") {
      repeats = std::atoi(value().c_str());
    } else if (arg == "--threads") {
      threads = std::atoi(value().c_str());
    } else if (arg == "--breakdown") {
      breakdown = true;
    } else if (arg == "--fused-only") {
      fused_only = true;
    } else if (arg == "--seq") {
      for (absl::string_view part : absl::StrSplit(value(), ',')) {
        int64_t n = 0;
        if (!absl::SimpleAtoi(part, &n) || n < 1) {
          std::fprintf(stderr, "attention_bench: bad --seq value '%s'\n", std::string(part).c_str());
          return 2;
        }
        seqs.push_back(n);
      }
    } else if (arg == "--isa") {
      const std::string name = value();
      if (name == "avx512") {
        isa = AttentionIsa::kAvx512;
      } else if (name == "avx2") {
        isa = AttentionIsa::kAvx2;
      } else if (name == "portable") {
        isa = AttentionIsa::kPortable;
      } else {
        std::fprintf(stderr, "attention_bench: unknown --isa '%s' (avx512, avx2, portable)\n", name.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: attention_bench [--repeats N] [--threads T] [--isa avx512|avx2|portable] [--breakdown] "
                   "[--seq 32,128,...] [--fused-only]\n");
      return arg == "--help" ? 0 : 2;
    }
  }
  if (repeats < 1) {
    std::fprintf(stderr, "attention_bench: --repeats must be at least 1\n");
    return 2;
  }
  if (threads > 0) omp_set_num_threads(threads);
  const bool avx512_softmax = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  MachineProbe probe = ProbeMachine();
  std::printf("threads %d, FMA peak %.1f GFLOP/s (by CPU time %.1f), fused core %s, unfused softmax %s\n",
              omp_get_max_threads(), probe.fma_gflops, probe.fma_gflops_cpu, AttentionIsaName(isa),
              avx512_softmax ? "avx512" : "plain");

  // The compiler's two attention GEMMs: batch, S and T at run time, the
  // head dim static; Q·Kᵀ carries the 1/sqrt(d) scale.
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  MatmulConfig qk_config;
  qk_config.batch = kRuntimeDim, qk_config.m = kRuntimeDim, qk_config.k = kHeadDim, qk_config.n = kRuntimeDim;
  qk_config.transpose_b = true, qk_config.scale = scale;
  MatmulConfig pv_config;
  pv_config.batch = kRuntimeDim, pv_config.m = kRuntimeDim, pv_config.k = kRuntimeDim, pv_config.n = kHeadDim;
  auto qk = OnednnMatmul::Create(qk_config);
  if (!qk.ok()) Fail(qk.status());
  auto pv = OnednnMatmul::Create(pv_config);
  if (!pv.ok()) Fail(pv.status());
  std::printf("unfused GEMMs: %s (%s), %s (%s)\n", codegen::cpu::DescribeConfig(qk_config).c_str(),
              (*qk)->implementation().c_str(), codegen::cpu::DescribeConfig(pv_config).c_str(),
              (*pv)->implementation().c_str());

  const std::vector<Shape> shapes = {{1, 32, false}, {1, 128, false}, {1, 256, false}, {1, 512, false},
                                     {8, 32, false}, {8, 128, false}, {8, 256, false}, {8, 512, false},
                                     {1, 128, true}, {1, 512, true},  {8, 128, true},  {8, 512, true}};
  std::printf("%-5s %4s %4s %-7s | %9s %8s | %9s %8s %6s | %7s %9s\n", "batch", "S", "T", "mask", "unfused", "GFLOP/s",
              "fused", "GFLOP/s", "peak", "speedup", "max|diff|");
  for (const Shape& shape : shapes) {
    if (!seqs.empty() && std::find(seqs.begin(), seqs.end(), shape.seq) == seqs.end()) continue;
    const int64_t b = shape.batch, S = shape.seq, T = shape.seq, bh = b * kHeads;
    std::mt19937 rng(static_cast<uint32_t>(b * 1000 + S));
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> q(bh * S * kHeadDim), k(bh * T * kHeadDim), v(bh * T * kHeadDim);
    for (auto* x : {&q, &k, &v})
      for (float& f : *x) f = uniform(rng);
    std::vector<float> mask;
    if (!shape.causal) {
      mask.assign(b * T, 0.0f);
      for (int64_t bb = 0; bb < b; ++bb)
        for (int64_t j = T - T / 8; j < T; ++j) mask[bb * T + j] = kLowest;  // padding
    }
    std::vector<float> scores(bh * S * T), unfused(bh * S * kHeadDim), fused(bh * S * kHeadDim);

    auto run_unfused = [&] {
      absl::Status s =
          (*qk)->Execute({bh, S, kHeadDim, T}, MatmulOperands{q.data(), k.data(), nullptr, nullptr, scores.data()});
      if (!s.ok()) Fail(s);
      const float* m = shape.causal ? nullptr : mask.data();
      if (avx512_softmax) {
        Softmax512(scores.data(), bh * S, S, T, m, shape.causal, kLowest);
      } else {
        SoftmaxPlain(scores.data(), bh * S, S, T, m, shape.causal, kLowest);
      }
      s = (*pv)->Execute({bh, S, T, kHeadDim},
                         MatmulOperands{scores.data(), v.data(), nullptr, nullptr, unfused.data()});
      if (!s.ok()) Fail(s);
    };
    AttentionArgs args;
    args.batch = b, args.heads = kHeads, args.kv_heads = kHeads, args.q_len = S, args.kv_len = T;
    args.head_dim = kHeadDim, args.v_head_dim = kHeadDim;
    args.q = {q.data(), kHeads * S * kHeadDim, S * kHeadDim, kHeadDim};
    args.k = {k.data(), kHeads * T * kHeadDim, T * kHeadDim, kHeadDim};
    args.v = {v.data(), kHeads * T * kHeadDim, T * kHeadDim, kHeadDim};
    args.out = {fused.data(), kHeads * S * kHeadDim, S * kHeadDim, kHeadDim};
    if (!shape.causal) args.mask = {mask.data(), T, 0, 0};
    args.mask_col_stride = 1;
    args.scale = scale;
    args.causal = shape.causal;
    args.fill = kLowest;
    auto run_fused = [&] {
      if (absl::Status s = codegen::cpu::RunFusedAttentionOn(isa, args); !s.ok()) Fail(s);
    };

    std::vector<double> unfused_times, fused_times;
    for (int r = -2; r < repeats; ++r) {  // two warm-ups
      double start = Now();
      if (!fused_only) run_unfused();
      double mid = Now();
      run_fused();
      double end = Now();
      if (r >= 0) unfused_times.push_back(mid - start), fused_times.push_back(end - mid);
    }
    double diff = 0;
    for (size_t n = 0; n < fused.size(); ++n) diff = std::max(diff, double{std::abs(fused[n] - unfused[n])});
    const double flops = 4.0 * bh * S * T * kHeadDim;
    const double tu = Median(unfused_times), tf = Median(fused_times);
    std::printf("%-5lld %4lld %4lld %-7s | %9.3f %8.1f | %9.3f %8.1f %5.0f%% | %6.2fx %9.2g\n",
                static_cast<long long>(b), static_cast<long long>(S), static_cast<long long>(T),
                shape.causal ? "causal" : "[b,1,1,T]", tu * 1e3, flops / tu * 1e-9, tf * 1e3, flops / tf * 1e-9,
                100 * flops / tf * 1e-9 / probe.fma_gflops, tu / tf, diff);
    if (breakdown && !fused_only) {
      std::vector<double> parts[3];
      const float* m = shape.causal ? nullptr : mask.data();
      for (int r = -1; r < repeats; ++r) {
        double t0 = Now();
        absl::Status s =
            (*qk)->Execute({bh, S, kHeadDim, T}, MatmulOperands{q.data(), k.data(), nullptr, nullptr, scores.data()});
        double t1 = Now();
        if (avx512_softmax) {
          Softmax512(scores.data(), bh * S, S, T, m, shape.causal, kLowest);
        } else {
          SoftmaxPlain(scores.data(), bh * S, S, T, m, shape.causal, kLowest);
        }
        double t2 = Now();
        if (s.ok()) {
          s = (*pv)->Execute({bh, S, T, kHeadDim},
                             MatmulOperands{scores.data(), v.data(), nullptr, nullptr, unfused.data()});
        }
        double t3 = Now();
        if (!s.ok()) Fail(s);
        if (r >= 0) parts[0].push_back(t1 - t0), parts[1].push_back(t2 - t1), parts[2].push_back(t3 - t2);
      }
      const double qk_s = Median(parts[0]), sm_s = Median(parts[1]), pv_s = Median(parts[2]);
      std::printf("      unfused steps: Q·Kt %.3f ms (%.1f GFLOP/s), softmax %.3f ms, P·V %.3f ms (%.1f GFLOP/s)\n",
                  qk_s * 1e3, flops / 2 / qk_s * 1e-9, sm_s * 1e3, pv_s * 1e3, flops / 2 / pv_s * 1e-9);
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace shapeshift::bench

int main(int argc, char** argv) { return shapeshift::bench::Main(argc, argv); }
