// The fused attention core (codegen/cpu/fused_attention.h) against the
// unfused way the compiler runs attention today: oneDNN's batched Q·Kᵀ
// (runtime batch, S and T, static head dim, transpose_b, the 1/sqrt(d)
// scale as its output scale — OnednnMatmul exactly as lower_group.cc
// configures it), a vectorized softmax over the [b·h, S, T] scores with the
// mask (or the causal fill), and the batched P·V.
//
// Shapes are BERT-base-like: 12 heads of 64, S = T in {32, 128, 256, 512},
// batch 1 and 8, with a padding mask (the last eighth of each sequence
// masked with the lowest float) given per key, [b, 1, 1, T] (--mask key, the
// default), or materialized per query row, [b, 1, S, T] as real BERT
// exports give it, every row the same (--mask full: the fused kernel finds
// the rows equal and reads the mask per key), or with rows that differ
// (--mask rows: odd rows also mask the key before the padding, so the
// kernel reads the [S, T] mask and transposes it per key block); --mask
// both runs key and full, --mask all all three; and causal
// S = T = 128, 512 with fill = lowest. Both paths read dense [b, h, S, d]
// operands (the fused kernel could also read [b, S, h, d] in place: no
// transposes around it).
//
// --decode instead times one decode step with a KV cache: S = 1, T in
// {8, 128, 512, 1024, 2048} (K and V the dense presents [b, h, T, d]),
// causal with offset T - 1 and a [b, 1, 1, T] mask (left padding: the first
// eighth masked); the unfused path is the same GEMMs with m = 1 and the
// softmax. Its rows report GB/s of K and V read (2·b·h·T·d·4 bytes / time)
// and that as a fraction of the stream triad measured at start.
//
// Per shape and path: the median of --repeats calls (interleaved, after two
// warm-ups), GFLOP/s counting 4·b·h·S·T·d flops (the dense count, also for
// causal rows, where the fused kernel skips the blocks above the diagonal)
// and that as a fraction of the FMA peak measured at start
// (bench/machine_probe.h); the max |fused - unfused| as a sanity check.
// Time is wall-clock: note the load average.
//
//   build/bench/attention_bench [--repeats 15] [--threads T] [--isa avx512|avx2|portable]
//                               [--breakdown] [--seq 32,128,...] [--mask key|full|rows|both|all]
//                               [--decode [--decode-q S]] [--fused-only]
//
// --breakdown also prints the unfused path's three steps, each timed alone
// (median ms and, for the GEMMs, GFLOP/s at 2·b·h·S·T·d flops each);
// --seq keeps only those sequence lengths (with --decode: those T); --decode-q
// gives the decode rows S query rows (a few speculative tokens: causal with
// offset T - S); --fused-only times only the fused kernel (for perf record).
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
// i = r % S of batch r / (h·S)): y = s + mask[b][i][j] (the mask's rows
// mask_row_stride apart: 0 for [b, 1, 1, T], T for [b, 1, S, T]; or,
// causal, s + fill above the diagonal), then exp(y - max) / sum, in place,
// three passes per row, parallel over rows.
__attribute__((target("avx512f,fma"))) void Softmax512(float* scores, int64_t rows, int64_t S, int64_t T,
                                                       const float* mask, int64_t mask_row_stride, bool causal,
                                                       float fill) {
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    float* s = scores + row * T;
    const int64_t i = row % S, b = row / (kHeads * S);
    const float* m = mask == nullptr ? nullptr : mask + b * (mask_row_stride == 0 ? T : S * T) + i * mask_row_stride;
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
void SoftmaxPlain(float* scores, int64_t rows, int64_t S, int64_t T, const float* mask, int64_t mask_row_stride,
                  bool causal, float fill) {
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    float* s = scores + row * T;
    const int64_t i = row % S, b = row / (kHeads * S);
    const float* m = mask == nullptr ? nullptr : mask + b * (mask_row_stride == 0 ? T : S * T) + i * mask_row_stride;
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < T; ++j) {
      const bool allowed = !causal || j <= i + (T - S);
      s[j] = allowed ? s[j] + (m == nullptr ? 0.0f : m[j]) : s[j] + fill;
      top = std::max(top, s[j]);
    }
    float sum = 0;
    for (int64_t j = 0; j < T; ++j) sum += s[j] = std::exp(s[j] - top);
    for (int64_t j = 0; j < T; ++j) s[j] /= sum;
  }
}

struct Shape {
  int64_t batch, seq, kv_len;
  bool causal;
  bool full_mask;      // [b, 1, S, T] materialized, else [b, 1, 1, T] (none if causal and not decode)
  bool distinct_rows;  // full_mask: odd rows differ from even ones
  bool decode;         // S after T - S cached keys: causal with a [b, 1, 1, T] mask
};

struct Options {
  int repeats = 15;
  bool breakdown = false, fused_only = false;
  AttentionIsa isa = codegen::cpu::SelectedAttentionIsa();
  bool avx512_softmax = false;
};

// The unfused path's two GEMMs (the compiler's: batch, M and N at run time,
// the head dim static; Q·Kᵀ carries the 1/sqrt(d) scale).
struct Gemms {
  std::unique_ptr<OnednnMatmul> qk, pv;
};

// Times one shape both ways and prints its row.
void RunShape(const Shape& shape, const Options& o, Gemms& g, const MachineProbe& probe) {
  const int64_t b = shape.batch, S = shape.seq, T = shape.kv_len, bh = b * kHeads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  std::mt19937 rng(static_cast<uint32_t>(b * 1000 + S * 7 + T));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> q(bh * S * kHeadDim), k(bh * T * kHeadDim), v(bh * T * kHeadDim);
  for (auto* x : {&q, &k, &v})
    for (float& f : *x) f = uniform(rng);
  // Padding: prefill masks the last eighth of each sequence (right
  // padding), decode the first eighth (left padding: the new token is last).
  const bool has_mask = !shape.causal || shape.decode;
  const int64_t mask_rows = shape.full_mask ? S : 1;
  std::vector<float> mask;
  if (has_mask) {
    mask.assign(b * mask_rows * T, 0.0f);
    for (int64_t bb = 0; bb < b; ++bb)
      for (int64_t i = 0; i < mask_rows; ++i)
        for (int64_t j = 0; j < T / 8 + (shape.distinct_rows ? i % 2 : 0); ++j) {
          mask[(bb * mask_rows + i) * T + (shape.decode ? j : T - 1 - j)] = kLowest;
        }
  }
  const int64_t mask_row_stride = shape.full_mask ? T : 0;
  std::vector<float> scores(bh * S * T), unfused(bh * S * kHeadDim), fused(bh * S * kHeadDim);

  const float* m = has_mask ? mask.data() : nullptr;
  auto softmax = [&] {
    if (o.avx512_softmax) {
      Softmax512(scores.data(), bh * S, S, T, m, mask_row_stride, shape.causal, kLowest);
    } else {
      SoftmaxPlain(scores.data(), bh * S, S, T, m, mask_row_stride, shape.causal, kLowest);
    }
  };
  auto run_qk = [&] {
    absl::Status s =
        g.qk->Execute({bh, S, kHeadDim, T}, MatmulOperands{q.data(), k.data(), nullptr, nullptr, scores.data()});
    if (!s.ok()) Fail(s);
  };
  auto run_pv = [&] {
    absl::Status s =
        g.pv->Execute({bh, S, T, kHeadDim}, MatmulOperands{scores.data(), v.data(), nullptr, nullptr, unfused.data()});
    if (!s.ok()) Fail(s);
  };
  auto run_unfused = [&] {
    run_qk();
    softmax();
    run_pv();
  };
  AttentionArgs args;
  args.batch = b, args.heads = kHeads, args.kv_heads = kHeads, args.q_len = S, args.kv_len = T;
  args.head_dim = kHeadDim, args.v_head_dim = kHeadDim;
  args.q = {q.data(), kHeads * S * kHeadDim, S * kHeadDim, kHeadDim};
  args.k = {k.data(), kHeads * T * kHeadDim, T * kHeadDim, kHeadDim};
  args.v = {v.data(), kHeads * T * kHeadDim, T * kHeadDim, kHeadDim};
  args.out = {fused.data(), kHeads * S * kHeadDim, S * kHeadDim, kHeadDim};
  if (has_mask) args.mask = {mask.data(), mask_rows * T, 0, mask_row_stride};
  args.mask_col_stride = 1;
  args.scale = scale;
  args.causal = shape.causal;
  args.fill = kLowest;
  auto run_fused = [&] {
    if (absl::Status s = codegen::cpu::RunFusedAttentionOn(o.isa, args); !s.ok()) Fail(s);
  };

  std::vector<double> unfused_times, fused_times;
  for (int r = -2; r < o.repeats; ++r) {  // two warm-ups
    double start = Now();
    if (!o.fused_only) run_unfused();
    double mid = Now();
    run_fused();
    double end = Now();
    if (r >= 0) unfused_times.push_back(mid - start), fused_times.push_back(end - mid);
  }
  double diff = 0;
  for (size_t n = 0; n < fused.size(); ++n) diff = std::max(diff, double{std::abs(fused[n] - unfused[n])});
  const double flops = 4.0 * bh * S * T * kHeadDim;
  const double tu = Median(unfused_times), tf = Median(fused_times);
  const char* mask_name = shape.decode      ? "[b,1,1,T]"
                          : shape.causal    ? "causal"
                          : shape.full_mask ? (shape.distinct_rows ? "[b,1,S,T]~" : "[b,1,S,T]")
                                            : "[b,1,1,T]";
  if (shape.decode) {
    const double kv_bytes = 2.0 * bh * T * kHeadDim * sizeof(float);
    std::printf("%-5lld %4lld %5lld %-10s | %9.4f %7.1f | %9.4f %7.1f %5.0f%% | %6.2fx %9.2g\n",
                static_cast<long long>(b), static_cast<long long>(S), static_cast<long long>(T), mask_name, tu * 1e3,
                kv_bytes / tu * 1e-9, tf * 1e3, kv_bytes / tf * 1e-9, 100 * kv_bytes / tf * 1e-9 / probe.triad_gbytes_s,
                tu / tf, diff);
  } else {
    std::printf("%-5lld %4lld %5lld %-10s | %9.3f %7.1f | %9.3f %7.1f %5.0f%% | %6.2fx %9.2g\n",
                static_cast<long long>(b), static_cast<long long>(S), static_cast<long long>(T), mask_name, tu * 1e3,
                flops / tu * 1e-9, tf * 1e3, flops / tf * 1e-9, 100 * flops / tf * 1e-9 / probe.fma_gflops, tu / tf,
                diff);
  }
  if (o.breakdown && !o.fused_only) {
    std::vector<double> parts[3];
    for (int r = -1; r < o.repeats; ++r) {
      double t0 = Now();
      run_qk();
      double t1 = Now();
      softmax();
      double t2 = Now();
      run_pv();
      double t3 = Now();
      if (r >= 0) parts[0].push_back(t1 - t0), parts[1].push_back(t2 - t1), parts[2].push_back(t3 - t2);
    }
    const double qk_s = Median(parts[0]), sm_s = Median(parts[1]), pv_s = Median(parts[2]);
    std::printf("      unfused steps: Q·Kt %.4f ms (%.1f GFLOP/s), softmax %.4f ms, P·V %.4f ms (%.1f GFLOP/s)\n",
                qk_s * 1e3, flops / 2 / qk_s * 1e-9, sm_s * 1e3, pv_s * 1e3, flops / 2 / pv_s * 1e-9);
  }
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  Options o;
  int threads = 0;
  bool decode = false;
  int64_t decode_q = 1;
  std::string mask_kind = "key";
  std::vector<int64_t> seqs;
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
      o.repeats = std::atoi(value().c_str());
    } else if (arg == "--threads") {
      threads = std::atoi(value().c_str());
    } else if (arg == "--breakdown") {
      o.breakdown = true;
    } else if (arg == "--fused-only") {
      o.fused_only = true;
    } else if (arg == "--decode") {
      decode = true;
    } else if (arg == "--decode-q") {
      decode_q = std::atoi(value().c_str());
      if (decode_q < 1) {
        std::fprintf(stderr, "attention_bench: --decode-q must be at least 1\n");
        return 2;
      }
    } else if (arg == "--mask") {
      mask_kind = value();
      if (mask_kind != "key" && mask_kind != "full" && mask_kind != "rows" && mask_kind != "both" &&
          mask_kind != "all") {
        std::fprintf(stderr, "attention_bench: unknown --mask '%s' (key, full, rows, both, all)\n", mask_kind.c_str());
        return 2;
      }
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
        o.isa = AttentionIsa::kAvx512;
      } else if (name == "avx2") {
        o.isa = AttentionIsa::kAvx2;
      } else if (name == "portable") {
        o.isa = AttentionIsa::kPortable;
      } else {
        std::fprintf(stderr, "attention_bench: unknown --isa '%s' (avx512, avx2, portable)\n", name.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: attention_bench [--repeats N] [--threads T] [--isa avx512|avx2|portable] [--breakdown] "
                   "[--seq 32,128,...] [--mask key|full|rows|both|all] [--decode [--decode-q S]] [--fused-only]\n");
      return arg == "--help" ? 0 : 2;
    }
  }
  if (o.repeats < 1) {
    std::fprintf(stderr, "attention_bench: --repeats must be at least 1\n");
    return 2;
  }
  if (threads > 0) omp_set_num_threads(threads);
  o.avx512_softmax = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  MachineProbe probe = ProbeMachine();
  std::printf(
      "threads %d, FMA peak %.1f GFLOP/s (by CPU time %.1f), triad %.1f GB/s (by CPU time %.1f), fused core %s, "
      "unfused softmax %s, median of %d\n",
      omp_get_max_threads(), probe.fma_gflops, probe.fma_gflops_cpu, probe.triad_gbytes_s, probe.triad_gbytes_s_cpu,
      AttentionIsaName(o.isa), o.avx512_softmax ? "avx512" : "plain", o.repeats);

  MatmulConfig qk_config;
  qk_config.batch = kRuntimeDim, qk_config.m = kRuntimeDim, qk_config.k = kHeadDim, qk_config.n = kRuntimeDim;
  qk_config.transpose_b = true, qk_config.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  MatmulConfig pv_config;
  pv_config.batch = kRuntimeDim, pv_config.m = kRuntimeDim, pv_config.k = kRuntimeDim, pv_config.n = kHeadDim;
  auto qk = OnednnMatmul::Create(qk_config);
  if (!qk.ok()) Fail(qk.status());
  auto pv = OnednnMatmul::Create(pv_config);
  if (!pv.ok()) Fail(pv.status());
  std::printf("unfused GEMMs: %s (%s), %s (%s)\n", codegen::cpu::DescribeConfig(qk_config).c_str(),
              (*qk)->implementation().c_str(), codegen::cpu::DescribeConfig(pv_config).c_str(),
              (*pv)->implementation().c_str());
  Gemms gemms{std::move(*qk), std::move(*pv)};

  std::vector<Shape> shapes;
  if (decode) {
    for (int64_t b : {1, 8})
      for (int64_t t : {8, 128, 512, 1024, 2048}) {
        if (seqs.empty() || std::find(seqs.begin(), seqs.end(), t) != seqs.end())
          shapes.push_back({b, decode_q, t, true, false, false, true});
      }
    std::printf(
        "decode: S = %lld, causal with offset T - S, [b,1,1,T] mask; GB/s = K and V bytes (2·b·h·T·d·4) / "
        "time, %% of the triad\n",
        static_cast<long long>(decode_q));
    std::printf("%-5s %4s %5s %-10s | %9s %7s | %9s %7s %6s | %7s %9s\n", "batch", "S", "T", "mask", "unfused ms",
                "GB/s", "fused ms", "GB/s", "triad", "speedup", "max|diff|");
  } else {
    for (const char* kind : {"key", "full", "rows"}) {
      const bool wanted =
          mask_kind == kind || mask_kind == "all" || (mask_kind == "both" && std::string(kind) != "rows");
      if (!wanted) continue;
      const bool full = std::string(kind) != "key", rows = std::string(kind) == "rows";
      for (int64_t b : {1, 8})
        for (int64_t s : {32, 128, 256, 512}) {
          if (seqs.empty() || std::find(seqs.begin(), seqs.end(), s) != seqs.end())
            shapes.push_back({b, s, s, false, full, rows, false});
        }
    }
    if (mask_kind == "key" || mask_kind == "both" || mask_kind == "all") {
      for (int64_t b : {1, 8})
        for (int64_t s : {128, 512}) {
          if (seqs.empty() || std::find(seqs.begin(), seqs.end(), s) != seqs.end())
            shapes.push_back({b, s, s, true, false, false, false});
        }
    }
    std::printf("%-5s %4s %5s %-10s | %9s %7s | %9s %7s %6s | %7s %9s\n", "batch", "S", "T", "mask", "unfused ms",
                "GFLOP/s", "fused ms", "GFLOP/s", "peak", "speedup", "max|diff|");
  }
  for (const Shape& shape : shapes) RunShape(shape, o, gemms, probe);
  return 0;
}

}  // namespace
}  // namespace shapeshift::bench

int main(int argc, char** argv) { return shapeshift::bench::Main(argc, argv); }
