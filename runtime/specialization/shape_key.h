// Hash maps keyed by a vector of slot values (a shape, a bucket's bounds),
// probed with a span of the request's values: heterogeneous lookup, so the
// per-request probe builds no key and allocates nothing.
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_SHAPE_KEY_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_SHAPE_KEY_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"

namespace shapeshift::runtime {

struct ShapeKeyHash {
  using is_transparent = void;
  size_t operator()(absl::Span<const int64_t> values) const { return absl::Hash<absl::Span<const int64_t>>()(values); }
};
struct ShapeKeyEq {
  using is_transparent = void;
  bool operator()(absl::Span<const int64_t> a, absl::Span<const int64_t> b) const { return a == b; }
};

template <typename V>
using ShapeKeyMap = absl::flat_hash_map<std::vector<int64_t>, V, ShapeKeyHash, ShapeKeyEq>;

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_SHAPE_KEY_H_
