#include "runtime/execution_context.h"

#include <cstdlib>
#include <new>

namespace shapeshift::runtime {

void ExecutionContext::FreeDeleter::operator()(std::byte* p) const { std::free(p); }

std::byte* ExecutionContext::Arena(size_t bytes) {
  if (bytes <= arena_capacity_ && arena_ != nullptr) return arena_.get();
  constexpr size_t kAlign = 64;
  // Grow geometrically so a slowly rising request size settles quickly.
  size_t capacity = std::max(bytes, arena_capacity_ + arena_capacity_ / 2);
  capacity = std::max<size_t>((capacity + kAlign - 1) / kAlign * kAlign, kAlign);
  arena_.reset(static_cast<std::byte*>(std::aligned_alloc(kAlign, capacity)));
  if (arena_ == nullptr) {
    arena_capacity_ = 0;
    return nullptr;
  }
  arena_capacity_ = capacity;
  ++arena_allocations_;
  return arena_.get();
}

}  // namespace shapeshift::runtime
