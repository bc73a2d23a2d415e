#include "runtime/pack_queue.h"

#include <utility>

#include "codegen/cpu/parallel_run.h"

namespace shapeshift::runtime {

PackQueue::~PackQueue() {
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    jobs_.clear();
  }
  if (worker_.joinable()) worker_.join();
}

void PackQueue::Add(std::function<absl::Status()> job) {
  if (threads_ <= 1) {
    absl::MutexLock lock(&mu_);
    if (first_error_.ok()) first_error_ = job();
    return;
  }
  absl::MutexLock lock(&mu_);
  jobs_.push_back(std::move(job));
  if (!worker_.joinable()) worker_ = std::thread([this] { Work(); });
}

absl::Status PackQueue::Finish() {
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  if (worker_.joinable()) worker_.join();
  absl::MutexLock lock(&mu_);
  return first_error_;
}

void PackQueue::Work() {
  const codegen::cpu::ScopedOmpThreads threads(threads_);
  while (true) {
    std::function<absl::Status()> job;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &PackQueue::HasWork));
      if (jobs_.empty() || !first_error_.ok()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    absl::Status s = job();
    if (!s.ok()) {
      absl::MutexLock lock(&mu_);
      first_error_ = std::move(s);
    }
  }
}

}  // namespace shapeshift::runtime
