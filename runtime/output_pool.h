// OutputPool: recycles the memory of a Program's output tensors.
//
// Every request returns freshly owned output tensors. Allocated the plain
// way, a large one is a new mmap each time: the kernel faults in and zeroes
// every page on first write, and frees it again when the caller drops the
// tensor. A GPT-2 decode step at batch 8 with 512 cached tokens returns 24
// present key/value tensors of 12.6 MB: measured, the step took 196 ms that
// way and 56 ms when glibc was told to keep freed memory (ONNX Runtime: 52
// ms, its arena recycles too). So a large output's storage goes back to this
// pool when the caller's last Tensor copy dies, and the next request of a
// similar size gets it without a page fault.
//
//  - Blocks below kMinPooledBytes are left to malloc (it recycles them).
//  - A new block gets headroom (up to 1/8 extra), and a cached block
//    serves any request it holds that is at least 4/5 of its size, so a
//    decode loop whose cache grows by one token per step keeps reusing.
//  - The pool keeps at most `CachedLimit()` bytes: twice the largest total
//    a single request has asked for, so a steady load stops allocating while
//    a one-off huge request does not pin memory for ever beyond that.
//  - Storage is handed out uninitialized: the Program writes every byte of
//    every output (a step writes it in place, or it is copied).
//  - Thread-safe; tensors may outlive the pool (their blocks are then freed).
#ifndef SHAPESHIFT_RUNTIME_OUTPUT_POOL_H_
#define SHAPESHIFT_RUNTIME_OUTPUT_POOL_H_

#include <cstddef>
#include <map>
#include <memory>

#include "absl/synchronization/mutex.h"

namespace shapeshift::runtime {

class OutputPool {
 public:
  static constexpr size_t kMinPooledBytes = size_t{1} << 20;

  OutputPool();
  // Uninitialized storage of at least `bytes` bytes.
  std::shared_ptr<std::byte[]> Get(size_t bytes);
  // Tells the pool how many output bytes one request needs in all (it
  // caches up to twice the largest such total).
  void NoteRequestBytes(size_t bytes);

  size_t CachedBytes() const;  // held for reuse now
  size_t CachedLimit() const;

 private:
  struct State {
    mutable absl::Mutex mu;
    std::multimap<size_t, std::byte*> free;  // capacity -> block
    size_t cached = 0;
    size_t limit = 0;
    ~State();
  };
  static void Release(const std::weak_ptr<State>& state, std::byte* block, size_t capacity);
  std::shared_ptr<State> state_;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_OUTPUT_POOL_H_
