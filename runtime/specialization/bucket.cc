#include "runtime/specialization/bucket.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shapeshift::runtime {
namespace {

// Bins per symbol for the learned histogram (ranges narrower than this get
// one bin per length).
constexpr int64_t kMaxBins = 1024;

}  // namespace

const char* BucketKindName(BucketKind kind) {
  switch (kind) {
    case BucketKind::kPowersOfTwo:
      return "power-of-two";
    case BucketKind::kLearned:
      return "learned";
  }
  return "?";
}

absl::StatusOr<BucketKind> ParseBucketKind(absl::string_view text) {
  for (BucketKind k : {BucketKind::kPowersOfTwo, BucketKind::kLearned}) {
    if (text == BucketKindName(k)) return k;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown bucket scheme '", text, "' (expected power-of-two or learned)"));
}

Bucket PowerOfTwoBucket(int64_t value, int64_t min, int64_t max) {
  if (value < 1) return {min, std::min<int64_t>(0, max)};  // e.g. an empty KV cache (past = 0)
  int64_t hi = 1;
  while (hi < value) hi *= 2;
  const int64_t lo = hi == 1 ? 1 : hi / 2 + 1;
  return {std::max(lo, min), std::min(hi, max)};
}

BucketScheme::BucketScheme(BucketOptions options, const std::vector<SymbolInfo>& symbols) : options_(options) {
  for (const SymbolInfo& s : symbols) {
    names_.push_back(s.name);
    auto h = std::make_unique<Histogram>();
    h->min = s.min;
    h->max = s.max;
    const int64_t width = s.max - s.min + 1;
    h->bin_width = std::max<int64_t>(1, (width + kMaxBins - 1) / kMaxBins);
    h->num_bins = options_.kind == BucketKind::kLearned ? static_cast<size_t>((width + h->bin_width - 1) / h->bin_width)
                                                        : 0;
    h->bins = std::make_unique<std::atomic<int64_t>[]>(h->num_bins);
    for (size_t i = 0; i < h->num_bins; ++i) h->bins[i].store(0, std::memory_order_relaxed);
    histograms_.push_back(std::move(h));
  }
}

BucketScheme::~BucketScheme() = default;

void BucketScheme::Observe(size_t slot, int64_t value) {
  Histogram& h = *histograms_[slot];
  if (h.num_bins == 0 || value < h.min || value > h.max) return;
  h.bins[(value - h.min) / h.bin_width].fetch_add(1, std::memory_order_relaxed);
  h.total.fetch_add(1, std::memory_order_relaxed);
}

Bucket BucketScheme::BucketOf(size_t slot, int64_t value) const {
  const Histogram& h = *histograms_[slot];
  if (options_.kind == BucketKind::kLearned && options_.learned_buckets > 0 &&
      h.total.load(std::memory_order_relaxed) >= options_.learned_min_samples) {
    return LearnedBucket(h, value);
  }
  return PowerOfTwoBucket(value, h.min, h.max);
}

// Bucket upper edges are the bins where the cumulative count first reaches
// k/B of the total (k = 1..B-1), plus the declared max; the bucket of
// `value` runs from the previous edge + 1 to the first edge >= value.
Bucket BucketScheme::LearnedBucket(const Histogram& h, int64_t value) const {
  std::vector<int64_t> counts(h.num_bins);
  int64_t total = 0;
  for (size_t i = 0; i < h.num_bins; ++i) total += counts[i] = h.bins[i].load(std::memory_order_relaxed);
  std::vector<int64_t> edges;
  const int64_t buckets = options_.learned_buckets;
  int64_t cumulative = 0;
  int64_t next_quantile = 1;
  for (size_t i = 0; i < h.num_bins && next_quantile < buckets; ++i) {
    cumulative += counts[i];
    if (cumulative * buckets < next_quantile * total) continue;
    edges.push_back(std::min(h.max, h.min + static_cast<int64_t>(i + 1) * h.bin_width - 1));
    while (next_quantile < buckets && cumulative * buckets >= next_quantile * total) ++next_quantile;
  }
  if (edges.empty() || edges.back() != h.max) edges.push_back(h.max);
  // The last edge is the declared max, so `value` has one.
  auto hi = std::lower_bound(edges.begin(), edges.end(), value);
  return {hi == edges.begin() ? h.min : *(hi - 1) + 1, *hi, /*learned=*/true};
}

std::string BucketScheme::Describe(size_t slot, Bucket bucket) const {
  return absl::StrCat(bucket.learned ? "learned" : "power-of-two", " bucket ", bucket.lo, "..", bucket.hi, " of ",
                      names_[slot]);
}

}  // namespace shapeshift::runtime
