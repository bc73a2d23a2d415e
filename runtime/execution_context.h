// ExecutionContext: the per-thread scratch state of Program::Run — the
// arena holding intermediate buffers, the evaluated sizes, and the pointer
// and dim arrays handed to kernels.
//
// Why separate from Program: the Program is shared and immutable; a context
// is owned by one thread at a time. The arena grows to the largest request
// seen and is then reused, so steady-state requests allocate nothing here.
#ifndef SHAPESHIFT_RUNTIME_EXECUTION_CONTEXT_H_
#define SHAPESHIFT_RUNTIME_EXECUTION_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace shapeshift::runtime {

class StepProfile;

// The per-context state of a device Program (its stream, device arena,
// parameter block and CUDA graphs; runtime/device/device_state.h). Owned by
// the context so that it follows the context between threads and dies with
// it; opaque here so that the CPU path knows nothing about devices.
class DeviceContextState {
 public:
  virtual ~DeviceContextState() = default;
};

class ExecutionContext {
 public:
  ExecutionContext() = default;
  ExecutionContext(const ExecutionContext&) = delete;
  ExecutionContext& operator=(const ExecutionContext&) = delete;

  // Arena of at least `bytes`, 64-byte aligned; reallocates only to grow.
  std::byte* Arena(size_t bytes);
  size_t arena_capacity() const { return arena_capacity_; }
  // How many times the arena was (re)allocated; stays put in steady state.
  int64_t arena_allocations() const { return arena_allocations_; }
  // GEMM calls of this context's requests that ran on the skinny GEMM
  // (short requests of a constant-weight GEMM, runtime/tuning/): how a test
  // sees which engine a row count took.
  int64_t skinny_gemm_calls() const { return skinny_gemm_calls_; }
  // Bytes the last CPU request wrote into its outputs and bound KV caches
  // (kv_binding.h): whole present tensors under plain ONNX semantics, only
  // the new positions when bound — how a test sees that a bound decode step
  // does not copy its cache.
  int64_t output_bytes_written() const { return output_bytes_written_; }
  // Times every step of this context's CPU requests into `profile`
  // (step_profile.h; may be shared by contexts); null: off.
  void set_step_profile(std::shared_ptr<StepProfile> profile) { step_profile_ = std::move(profile); }
  StepProfile* step_profile() const { return step_profile_.get(); }

  // For device programs (runtime-internal): the state they keep here.
  DeviceContextState* device_state() const { return device_state_.get(); }
  void set_device_state(std::unique_ptr<DeviceContextState> state) { device_state_ = std::move(state); }

 private:
  friend class Program;
  struct FreeDeleter {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, FreeDeleter> arena_;
  size_t arena_capacity_ = 0;
  int64_t arena_allocations_ = 0;
  int64_t skinny_gemm_calls_ = 0;
  int64_t output_bytes_written_ = 0;
  std::shared_ptr<StepProfile> step_profile_;
  std::vector<int64_t> slots_;       // evaluated sizes (SymTape slots)
  std::vector<void*> buffers_;       // resolved buffer pointers
  std::vector<void*> call_buffers_;  // one kernel call's buffer array
  std::vector<int64_t> call_dims_;   // one kernel call's dims array
  std::unique_ptr<DeviceContextState> device_state_;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_EXECUTION_CONTEXT_H_
