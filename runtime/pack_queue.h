// PackQueue: a compile's weight packing, done on a thread of its own while
// the compiling thread goes on building the program (compiling its kernels
// with LLVM, creating oneDNN primitives).
//
// Why: a model's first compile spends most of its time in two things that
// need nothing from each other: LLVM compiling each distinct kernel (one
// thread: GPT-2 + past, 13 kernels, ~0.9 s) and packing every constant
// weight for the short-request GEMMs (494 MB, mostly the kernel zeroing
// fresh pages: ~0.6 s on two threads). Done one after the other they took
// ~1.5 s of the compile; here the packs run beside the kernels' compile.
//
// The packed copies are needed only when the program runs, so Build queues
// each pack (with the step it belongs to) and Finish(), at the end of Build,
// waits for them. A queue made for one thread runs each job as it is added:
// with no second core there is nothing to overlap.
#ifndef SHAPESHIFT_RUNTIME_PACK_QUEUE_H_
#define SHAPESHIFT_RUNTIME_PACK_QUEUE_H_

#include <deque>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace shapeshift::runtime {

class PackQueue {
 public:
  // `threads`: the compile's OpenMP team size, which the jobs run with too.
  explicit PackQueue(int threads) : threads_(threads) {}
  // Waits for the job running, if any; jobs not started are dropped (a
  // Build that failed early does not wait for packs nobody will use).
  ~PackQueue();
  PackQueue(const PackQueue&) = delete;
  PackQueue& operator=(const PackQueue&) = delete;

  // Runs `job` after the jobs added before it. Whatever it refers to must
  // outlive Finish() or this queue.
  void Add(std::function<absl::Status()> job);
  // Waits for every job added; the first error of them, in order (the jobs
  // after a failed one do not run).
  absl::Status Finish();

 private:
  void Work();
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !jobs_.empty(); }

  const int threads_;
  mutable absl::Mutex mu_;
  std::deque<std::function<absl::Status()>> jobs_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
  std::thread worker_;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_PACK_QUEUE_H_
