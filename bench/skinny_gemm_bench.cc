// The few-rows GEMM engines side by side: shapeshift's SkinnyMatmul against
// oneDNN's runtime-M primitive (gemm:jit over plain weights) and its static-M
// small-rows primitives over packed weights (SmallRowsMatmul, m 4..32), on
// the weight shapes of BERT-base, GPT-2 (with its 50257-wide LM head) and a
// ~1B Llama, at m = 1..32.
//
// Weights are cold, as in a model's forward pass: each engine cycles over
// enough copies of each matrix to exceed the last-level cache
// (--cold-bytes, default 256 MiB; each engine reads its copies in turn,
// so between two reads of one copy at least that much other data passes
// through the cache), and every call reads its weights from memory.
// Engines are interleaved call by call; each cell is the median of
// --repeats calls. Printed per cell: milliseconds, weight bytes read per
// second, and that as a fraction of the stream triad bandwidth measured at
// start (bench/machine_probe.h). Time is wall-clock; note the load average.
//
//   build/bench/skinny_gemm_bench [--repeats 21] [--threads T] [--shapes bert,gpt2,llama]
//                                 [--rows 1,2,4,8,16,32] [--prefetch 0,16,64] [--slice-bytes -1,0,4096]
//                                 [--next-panel 0,1]
//
// --prefetch lists SkinnyOptions::prefetch_rows values and --slice-bytes
// SkinnyOptions::slice_bytes values (-1: never slice k; 0: the default
// rule, SkinnyMatmul::KSlice) and --next-panel
// SkinnyOptions::prefetch_next_panel values (0, 1); each combination is its
// own engine.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/machine_probe.h"
#include "codegen/cpu/onednn_matmul.h"
#include "codegen/cpu/skinny_matmul.h"
#include "codegen/cpu/small_rows_matmul.h"

namespace shapeshift::bench {
namespace {

using codegen::cpu::kRuntimeDim;
using codegen::cpu::MatmulActivation;
using codegen::cpu::MatmulConfig;
using codegen::cpu::MatmulOperands;
using codegen::cpu::MatmulShape;
using codegen::cpu::OnednnMatmul;
using codegen::cpu::PackedWeights;
using codegen::cpu::SkinnyMatmul;
using codegen::cpu::SkinnyOptions;
using codegen::cpu::SmallRowsMatmul;

struct Shape {
  std::string family, name;
  MatmulConfig config;  // runtime m
};

std::vector<Shape> Shapes(const std::vector<std::string>& families) {
  auto gemm = [](int64_t k, int64_t n, bool bias, MatmulActivation act = MatmulActivation::kNone,
                 bool transpose = false) {
    MatmulConfig c;
    c.k = k, c.n = n, c.bias = bias, c.activation = act, c.transpose_b = transpose;
    return c;
  };
  std::vector<Shape> all = {
      {"bert", "qkv 768x768+bias", gemm(768, 768, true)},
      {"bert", "ffn-up 768x3072+bias+gelu", gemm(768, 3072, true, MatmulActivation::kGeluErf)},
      {"bert", "ffn-up 768x3072+bias, no gelu", gemm(768, 3072, true)},  // the GELU epilogue's cost
      {"bert", "ffn-down 3072x768+bias", gemm(3072, 768, true)},
      {"gpt2", "lm-head 768x50257 (wte^T)", gemm(768, 50257, false, MatmulActivation::kNone, true)},
      {"llama", "q/o 2048x2048", gemm(2048, 2048, false)},
      {"llama", "k/v 2048x256", gemm(2048, 256, false)},
      {"llama", "gate/up 2048x5632", gemm(2048, 5632, false)},
      {"llama", "down 5632x2048", gemm(5632, 2048, false)},
  };
  std::vector<Shape> picked;
  for (const Shape& s : all) {
    if (std::find(families.begin(), families.end(), s.family) != families.end()) picked.push_back(s);
  }
  return picked;
}

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One engine over `copies` weight copies: run(i, m) executes on copy i.
struct Engine {
  std::string name;
  std::function<bool(int64_t m)> covers;
  std::function<void(size_t copy, int64_t m)> run;
  size_t copies = 1;
  int64_t weight_bytes = 0;  // per copy, as the engine reads them
  size_t calls = 0;          // calls so far: the next one reads copy calls % copies
};

void Fail(const absl::Status& s) {
  std::fprintf(stderr, "skinny_gemm_bench: %s\n", std::string(s.message()).c_str());
  std::exit(1);
}

// Every (a, b, c) of three lists.
std::vector<std::tuple<int64_t, int64_t, int64_t>> Triples(const std::vector<int64_t>& as,
                                                           const std::vector<int64_t>& bs,
                                                           const std::vector<int64_t>& cs) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> triples;
  for (int64_t a : as)
    for (int64_t b : bs)
      for (int64_t c : cs) triples.emplace_back(a, b, c);
  return triples;
}

int Main(int argc, char** argv) {
  int repeats = 21, threads = 0;
  int64_t cold_bytes = int64_t{256} << 20;
  std::vector<std::string> families = {"bert", "gpt2", "llama"};
  std::vector<int64_t> rows = {1, 2, 4, 8, 16, 32};
  std::vector<int64_t> prefetches = {SkinnyOptions().prefetch_rows};
  std::vector<int64_t> slices = {SkinnyOptions().slice_bytes};
  std::vector<int64_t> next_panels = {SkinnyOptions().prefetch_next_panel ? 1 : 0};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "skinny_gemm_bench: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--repeats") {
      repeats = std::atoi(value().c_str());
    } else if (arg == "--threads") {
      threads = std::atoi(value().c_str());
    } else if (arg == "--cold-bytes") {
      cold_bytes = std::atoll(value().c_str());
    } else if (arg == "--shapes") {
      families = absl::StrSplit(value(), ',');
    } else if (arg == "--rows" || arg == "--prefetch" || arg == "--slice-bytes" || arg == "--next-panel") {
      std::vector<int64_t>& list = arg == "--rows"          ? rows
                                   : arg == "--prefetch"    ? prefetches
                                   : arg == "--slice-bytes" ? slices
                                                            : next_panels;
      list.clear();
      for (absl::string_view r : absl::StrSplit(value(), ',')) {
        int64_t v = 0;
        const int64_t least = arg == "--rows" ? 1 : arg == "--slice-bytes" ? -1 : 0;
        const int64_t most = arg == "--next-panel" ? 1 : std::numeric_limits<int64_t>::max();
        if (!absl::SimpleAtoi(r, &v) || v < least || v > most) {
          std::fprintf(stderr, "skinny_gemm_bench: bad %s value '%s'\n", arg.c_str(), std::string(r).c_str());
          return 2;
        }
        list.push_back(v);
      }
    } else {
      std::fprintf(stderr,
                   "usage: skinny_gemm_bench [--repeats N] [--threads T] [--cold-bytes B] "
                   "[--shapes bert,gpt2,llama] [--rows 1,2,4,...] [--prefetch 0,16,...] "
                   "[--slice-bytes -1,0,4096,...] [--next-panel 0,1]\n");
      return arg == "--help" ? 0 : 2;
    }
  }
  if (repeats < 1) {
    std::fprintf(stderr, "skinny_gemm_bench: --repeats must be at least 1\n");
    return 2;
  }
  for (const std::string& family : families) {
    if (family != "bert" && family != "gpt2" && family != "llama") {
      std::fprintf(stderr, "skinny_gemm_bench: unknown --shapes family '%s' (bert, gpt2, llama)\n", family.c_str());
      return 2;
    }
  }
  if (threads > 0) omp_set_num_threads(threads);
  MachineProbe probe = ProbeMachine();
  std::printf("threads %d, stream triad %.1f GB/s, read %.1f GB/s, FMA peak %.1f GFLOP/s\n", omp_get_max_threads(),
              probe.triad_gbytes_s, probe.read_gbytes_s, probe.fma_gflops);
  std::optional<SkinnyMatmul::Isa> isa = SkinnyMatmul::HostIsa();
  if (!isa) {
    std::fprintf(stderr, "skinny_gemm_bench: this CPU has neither AVX-512F nor AVX2+FMA\n");
    return 1;
  }
  const int64_t max_m = *std::max_element(rows.begin(), rows.end());
  std::printf("%-28s %4s  %-24s %9s %8s %7s %6s\n", "shape", "m", "engine", "ms", "GB/s", "triad", "read");
  for (const Shape& shape : Shapes(families)) {
    const MatmulConfig& cfg = shape.config;
    const int64_t plain_bytes = cfg.k * cfg.n * static_cast<int64_t>(sizeof(float));
    const size_t copies = static_cast<size_t>(std::max<int64_t>(2, (cold_bytes + plain_bytes - 1) / plain_bytes));
    // Plain weights (random enough: their values do not change the time).
    std::vector<std::vector<float>> plain(copies, std::vector<float>(cfg.k * cfg.n));
    for (size_t c = 0; c < copies; ++c)
      for (size_t i = 0; i < plain[c].size(); ++i) plain[c][i] = static_cast<float>((i * 7 + c) % 13) * 0.01f;
    std::vector<float> a(max_m * cfg.k, 0.01f), bias(cfg.n, 0.1f), out(max_m * cfg.n);
    std::vector<Engine> engines;

    for (const auto& [prefetch, slice, next_panel] : Triples(prefetches, slices, next_panels)) {
      auto skinny = SkinnyMatmul::Create(
          cfg, *isa, {.prefetch_rows = prefetch, .slice_bytes = slice, .prefetch_next_panel = next_panel != 0});
      if (!skinny.ok()) Fail(skinny.status());
      auto skinny_packed = std::make_shared<std::vector<PackedWeights>>();
      for (size_t c = 0; c < copies; ++c) {
        auto p = (*skinny)->PackB(plain[c].data());
        if (!p.ok()) Fail(p.status());
        skinny_packed->push_back(*p);
      }
      std::shared_ptr<SkinnyMatmul> sk = std::move(*skinny);
      engines.push_back({absl::StrCat("skinny/", codegen::cpu::IsaName(*isa), "/pf", prefetch,
                                      slice < 0 ? "/unsliced" : slice > 0 ? absl::StrCat("/slice", slice) : "",
                                      next_panel != SkinnyOptions().prefetch_next_panel
                                          ? (next_panel ? "/next-panel" : "/no-next-panel")
                                          : ""),
                         [](int64_t) { return true; },
                         [&, sk, skinny_packed](size_t c, int64_t m) {
                           MatmulOperands ops{a.data(), (*skinny_packed)[c].data(),
                                              cfg.bias ? bias.data() : nullptr, nullptr, out.data()};
                           if (absl::Status s = sk->Execute({1, m, cfg.k, cfg.n}, ops); !s.ok()) Fail(s);
                         },
                         copies, (*skinny_packed)[0].bytes()});
    }

    auto runtime = OnednnMatmul::Create(cfg);
    if (!runtime.ok()) Fail(runtime.status());
    std::shared_ptr<OnednnMatmul> rt = std::move(*runtime);
    engines.push_back({absl::StrCat("onednn-runtime/", rt->implementation()), [](int64_t) { return true; },
                       [&, rt](size_t c, int64_t m) {
                         MatmulOperands ops{a.data(), plain[c].data(), cfg.bias ? bias.data() : nullptr, nullptr,
                                            out.data()};
                         if (absl::Status s = rt->Execute({1, m, cfg.k, cfg.n}, ops); !s.ok()) Fail(s);
                       },
                       copies, plain_bytes});

    auto small = SmallRowsMatmul::Create(cfg);
    if (small.ok()) {
      auto small_packed = std::make_shared<std::vector<PackedWeights>>();
      for (size_t c = 0; c < copies; ++c) {
        auto p = (*small)->PackB(plain[c].data());
        if (!p.ok()) Fail(p.status());
        small_packed->push_back(*p);
      }
      std::shared_ptr<SmallRowsMatmul> sr = std::move(*small);
      engines.push_back({"onednn-small-rows-packed", [sr](int64_t m) { return sr->Covers(m); },
                         [&, sr, small_packed](size_t c, int64_t m) {
                           MatmulOperands ops{a.data(), (*small_packed)[c].data(),
                                              cfg.bias ? bias.data() : nullptr, nullptr, out.data()};
                           if (absl::Status s = sr->Execute({1, m, cfg.k, cfg.n}, ops); !s.ok()) Fail(s);
                         },
                         copies, (*small_packed)[0].bytes()});
    }

    for (int64_t m : rows) {
      std::vector<std::vector<double>> times(engines.size());
      for (int r = -1; r < repeats; ++r) {  // r = -1 warms up: code generation at a new m
        for (Engine& engine : engines) {
          if (!engine.covers(m)) continue;
          const size_t copy = engine.calls++ % engine.copies;
          double start = Now();
          engine.run(copy, m);
          if (r >= 0) times[&engine - engines.data()].push_back(Now() - start);
        }
      }
      for (size_t e = 0; e < engines.size(); ++e) {
        if (times[e].empty()) continue;
        double s = Median(times[e]);
        double gbs = engines[e].weight_bytes / s * 1e-9;
        std::printf("%-28s %4lld  %-24s %9.3f %8.1f %6.0f%% %5.0f%%\n", shape.name.c_str(), static_cast<long long>(m),
                    engines[e].name.c_str(), s * 1e3, gbs, 100 * gbs / probe.triad_gbytes_s,
                    100 * gbs / probe.read_gbytes_s);
      }
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace shapeshift::bench

int main(int argc, char** argv) { return shapeshift::bench::Main(argc, argv); }
