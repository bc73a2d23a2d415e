// GemmTuning: which engine serves a short request of each constant-weight GEMM
// on this machine, as measured by `shapeshift tune` (gemm_tuner.h), read back
// from a tuning file, and applied by Program::Compile (CompileOptions::tuning).
//
// Why a file: the crossover between shapeshift's skinny GEMM
// (codegen/cpu/skinny_matmul.h) and oneDNN's runtime-M GEMM depends on the
// CPU (cache sizes, bandwidth, the instruction set), the thread count and the
// library versions, not on the model. A constant that was right on one
// machine (32 rows, measured on BERT-base's shapes) is wrong on the next, so
// the choice is measured once per machine and kept; a Program compiled with
// the same file makes the same choices (deterministic given the file).
//
// A GEMM's shape class is its MatmulConfig as DescribeConfig prints it
// (`matmul[m=?, k=768, n=3072, bias, gelu_erf]`: k, n, layout, scale and
// epilogue), one spelling shared by the tuner, the file, the compile and
// `inspect`. A class missing from the file gets the built-in default.
//
// The file is JSON (TuningFileJson / ParseTuningFile):
//   {"format": "shapeshift-gemm-tuning/1",
//    "machine": {"cpu": ..., "features": ..., "isa": "avx512", "threads": 2,
//                "onednn": "3.x.y", "compiler": ...},
//    "gemms": [{"config": "matmul[m=?, k=768, n=768, bias]",
//               "skinny_min_rows": 1, "skinny_max_rows": 128, "prefetch_rows": 32,
//               "measured": [{"m": 1, "skinny_us": ..., "onednn_us": ...}, ...],
//               "resume_at_rows": 256 (only where a budget cut the sweep)}],
//    "panel_gemms": [...the same, measured against the blocked GEMM over the panels...],
//    "models": ["/abs/bert.onnx, 438012345 bytes, modified 1733500000123456789", ...]}
// "models" (optional) lists the models every class of which the file holds:
// the lazy tuning's memo (tools/lazy_tuning.h), so a model run here before is
// not compiled again just to list its classes.
// A file made on another machine (MachineKey differs) is refused with the
// field that differs, never silently applied.
#ifndef SHAPESHIFT_RUNTIME_TUNING_GEMM_TUNING_H_
#define SHAPESHIFT_RUNTIME_TUNING_GEMM_TUNING_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codegen/cpu/onednn_matmul.h"
#include "codegen/cpu/skinny_matmul.h"

namespace shapeshift::runtime {

// What a tuning is valid for: the same CPU, instruction set, thread count and
// libraries.
struct MachineKey {
  std::string cpu;       // /proc/cpuinfo's model name (LLVM's CPU name as a fallback)
  std::string features;  // the host's LLVM feature string
  std::string isa;       // the skinny GEMM core tuned: "avx512" | "avx2"
  int threads = 0;       // the OpenMP team the measurements ran with
  std::string onednn;    // oneDNN's version, "major.minor.patch"
  std::string compiler;  // the GEMM engines' identity (object_store.h's GemmEngineIdentity)
};

// This process's key for `isa` and `threads`.
MachineKey HostMachineKey(codegen::cpu::SkinnyMatmul::Isa isa, int threads);
// OK when `file` was made for `host`; else FAILED_PRECONDITION naming the
// first field that differs and both values.
absl::Status CheckMachineKey(const MachineKey& file, const MachineKey& host);

// The most rows a tuning file gives the skinny GEMM (skinny_max_rows) and
// the largest row count it holds a timing for.
inline constexpr int64_t kMaxSkinnyRows = 4096;

// One timing behind a decision: medians over the tuner's repeats.
struct GemmTiming {
  int64_t m = 0;
  double skinny_us = 0;
  double onednn_us = 0;
};

struct GemmChoice {
  std::string config;           // DescribeConfig of the GEMM
  int64_t skinny_min_rows = 1;  // requests of skinny_min_rows..skinny_max_rows rows on the skinny GEMM
  int64_t skinny_max_rows = 0;  // (0: never)
  int64_t prefetch_rows = 0;    // SkinnyOptions::prefetch_rows
  std::vector<GemmTiming> measured;
  // 0: the rows sweep ran to its end. Else the tuner's budget cut it before
  // this grid point: the choice is not applied (Find skips it; the class
  // keeps the built-in defaults), and a later tuning run goes on from here
  // with the points and the prefetch distance measured so far
  // (TunerOptions::resume), so a class whose sweep costs more than one
  // run's budget is still measured whole, over several runs.
  int64_t resume_at_rows = 0;
  bool complete() const { return resume_at_rows == 0; }
};

// What a Program runs the rows the skinny GEMM does not take on, which is
// what the skinny GEMM is measured against: oneDNN's runtime-M GEMM over the
// plain weights, or oneDNN's blocked GEMM over the skinny GEMM's own panels
// (CompileOptions::long_rows_on_panels; codegen/cpu/panel_rows_matmul.h).
// The crossovers differ, so a file keeps one choice per class for each.
enum class LongRows { kPlain, kPanels };
const char* LongRowsName(LongRows long_rows);  // "onednn" | "onednn-panels"
// What the skinny GEMM is measured against in a Program compiled with
// `long_rows_on_panels` and the skinny GEMM's `isa` core: oneDNN's blocked
// GEMM over the AVX-512 panels; with the AVX2 core such a Program runs every
// row on the skinny GEMM (oneDNN 2.6 has no blocked kernel for its panels:
// codegen/cpu/panel_rows_matmul.h), so there is no crossover to measure and
// the choices against the runtime-M GEMM stand (which classes get the
// skinny GEMM at all). The one rule the compile, lazy tuning and
// `shapeshift tune` share.
LongRows LongRowsFor(bool long_rows_on_panels, codegen::cpu::SkinnyMatmul::Isa isa);

struct GemmTuning {
  MachineKey machine;
  std::map<std::string, GemmChoice> gemms;        // against LongRows::kPlain, by GemmChoice::config
  std::map<std::string, GemmChoice> panel_gemms;  // against LongRows::kPanels
  std::set<std::string> models;                   // models whose every class the file holds (opaque texts)

  std::map<std::string, GemmChoice>& Choices(LongRows long_rows) {
    return long_rows == LongRows::kPanels ? panel_gemms : gemms;
  }
  const std::map<std::string, GemmChoice>& Choices(LongRows long_rows) const {
    return long_rows == LongRows::kPanels ? panel_gemms : gemms;
  }
  // The choice for `config` against `long_rows`, or null when the file has
  // none or only a sweep the budget cut (GemmChoice::resume_at_rows).
  const GemmChoice* Find(const codegen::cpu::MatmulConfig& config, LongRows long_rows) const;
};

// The skinny GEMM's options for `config`: the tuned ones where `tuning` has
// the class (against `long_rows`), else SkinnyOptions' defaults; `threads`
// as given.
codegen::cpu::SkinnyOptions SkinnyOptionsFor(const GemmTuning* tuning, const codegen::cpu::MatmulConfig& config,
                                             LongRows long_rows, int threads);

std::string TuningFileJson(const GemmTuning& tuning);
// Errors name `source` (the file) and the entry or field at fault.
absl::StatusOr<GemmTuning> ParseTuningFile(absl::string_view text, absl::string_view source);
absl::StatusOr<GemmTuning> ReadTuningFile(const std::string& path);
absl::Status WriteTuningFile(const GemmTuning& tuning, const std::string& path);

// Where this machine's tuning lives inside a compile cache directory
// (runtime/persist): `shapeshift tune MODEL` without -o writes it there and
// `shapeshift run` without --tuning reads it from there.
// DIR/tuning/<16 hex digits of the SHA-256 of every key field>.json: one
// file per key, so a cache shared by machines, thread counts or builds keeps
// each one's own, and none is ever read for another (CheckMachineKey still
// checks the contents).
std::string TuningPathInCache(const std::string& cache_dir, const MachineKey& key);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_TUNING_GEMM_TUNING_H_
