#include "runtime/output_pool.h"

#include <algorithm>
#include <bit>
#include <new>

namespace shapeshift::runtime {
namespace {

// The next multiple of 1/8 of the size's leading power of two strictly
// above it: at most 1/8 of headroom, so a size that grows a little per
// request (a decode step's cache) keeps fitting the same block.
size_t RoundedCapacity(size_t bytes) {
  const size_t granule = std::max<size_t>(4096, std::bit_floor(bytes) / 8);
  return (bytes / granule + 1) * granule;
}

}  // namespace

OutputPool::State::~State() {
  for (auto& [capacity, block] : free) ::operator delete[](block, std::align_val_t{64});
}

OutputPool::OutputPool() : state_(std::make_shared<State>()) {}

void OutputPool::Release(const std::weak_ptr<State>& weak, std::byte* block, size_t capacity) {
  if (std::shared_ptr<State> state = weak.lock()) {
    absl::MutexLock lock(&state->mu);
    if (state->cached + capacity <= state->limit) {
      state->free.emplace(capacity, block);
      state->cached += capacity;
      return;
    }
  }
  ::operator delete[](block, std::align_val_t{64});
}

std::shared_ptr<std::byte[]> OutputPool::Get(size_t bytes) {
  if (bytes < kMinPooledBytes) return std::shared_ptr<std::byte[]>(new std::byte[std::max<size_t>(bytes, 1)]);
  std::byte* block = nullptr;
  size_t capacity = 0;
  {
    absl::MutexLock lock(&state_->mu);
    auto it = state_->free.lower_bound(bytes);
    // A block much larger than asked for stays for a request that needs it.
    if (it != state_->free.end() && bytes >= it->first / 5 * 4) {
      capacity = it->first;
      block = it->second;
      state_->free.erase(it);
      state_->cached -= capacity;
    }
  }
  if (block == nullptr) {
    capacity = RoundedCapacity(bytes);
    block = static_cast<std::byte*>(::operator new[](capacity, std::align_val_t{64}));
  }
  std::weak_ptr<State> weak = state_;
  return std::shared_ptr<std::byte[]>(block, [weak, capacity](std::byte* p) { Release(weak, p, capacity); });
}

void OutputPool::NoteRequestBytes(size_t bytes) {
  absl::MutexLock lock(&state_->mu);
  state_->limit = std::max(state_->limit, 2 * bytes);
}

size_t OutputPool::CachedBytes() const {
  absl::MutexLock lock(&state_->mu);
  return state_->cached;
}

size_t OutputPool::CachedLimit() const {
  absl::MutexLock lock(&state_->mu);
  return state_->limit;
}

}  // namespace shapeshift::runtime
