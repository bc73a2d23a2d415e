#include "runtime/specialization/tier_up.h"

#include <algorithm>

namespace shapeshift::runtime {
namespace {

// Exact shapes tracked per region; a region with more distinct shapes than
// this has no dominant one, so a static tier-up is out of the question.
constexpr size_t kMaxShapesPerRegion = 64;
// A learned speed-up is kept within [0, this].
constexpr double kMaxSpeedup = 0.9;

void AddSample(double& ewma, int64_t samples_before, double sample, double weight) {
  ewma = samples_before == 0 ? sample : (1 - weight) * ewma + weight * sample;
}

}  // namespace

TierUpModel::TierUpModel(TierUpOptions options)
    : options_(options), compile_ms_(options.compile_ms_prior) {
  speedup_[static_cast<int>(Tier::kPolymorphic)] = 0;
  speedup_[static_cast<int>(Tier::kBucketed)] = options.bucketed_speedup_prior;
  speedup_[static_cast<int>(Tier::kStatic)] = options.static_speedup_prior;
}

TierUpOutcome TierUpModel::Record(absl::Span<const int64_t> region, absl::Span<const int64_t> shape,
                                  int64_t entry_id, double latency_ms) {
  TierUpOutcome out;
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(region);
  if (it == regions_.end()) it = regions_.emplace(std::vector<int64_t>(region.begin(), region.end()), Region{}).first;
  Region& r = it->second;
  ++r.requests;
  const bool by_tier_up = r.entry_id != 0 && entry_id == r.entry_id;
  if (by_tier_up) {
    if (r.state == State::kProbation) Judge(r, latency_ms, out);
    return out;
  }
  AddSample(r.latency_ms, r.baseline_requests++, latency_ms, options_.latency_ewma_weight);
  auto s = r.shapes.find(shape);
  if (s == r.shapes.end() && r.shapes.size() < kMaxShapesPerRegion) {
    s = r.shapes.emplace(std::vector<int64_t>(shape.begin(), shape.end()), ShapeStats{}).first;
  }
  if (s == r.shapes.end()) return out;
  AddSample(s->second.latency_ms, s->second.requests++, latency_ms, options_.latency_ewma_weight);
  if (r.state == State::kObserving) out.compile = Decide(region, r, shape, s->second);
  return out;
}

std::optional<TierUpJob> TierUpModel::Decide(absl::Span<const int64_t> region_key, Region& r,
                                             absl::Span<const int64_t> shape, const ShapeStats& s) {
  if (r.requests < options_.min_requests || tier_ups_ >= options_.max_tier_ups) return std::nullopt;
  const bool dominant = static_cast<double>(s.requests) >= options_.static_dominance * static_cast<double>(r.requests);
  TierUpJob job;
  job.tier = dominant ? Tier::kStatic : Tier::kBucketed;
  job.cost.requests = dominant ? s.requests : r.requests;
  job.cost.latency_ms = dominant ? s.latency_ms : r.latency_ms;
  job.cost.speedup = speedup_[static_cast<int>(job.tier)];
  job.cost.gain_ms = static_cast<double>(job.cost.requests) * job.cost.latency_ms * job.cost.speedup;
  job.cost.compile_ms = compile_ms_;
  if (!(job.cost.gain_ms > job.cost.compile_ms)) return std::nullopt;
  job.region.assign(region_key.begin(), region_key.end());
  job.trigger.assign(shape.begin(), shape.end());
  r.state = State::kCompiling;
  r.tier = job.tier;
  r.shape = job.trigger;
  r.baseline_ms = job.cost.latency_ms;
  ++tier_ups_;
  return job;
}

void TierUpModel::Judge(Region& r, double latency_ms, TierUpOutcome& out) {
  r.probation_ms += latency_ms;
  if (++r.probation_seen < options_.probation_requests) return;
  const double measured_ms = r.probation_ms / r.probation_seen;
  const double speedup = r.baseline_ms > 0 ? 1 - measured_ms / r.baseline_ms : 0;
  double& prior = speedup_[static_cast<int>(r.tier)];
  prior = std::clamp((1 - options_.speedup_learning_weight) * prior + options_.speedup_learning_weight * speedup, 0.0,
                     kMaxSpeedup);
  if (speedup >= options_.min_measured_speedup) {
    r.state = State::kKept;
    return;
  }
  r.state = State::kRejected;
  out.remove_entry = r.entry_id;
  r.entry_id = 0;
  ++reverted_;
}

void TierUpModel::ObserveCompile(double ms) {
  absl::MutexLock lock(&mu_);
  if (!compile_observed_) {
    compile_ms_ = ms;
    compile_observed_ = true;
    return;
  }
  compile_ms_ = (1 - options_.compile_ewma_weight) * compile_ms_ + options_.compile_ewma_weight * ms;
}

void TierUpModel::TierUpReady(absl::Span<const int64_t> region, int64_t entry_id) {
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(region);
  if (it == regions_.end()) return;
  it->second.state = State::kProbation;
  it->second.entry_id = entry_id;
}

void TierUpModel::TierUpFailed(absl::Span<const int64_t> region) {
  absl::MutexLock lock(&mu_);
  if (auto it = regions_.find(region); it != regions_.end()) it->second.state = State::kRejected;
}

void TierUpModel::AlreadySpecialized(absl::Span<const int64_t> region) {
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(region);
  if (it == regions_.end()) it = regions_.emplace(std::vector<int64_t>(region.begin(), region.end()), Region{}).first;
  it->second.state = State::kKept;
}

double TierUpModel::ExpectedSpeedup(Tier tier) const {
  absl::MutexLock lock(&mu_);
  return speedup_[static_cast<int>(tier)];
}

double TierUpModel::EstimatedCompileMs() const {
  absl::MutexLock lock(&mu_);
  return compile_ms_;
}

int64_t TierUpModel::tier_ups() const {
  absl::MutexLock lock(&mu_);
  return tier_ups_;
}

int64_t TierUpModel::reverted() const {
  absl::MutexLock lock(&mu_);
  return reverted_;
}

}  // namespace shapeshift::runtime
