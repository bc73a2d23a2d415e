// CUDA graphs per bucket: which requests one captured graph may serve, and
// why that is sound.
//
// A CUDA graph replays its launches with the parameters they had at capture.
// Generated kernels read their dims from the parameter block in device
// memory and are grid-stride, so a replay with other dims (and a grid sized
// for the bucket's largest shape) computes exactly what a direct run would.
// What a graph freezes is (1) every buffer's device address and (2) the
// dims of cuBLASLt GEMMs. So a graph for the bucket lo..hi of a symbol s
// places every buffer as if s = hi ("placement"): the memory plan at s = hi
// is a valid layout, and each buffer's actual size fits its placed region
// when every size is non-decreasing in s — a ShapeEnv question proven once
// per size expression at compile time (graphs are off, with the reason,
// when one is not proven). A GEMM inside the graph runs at its s = hi shape:
// that is exact only when s appears in no dim but M (2-D) or the batch
// count (batched) — extra rows and batches are computed from, and into,
// the spare room of their placed buffers, and row i of the result depends
// only on row i of A. Such GEMMs are "graph-safe"; every other GEMM (the
// attention GEMMs whose K or N is the sequence) splits the graph into
// segments and runs directly between them, at its actual shape.
//
// A graph serves the requests of one key: the bucket of s and the exact
// values of the other symbols (their sizes are not padded). The bucket
// bounds are guard atoms with provenance ("dispatcher: CUDA graph bucket
// 65..128 of seq"), checked by a GuardProgram before every replay, and
// listed by `explain`/`Report()`.
#ifndef SHAPESHIFT_RUNTIME_DEVICE_CUDA_GRAPHS_H_
#define SHAPESHIFT_RUNTIME_DEVICE_CUDA_GRAPHS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/specialization/bucket.h"
#include "shapes/guard_program.h"
#include "shapes/shape_env.h"
#include "shapes/z3_bridge.h"

namespace shapeshift::runtime {

struct CudaGraphPlan {
  bool enabled = false;
  std::string disabled_reason;  // when !enabled: e.g. "no dynamic symbol"
  std::string symbol;           // the bucketed symbol
  int symbol_slot = -1;         // its tape slot (= index into the bound symbols)
  std::vector<std::string> symbols;  // every bound symbol, in slot order
  int64_t min = 0, max = 0;     // its declared range
  int capture_after = 2;
  int64_t proven_sizes = 0;     // size expressions proven non-decreasing in `symbol`
  std::shared_ptr<BucketScheme> buckets;  // powers of two, or learned

  // The bucket holding `value` (in [min, max]).
  Bucket BucketOf(int64_t value) const;
  // "CUDA graph bucket 65..128 of seq"
  std::string Describe(const Bucket& bucket) const;
  // lo <= s and s <= hi, provenance {dispatcher, "", Describe(bucket)}.
  std::vector<GuardAtom> BucketGuards(const Bucket& bucket) const;
};

// A size (bytes of a buffer, elements of a GEMM dim) that placement pads.
struct PaddedSize {
  std::string what;  // "buffer 'attn_probs'", for the reason when unproven
  SymExpr size;
};

// Picks the symbol (`wanted`, or the dynamic one with the widest range) and
// proves every size non-decreasing in it over the declared ranges (`env`'s
// symbols). A plan that is not enabled says why.
CudaGraphPlan PlanCudaGraphs(const ShapeEnv& env, const std::vector<std::string>& bound_symbols,
                             const std::string& wanted, bool enabled, bool learned_buckets, int capture_after,
                             const std::vector<PaddedSize>& sizes);

// Does `e` mention `symbol`? (A GEMM dim that does is padded in a graph.)
bool Mentions(SymExpr e, const std::string& symbol);

// A guard program over the bound symbols for `atoms` (the bucket's bounds).
absl::StatusOr<GuardProgram> CompileBucketGuards(const CudaGraphPlan& plan, const Bucket& bucket);

// Every bucket of the symbol's declared range, in order (what `prove
// --device cuda` lists), and Z3's answer to whether their guard atoms cover
// the range: every request has a bucket, so none is left to a direct run by
// a gap in the scheme.
std::vector<Bucket> AllBuckets(const CudaGraphPlan& plan);
CoverageResult ProveBucketCoverage(const CudaGraphPlan& plan, Z3Bridge& z3);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_DEVICE_CUDA_GRAPHS_H_
