// KvCache: a decoder's KV caches in buffers the caller keeps across steps,
// bound in place (kv_binding.h), growing by power-of-two buckets.
//
//   KvCache cache = *KvCache::Create(session->program()->kv_pairs(), {1, heads, 0, head_dim});
//   for each step of `seq` new tokens:
//     std::vector<TensorView> inputs(graph_inputs);  inputs[0] = ids;
//     cache.Prepare(seq, inputs);                     // the past inputs: views of the buffers
//     auto out = session->Run(inputs, cache.bindings());
//     cache.Advance(seq);
//
// Why buckets: a buffer with room for exactly the cache would need a new
// buffer, and a copy of the whole cache, on every step — the cost binding
// removes. Capacity is the next power of two (at least the initial one)
// that holds the cache, so growing copies each position O(1) times over a
// decode, and each growth is recorded (growths(): from, to, and the length
// that asked for it). The Program reads the capacity per request as the
// cache's batch stride, so a new capacity never compiles anything.
#ifndef SHAPESHIFT_RUNTIME_KV_CACHE_H_
#define SHAPESHIFT_RUNTIME_KV_CACHE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/tensor.h"
#include "runtime/kv_binding.h"
#include "runtime/tensor_view.h"

namespace shapeshift::runtime {

class KvCache {
 public:
  struct Growth {
    int64_t from = 0;    // capacity before
    int64_t to = 0;      // capacity after
    int64_t length = 0;  // positions held when it grew
    int64_t needed = 0;  // positions the step asked for
  };

  // One buffer per pair, all of `shape` (a past input's shape, any value on
  // the positions axis) with `initial_capacity` positions; `max_capacity`
  // (0: none) bounds growth. Errors: no pairs, a pair that cannot be bound
  // (naming it and why), ranks that do not fit, a non-positive capacity.
  static absl::StatusOr<KvCache> Create(absl::Span<const KvPairInfo> pairs, std::vector<int64_t> shape,
                                        int64_t initial_capacity = 64, int64_t max_capacity = 0);

  // Makes room for `new_positions` more positions (growing every buffer if
  // needed), then sets inputs[pair.input_index] to each pair's past: a view
  // of its buffer's first length() positions. `inputs` has an entry per
  // graph input; the others are the caller's.
  absl::Status Prepare(int64_t new_positions, std::vector<TensorView>& inputs);
  // The bindings for the request Prepare set up.
  absl::Span<const BoundCache> bindings() const { return bindings_; }
  // After a successful request of `positions` new positions.
  void Advance(int64_t positions) { length_ += positions; }

  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }
  const std::vector<Growth>& growths() const { return growths_; }
  // `output`'s present as a dense tensor of length() positions (a copy, for
  // callers that need ONNX's layout).
  absl::StatusOr<Tensor> Dense(absl::string_view output) const;

 private:
  struct Buffer {
    KvPairInfo pair;
    std::vector<float> data;          // shape_ with capacity_ on the axis
    std::vector<int64_t> view_shape;  // shape_ with length_ on the axis (the past view)
  };
  KvCache() = default;
  absl::Status Grow(int64_t needed);
  int64_t Rows(const Buffer& b) const;       // product of the dims before the axis
  int64_t Position(const Buffer& b) const;   // product of the dims after it

  std::vector<int64_t> shape_;
  std::vector<Buffer> buffers_;
  std::vector<BoundCache> bindings_;
  std::vector<Growth> growths_;
  int64_t length_ = 0;
  int64_t capacity_ = 0;
  int64_t max_capacity_ = 0;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_KV_CACHE_H_
