#include "runtime/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shapeshift::runtime {

absl::StatusOr<KvCache> KvCache::Create(absl::Span<const KvPairInfo> pairs, std::vector<int64_t> shape,
                                        int64_t initial_capacity, int64_t max_capacity) {
  if (pairs.empty()) return absl::InvalidArgumentError("KvCache: the program has no KV pairs to bind");
  if (initial_capacity < 1 || (max_capacity != 0 && max_capacity < initial_capacity)) {
    return absl::InvalidArgumentError(absl::StrCat("KvCache: initial capacity ", initial_capacity,
                                                   " must be positive and within the maximum ", max_capacity));
  }
  for (int64_t d : shape) {
    if (d < 0) return absl::InvalidArgumentError("KvCache: the cache shape has a negative dim");
  }
  KvCache cache;
  cache.shape_ = std::move(shape);
  cache.max_capacity_ = max_capacity;
  for (const KvPairInfo& pair : pairs) {
    if (!pair.bindable()) {
      return absl::FailedPreconditionError(
          absl::StrCat("KvCache: output '", pair.output, "' cannot be bound: ", pair.why_not));
    }
    if (pair.axis < 0 || pair.axis >= static_cast<int64_t>(cache.shape_.size())) {
      return absl::InvalidArgumentError(absl::StrCat("KvCache: output '", pair.output, "' concatenates on axis ",
                                                     pair.axis, ", outside the rank-", cache.shape_.size(),
                                                     " cache shape"));
    }
    cache.buffers_.push_back(Buffer{pair, {}, cache.shape_});
  }
  if (absl::Status s = cache.Grow(initial_capacity); !s.ok()) return s;
  cache.growths_.clear();  // the first allocation is not a growth
  return cache;
}

int64_t KvCache::Rows(const Buffer& b) const {
  int64_t rows = 1;
  for (int64_t k = 0; k < b.pair.axis; ++k) rows *= shape_[k];
  return rows;
}

int64_t KvCache::Position(const Buffer& b) const {
  int64_t elements = 1;
  for (size_t k = b.pair.axis + 1; k < shape_.size(); ++k) elements *= shape_[k];
  return elements;
}

absl::Status KvCache::Grow(int64_t needed) {
  int64_t to = std::max<int64_t>(capacity_, 1);
  while (to < needed) to *= 2;
  if (max_capacity_ != 0) to = std::min(to, max_capacity_);
  if (to < needed) {
    return absl::OutOfRangeError(absl::StrCat("KvCache: the caches would need ", needed,
                                              " positions; their maximum is ", max_capacity_));
  }
  for (Buffer& b : buffers_) {
    const int64_t rows = Rows(b), position = Position(b);
    if (rows * to * position > Tensor::kMaxElements) {
      return absl::ResourceExhaustedError(absl::StrCat("KvCache: a buffer for '", b.pair.output, "' of ", to,
                                                       " positions is too large"));
    }
    std::vector<float> grown(static_cast<size_t>(rows * to * position));
    for (int64_t r = 0; r < rows && length_ > 0; ++r) {  // each row's filled positions
      std::memcpy(grown.data() + r * to * position, b.data.data() + r * capacity_ * position,
                  static_cast<size_t>(length_ * position) * sizeof(float));
    }
    b.data = std::move(grown);
  }
  growths_.push_back(Growth{capacity_, to, length_, needed});
  capacity_ = to;
  return absl::OkStatus();
}

absl::Status KvCache::Prepare(int64_t new_positions, std::vector<TensorView>& inputs) {
  if (new_positions < 0) return absl::InvalidArgumentError("KvCache: negative new positions");
  if (length_ + new_positions > capacity_) {
    if (absl::Status s = Grow(length_ + new_positions); !s.ok()) return s;
  }
  bindings_.clear();
  for (Buffer& b : buffers_) {
    if (b.pair.input_index < 0 || b.pair.input_index >= static_cast<int>(inputs.size())) {
      return absl::InvalidArgumentError(absl::StrCat("KvCache: ", inputs.size(), " inputs given, but '", b.pair.input,
                                                     "' is input ", b.pair.input_index));
    }
    b.view_shape[b.pair.axis] = length_;
    inputs[b.pair.input_index] = TensorView{DType::kF32, b.view_shape, b.data.data()};
    bindings_.push_back(BoundCache{b.pair.output, absl::MakeSpan(b.data), capacity_});
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> KvCache::Dense(absl::string_view output) const {
  for (const Buffer& b : buffers_) {
    if (b.pair.output != output) continue;
    std::vector<int64_t> shape = shape_;
    shape[b.pair.axis] = length_;
    const int64_t rows = Rows(b), position = Position(b);
    std::vector<float> values(static_cast<size_t>(rows * length_ * position));
    for (int64_t r = 0; r < rows && length_ > 0; ++r) {
      std::memcpy(values.data() + r * length_ * position, b.data.data() + r * capacity_ * position,
                  static_cast<size_t>(length_ * position) * sizeof(float));
    }
    return Tensor::FromVector(DType::kF32, std::move(shape), values);
  }
  return absl::NotFoundError(absl::StrCat("KvCache: no cache for output '", output, "'"));
}

}  // namespace shapeshift::runtime
