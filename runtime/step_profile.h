// StepProfile: where a CPU request's time goes, step by step — what ONNX
// Runtime's session profiling answers, for shapeshift's plan.
//
// A context with a profile (ExecutionContext::set_step_profile) times every
// step of every request it runs and adds the time under the step's label:
// the kernel's name, the GEMM's configuration and the engine that ran it
// (which depends on the request's row count), or the attention's shape.
// Steps with one label (the twelve layers' FFN GEMMs, say) add up to one
// row. Device programs are not profiled: their steps run asynchronously on
// a stream, so a host clock around a launch would measure the launch.
//
// Thread-safety: Add, Rows and Reset may be called from any thread; the
// contexts of concurrent requests may share one profile.
#ifndef SHAPESHIFT_RUNTIME_STEP_PROFILE_H_
#define SHAPESHIFT_RUNTIME_STEP_PROFILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace shapeshift::runtime {

struct StepProfileRow {
  std::string kind;   // "kernel", "matmul", "attention", "gather", "index check"
  std::string label;  // what ran: the kernel's name, the GEMM's class and engine, ...
  int64_t calls = 0;
  int64_t ns = 0;     // wall time, summed over the calls
};

class StepProfile {
 public:
  void Add(std::string_view kind, std::string_view label, int64_t ns);
  // Counts one whole request (every step of it added), so that rows can be
  // read per request.
  void AddRequest(int64_t ns);
  // Slowest first; ties by label.
  std::vector<StepProfileRow> Rows() const;
  int64_t requests() const;
  int64_t request_ns() const;  // the requests' wall time, steps and the rest
  void Reset();

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, StepProfileRow> rows_ ABSL_GUARDED_BY(mu_);  // by kind + label
  int64_t requests_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t request_ns_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_STEP_PROFILE_H_
