// TuneGemms: measures, on this machine, which engine serves short requests of
// each constant-weight GEMM class faster — shapeshift's skinny GEMM
// (codegen/cpu/skinny_matmul.h) over its panels, or oneDNN's runtime-M GEMM
// over the plain weights, the two a Program switches between — and returns
// the decisions as a GemmTuning (gemm_tuning.h) that `shapeshift tune` writes
// and Program::Compile applies.
//
// How it measures: weights are cold, as in a forward pass (each engine cycles
// over enough copies of the matrix to exceed the last-level cache,
// TunerOptions::cold_bytes); the two engines are interleaved call by call;
// each figure is the median of `repeats` calls after a warm-up call per row
// count (fewer on a point whose calls are long: RepeatsPerPoint). First the
// prefetch distance: every TunerOptions::prefetch value at
// m = TunerOptions::prefetch_at_rows, the fastest kept. Then the rows grid,
// ascending: the skinny GEMM's range starts at the first of the grid's first
// two points where it is faster than oneDNN (oneDNN's gemv path can win
// m = 1 alone: the LM head) and ends where the points from there on save
// the most in total (SkinnyRangeEnd: one point lost by a hair between wins
// does not end it); the sweep stops after two points lost in a row (their
// timings are kept in `measured`, so the file shows why). skinny_min_rows is
// that first point (1 when it won m = 1), skinny_max_rows SkinnyRangeEnd's
// point (0: it won neither of the first two; rows between two grid points go
// with the lower one's engine only up to that point).
//
// What it does not choose (stated, not hidden): oneDNN's static-M small-rows
// primitives (the fallback on CPUs without AVX2; measured slower than the
// skinny GEMM on every BERT-base shape in bench/RESULTS.md), thread counts
// per GEMM (the Program's team is fixed per compile), and the elementwise
// kernels' code (LLVM's, not tuned).
#ifndef SHAPESHIFT_RUNTIME_TUNING_GEMM_TUNER_H_
#define SHAPESHIFT_RUNTIME_TUNING_GEMM_TUNER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codegen/cpu/onednn_matmul.h"
#include "codegen/cpu/skinny_matmul.h"
#include "runtime/tuning/gemm_tuning.h"

namespace shapeshift::runtime {

// 4x the largest cache the kernel reports for cpu0 (sysfs), within 64..256
// MiB (128 MiB when it reports none): with two engines interleaved, 8x the
// cache passes between two reads of one copy, so every call reads its
// weights from memory, as a forward pass over a model larger than the cache
// does.
int64_t DefaultColdBytes();

struct TunerOptions {
  codegen::cpu::SkinnyMatmul::Isa isa = codegen::cpu::SkinnyMatmul::Isa::kAvx512;
  // The OpenMP team the engines run with (and the tuning is keyed on);
  // 0 = the calling thread's omp_get_max_threads().
  int threads = 0;
  // Ascending; past the last point, SkinnyRowsPastTheGrid.
  std::vector<int64_t> rows = {1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024};
  std::vector<int64_t> prefetch = {0, 16, 32, 64};
  // One row block on either core (AVX2 blocks 6 rows, AVX-512 8): k is not
  // sliced there (SkinnyMatmul::KSlice: from 2 blocks it is, and the
  // prefetch runs a slice ahead whatever the distance), so the distance
  // measured is the one the rows that use it (1..6 and past the slices) run.
  int64_t prefetch_at_rows = 4;
  // Calls per engine at each point after its warm-up: `repeats`, or fewer
  // (never below min_repeats) once a point's calls have taken point_s
  // seconds. A wide class's long rows (the LM head at 512 rows: 0.2 s a
  // call) would otherwise spend seconds on one point whose calls vary by a
  // few percent.
  int repeats = 7;
  int min_repeats = 3;
  double point_s = 0.25;
  // Bytes of weight copies each engine cycles over (at least 2 copies):
  // DefaultColdBytes(), 4x the last-level cache; tools/tune_into_file.h
  // lowers it to the model's own GEMM weight bytes. The measurement's memory
  // is about twice this (plain and packed copies; once against the panels).
  int64_t cold_bytes = DefaultColdBytes();
  // Seconds for the whole run; 0 = no limit. Every step (a class's start,
  // each point of its sweep) starts only if it is predicted to end within
  // the budget (a point's time from the class's last point, scaled by rows),
  // except the run's first class, which always measures its prefetch
  // distance and first point, so every run makes progress. A class not
  // started is left out (TuneReport::skipped); a class whose sweep is cut is
  // returned with GemmChoice::resume_at_rows set (TuneReport::cut): not
  // applied until a later run, given it in `resume`, completes it.
  double budget_s = 0;
  // Sweeps an earlier run's budget cut, by DescribeConfig: a class found
  // here keeps its prefetch distance and points and is measured from its
  // resume_at_rows on.
  std::map<std::string, GemmChoice> resume;
  // What the skinny GEMM is measured against (gemm_tuning.h): oneDNN's
  // runtime-M GEMM over the plain weights, or its blocked GEMM over the
  // panels (then only row counts from the smallest panel chunk up are
  // measured: below it both run the skinny GEMM). The decisions go to the
  // tuning's matching list.
  LongRows long_rows = LongRows::kPlain;
  // Called after each class with its decision (for progress output); may be
  // empty.
  std::function<void(const GemmChoice&)> on_choice;
};

struct TuneReport {
  GemmTuning tuning;
  std::vector<std::string> skipped;  // classes the budget left out (DescribeConfig)
  std::vector<std::string> cut;      // classes whose sweep the budget cut (in `tuning`, incomplete)
  std::vector<std::string> inapplicable;  // classes the skinny GEMM has no path for
  double seconds = 0;
  // The most bytes of weight copies (plain, packed and the scratch they are
  // packed from) held at once, by the largest class measured: what the
  // measurement adds to the process's peak RSS. At least two copies of a
  // class, however large.
  int64_t peak_copy_bytes = 0;
};

// Where the skinny GEMM's range ends, given its timings against the other
// engine (GemmTiming::onednn_us: the runtime-M GEMM or the panels) at
// ascending grid points, the range's start first: at the point whose prefix
// saves the most, summing each point's relative gain (other / skinny - 1,
// negative where it lost). One point lost by a hair between wins — a tie
// that a shared machine's noise decides — does not cut the range short; a
// loss that outweighs the wins before it does. 0: no prefix saves anything.
// The sweep measures past a lost point and stops after two in a row.
int64_t SkinnyRangeEnd(absl::Span<const GemmTiming> points);

// Where the skinny GEMM's range ends once the sweep is decided: `range_end`
// (SkinnyRangeEnd's), or kMaxSkinnyRows when the points run to the grid's
// end (`whole_grid`), the range ends at the last one and the skinny GEMM
// won it and the one before: past a few hundred rows both engines are
// compute-bound, so the ratio of the last points holds (BERT-base at 1024
// and 4096 rows on the AVX-512 core, against the panels: bench/RESULTS.md).
int64_t SkinnyRowsPastTheGrid(absl::Span<const GemmTiming> points, int64_t range_end, bool whole_grid);

// The rounds (one call per engine) a point runs after its warm-up when a
// round takes `round_s` seconds: `repeats`, or as few as reach point_s, but
// at least min_repeats (and at most repeats).
int RepeatsPerPoint(double round_s, const TunerOptions& o);

// Errors: INVALID_ARGUMENT for options out of range (naming the option),
// FAILED_PRECONDITION when this CPU cannot run `isa`, and whatever an engine
// returns for a class (naming it).
absl::StatusOr<TuneReport> TuneGemms(absl::Span<const codegen::cpu::MatmulConfig> configs,
                                     const TunerOptions& options);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_TUNING_GEMM_TUNER_H_
