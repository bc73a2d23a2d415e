// The Dispatcher's auto-policy half: feeding served requests to the cost
// model (tier_up.h), and the one background thread that compiles the
// tier-ups it asks for while requests keep running on the entries ready.
#include <omp.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/specialization/dispatcher.h"

namespace shapeshift::runtime {

void Dispatcher::RecordForTierUp(absl::Span<const int64_t> values, int64_t entry_id, double latency_ms) {
  absl::InlinedVector<int64_t, 2 * kInlineSlots> storage(2 * values.size());
  absl::Span<int64_t> region(storage.data(), storage.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const Bucket b = buckets_.BucketOf(i, values[i]);
    region[2 * i] = b.lo;
    region[2 * i + 1] = b.hi;
  }
  TierUpOutcome outcome = tier_up_->Record(region, values, entry_id, latency_ms);
  if (outcome.remove_entry != 0 && cache_.Remove(outcome.remove_entry)) {
    {
      absl::MutexLock lock(&mu_);
      ++stats_.tier_ups_reverted;
    }
    if (disk_ != nullptr) SaveManifest();
  }
  if (outcome.compile) {
    absl::MutexLock lock(&mu_);
    tier_up_queue_.push_back(*std::move(outcome.compile));
    tier_up_wake_.Signal();
  }
}

void Dispatcher::TierUpLoop() {
  // A tier-up must not slow down the requests it is meant to speed up: its
  // parallel regions (oneDNN warm-up GEMMs inside Program::Compile) get one
  // OpenMP thread instead of a second team competing with the serving one,
  // and the thread yields the CPU to serving threads (nice 10, this thread
  // only on Linux). Neither changes the compiled artifact.
  omp_set_num_threads(1);
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  for (;;) {
    TierUpJob job;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && tier_up_queue_.empty()) tier_up_wake_.Wait(&mu_);
      if (stopping_) {
        tier_up_queue_.clear();
        tier_up_idle_.SignalAll();
        return;
      }
      job = std::move(tier_up_queue_.front());
      tier_up_queue_.pop_front();
      tier_up_running_ = true;
    }
    const EntrySpec spec = SpecFor(job.tier, job.trigger);
    absl::StatusOr<std::shared_ptr<const CacheEntry>> entry =
        CompileEntry(spec, RecompileTrigger::kTierUp, cache_.ExplainMiss(job.trigger), job.cost);
    if (entry.ok()) {
      tier_up_->TierUpReady(job.region, (*entry)->id);
    } else {
      tier_up_->TierUpFailed(job.region);
    }
    absl::MutexLock lock(&mu_);
    ++(entry.ok() ? stats_.tier_ups : stats_.tier_up_errors);
    tier_up_running_ = false;
    tier_up_idle_.SignalAll();
  }
}

void Dispatcher::WaitForTierUps() {
  absl::MutexLock lock(&mu_);
  while (!stopping_ && (tier_up_running_ || !tier_up_queue_.empty())) tier_up_idle_.Wait(&mu_);
}

}  // namespace shapeshift::runtime
