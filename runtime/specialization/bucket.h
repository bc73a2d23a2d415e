// BucketScheme: which region of lengths a bucketed artifact is compiled for.
//
// Why buckets: a static artifact serves one shape, so a stream of varying
// lengths would compile once per length; a polymorphic one serves every
// length but its code cannot use facts about the length. A bucket is the
// middle ground: the compile declares the symbol's range as the bucket (so
// range analysis in the passes and code generators proves bucket-bound
// facts for free) and records the bucket bounds as guard atoms of the entry
// (which is what makes using those facts sound: the entry only ever serves
// inputs inside the bucket).
//
// Two schemes: powers of two (0, 1, 2, 3..4, 5..8, ..., clipped to the declared
// range) — a fixed, traffic-independent grid with at most log2(range)+1
// buckets per symbol; or learned from the observed length histogram: the
// bucket boundaries are quantiles of the lengths seen so far, so buckets are
// narrow where traffic is dense. Learned boundaries move as traffic grows;
// that is harmless (every entry is valid wherever its own guards hold) but
// means two learned buckets may overlap. Until a symbol has seen
// `learned_min_samples` requests the learned scheme uses powers of two.
//
// Thread-safety: Observe and BucketOf may be called concurrently (the
// histogram is relaxed atomic counters; a bucket is computed from a
// snapshot that may lag a few requests, which only shifts a boundary).
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_BUCKET_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_BUCKET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

enum class BucketKind {
  kPowersOfTwo,
  kLearned,  // quantiles of the observed length histogram
};
const char* BucketKindName(BucketKind kind);  // "power-of-two" | "learned"
absl::StatusOr<BucketKind> ParseBucketKind(absl::string_view text);

struct BucketOptions {
  BucketKind kind = BucketKind::kPowersOfTwo;
  int learned_buckets = 8;         // quantile buckets per symbol
  int64_t learned_min_samples = 32;  // below this, powers of two
};

// One symbol's bucket: lo <= value <= hi.
struct Bucket {
  int64_t lo = 0;
  int64_t hi = 0;
  bool learned = false;  // from the histogram's quantiles, not powers of two
  friend bool operator==(const Bucket& a, const Bucket& b) { return a.lo == b.lo && a.hi == b.hi; }
};

// The power-of-two bucket holding `value` (1, 2, 3..4, 5..8, ...), clipped
// to [min, max]; values below 1 share one bucket min..0. `value` must lie
// in [min, max].
Bucket PowerOfTwoBucket(int64_t value, int64_t min, int64_t max);

class BucketScheme {
 public:
  // `symbols`: the dispatcher's slot symbols with their declared ranges.
  BucketScheme(BucketOptions options, const std::vector<SymbolInfo>& symbols);
  ~BucketScheme();

  const BucketOptions& options() const { return options_; }

  // Counts one request's value of slot `slot` (learned scheme only; a
  // no-op for powers of two).
  void Observe(size_t slot, int64_t value);
  // The bucket of slot `slot` holding `value` (in the declared range).
  Bucket BucketOf(size_t slot, int64_t value) const;
  // The guard atoms' provenance reason: "power-of-two bucket 65..128 of seq".
  std::string Describe(size_t slot, Bucket bucket) const;

 private:
  // A fixed number of equal-width bins over the declared range; enough
  // resolution for quantiles without one counter per length.
  struct Histogram {
    int64_t min = 0;
    int64_t max = 0;
    int64_t bin_width = 1;
    std::unique_ptr<std::atomic<int64_t>[]> bins;
    size_t num_bins = 0;
    std::atomic<int64_t> total{0};
  };
  Bucket LearnedBucket(const Histogram& h, int64_t value) const;

  const BucketOptions options_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<Histogram>> histograms_;  // per slot
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_BUCKET_H_
