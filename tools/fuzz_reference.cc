#include "tools/fuzz_reference.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/interpreter.h"

namespace shapeshift::tools {
namespace {

// splitmix64: a stable mix of the seed and the shape (absl::Hash is salted
// per process, and a replay must reproduce the inputs).
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

size_t Bytes(const std::vector<Tensor>& tensors) {
  size_t total = 0;
  for (const Tensor& t : tensors) total += t.byte_size();
  return total;
}

}  // namespace

ReferenceOracle::ReferenceOracle(std::unique_ptr<Graph> graph, std::vector<InputRecipe> recipes,
                                 std::vector<std::string> slots, uint64_t seed, size_t max_bytes)
    : graph_(std::move(graph)),
      recipes_(std::move(recipes)),
      slots_(std::move(slots)),
      seed_(seed),
      max_bytes_(max_bytes) {}

absl::StatusOr<ReferenceOracle::Memo*> ReferenceOracle::Lookup(const std::vector<int64_t>& shape) {
  if (auto it = memo_.find(shape); it != memo_.end()) return &it->second;
  Assignment dims;
  uint64_t input_seed = Mix(seed_);
  for (size_t s = 0; s < slots_.size() && s < shape.size(); ++s) {
    dims[slots_[s]] = shape[s];
    input_seed = Mix(input_seed ^ static_cast<uint64_t>(shape[s]));
  }
  absl::StatusOr<std::vector<Tensor>> inputs = MakeInputs(recipes_, dims, input_seed);
  if (!inputs.ok()) return inputs.status();
  Memo memo;
  memo.inputs = *std::move(inputs);
  memo.bytes = Bytes(memo.inputs);
  EvictOver(max_bytes_ > memo.bytes ? max_bytes_ - memo.bytes : 0);
  bytes_ += memo.bytes;
  insertion_order_.push_back(shape);
  return &memo_.emplace(shape, std::move(memo)).first->second;
}

void ReferenceOracle::EvictOver(size_t budget) {
  while (bytes_ > budget && !insertion_order_.empty()) {
    auto it = memo_.find(insertion_order_.front());
    insertion_order_.pop_front();
    if (it == memo_.end()) continue;
    bytes_ -= it->second.bytes;
    memo_.erase(it);
  }
}

absl::StatusOr<const std::vector<Tensor>*> ReferenceOracle::Inputs(const std::vector<int64_t>& shape) {
  absl::StatusOr<Memo*> memo = Lookup(shape);
  if (!memo.ok()) return memo.status();
  return &(*memo)->inputs;
}

absl::StatusOr<const std::vector<Tensor>*> ReferenceOracle::Expected(const std::vector<int64_t>& shape) {
  absl::StatusOr<Memo*> memo = Lookup(shape);
  if (!memo.ok()) return memo.status();
  Memo& m = **memo;
  if (!m.has_expected) {
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(*graph_, m.inputs);
    ++interpreter_runs_;
    if (!expected.ok()) return absl::Status(expected.status().code(), absl::StrCat("interpreter: ", expected.status().message()));
    m.expected = *std::move(expected);
    m.has_expected = true;
    const size_t added = Bytes(m.expected);
    m.bytes += added;
    bytes_ += added;
  }
  return &m.expected;
}

}  // namespace shapeshift::tools
