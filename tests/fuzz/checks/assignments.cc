#include "tests/fuzz/checks/assignments.h"

#include <cstdint>
#include <limits>
#include <random>

#include "absl/container/btree_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shapeshift::fuzz {
namespace {

// FNV-1a: stable across processes (absl::Hash is seeded per process).
uint64_t StableHash(absl::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

constexpr int64_t kEdges[] = {
    0, 1, -1, 2, -2, 16, 64, 4096, int64_t{1} << 31, int64_t{1} << 32, -(int64_t{1} << 32),
    int64_t{3037000499},  // floor(sqrt(INT64_MAX))
    int64_t{3037000500},
    std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
    std::numeric_limits<int64_t>::max() / 2, std::numeric_limits<int64_t>::min() / 2,
    std::numeric_limits<int64_t>::min() + 1};

int64_t DrawValue(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0:
    case 1:
    case 2:
    case 3:
      return static_cast<int64_t>(rng() % 49) - 8;  // [-8, 40]
    case 4:
    case 5:
      return static_cast<int64_t>(rng() % 101001) - 1000;  // [-1000, 100000]
    case 6:
      return kEdges[rng() % std::size(kEdges)];
    default:
      return static_cast<int64_t>(rng());
  }
}

}  // namespace

std::vector<Assignment> AssignmentsFor(const absl::btree_set<std::string>& symbols,
                                       absl::string_view input, int count) {
  std::vector<Assignment> out;
  // Uniform assignments first: every symbol 1, 0, -1, 7.
  for (int64_t v : {1, 0, -1, 7}) {
    if (static_cast<int>(out.size()) >= count) break;
    Assignment a;
    for (const std::string& s : symbols) a[s] = v;
    out.push_back(std::move(a));
  }
  std::mt19937_64 rng(StableHash(input));
  while (static_cast<int>(out.size()) < count) {
    Assignment a;
    for (const std::string& s : symbols) a[s] = DrawValue(rng);
    out.push_back(std::move(a));
  }
  return out;
}

std::string AssignmentToString(const Assignment& values) {
  absl::btree_map<std::string, int64_t> sorted(values.begin(), values.end());
  return absl::StrCat("{", absl::StrJoin(sorted, ", ", absl::PairFormatter("=")), "}");
}

}  // namespace shapeshift::fuzz
