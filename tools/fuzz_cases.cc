#include "tools/fuzz_cases.h"

#include <algorithm>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace shapeshift::tools {
namespace {

// Draws of an in-domain case before it is kept as it is (then outside a
// relation): a relation that leaves a tiny part of the box gets its
// refusals tested instead of a loop.
constexpr int kRelationDraws = 16;

}  // namespace

bool FuzzDomain::InRanges(const std::vector<int64_t>& values) const {
  if (values.size() != slots.size()) return false;
  for (size_t s = 0; s < slots.size(); ++s) {
    if (values[s] < min[s] || values[s] > max[s]) return false;
  }
  return true;
}

bool FuzzDomain::MeetsRelations(const std::vector<int64_t>& values) const {
  return !relations.has_value() || relations->Evaluate(values).pass;
}

const char* CaseKindName(CaseKind kind) {
  switch (kind) {
    case CaseKind::kInDomain:
      return "in-domain";
    case CaseKind::kEdge:
      return "edge";
    case CaseKind::kOutOfDomain:
      return "out-of-domain";
    case CaseKind::kOutsideRelation:
      return "outside-relation";
    case CaseKind::kWrongRank:
      return "wrong-rank";
    case CaseKind::kWrongDtype:
      return "wrong-dtype";
  }
  return "?";
}

int64_t DrawInRange(int64_t min, int64_t max, std::mt19937_64& rng) {
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  if (min >= max) return min;
  // Octave j holds [2^(j-1), 2^j) for j >= 1 and 0 for j = 0; the range
  // spans octaves first..last, each clipped to [min, max].
  auto octave_of = [](int64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(static_cast<uint64_t>(v)); };
  const int first = octave_of(min), last = octave_of(max);
  const int j = static_cast<int>(uniform(first, last));
  if (j == 0) return 0;
  const int64_t lo = std::max(min, int64_t{1} << (j - 1));
  const int64_t hi = j >= 63 ? max : std::min(max, (int64_t{1} << j) - 1);
  return uniform(lo, hi);
}

std::vector<int64_t> EdgeValues(int64_t min, int64_t max) {
  std::vector<int64_t> edges = {min, max};
  if (min <= 1 && 1 <= max) edges.push_back(1);
  for (int64_t p = 1; p <= max && p > 0; p *= 2) {
    if (p >= min) edges.push_back(p);
    if (p + 1 >= min && p + 1 <= max) edges.push_back(p + 1);
    if (p > max / 2) break;
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  return edges;
}

std::vector<FuzzCase> GenerateCases(const FuzzDomain& domain, int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int64_t>> edges;
  for (size_t s = 0; s < domain.slots.size(); ++s) edges.push_back(EdgeValues(domain.min[s], domain.max[s]));
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  // Log-uniform in the ranges (fuzz_cases.h says why), redrawn (a few
  // times) until the relations hold.
  auto in_domain = [&] {
    std::vector<int64_t> values(domain.slots.size());
    for (int attempt = 0; attempt < kRelationDraws; ++attempt) {
      for (size_t s = 0; s < values.size(); ++s) values[s] = DrawInRange(domain.min[s], domain.max[s], rng);
      if (domain.MeetsRelations(values)) break;
    }
    return values;
  };

  std::vector<FuzzCase> cases;
  cases.reserve(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (int64_t i = 0; i < count; ++i) {
    FuzzCase c;
    c.values = in_domain();
    const int64_t roll = uniform(0, 99);
    if (roll < 60) {
      c.kind = domain.MeetsRelations(c.values) ? CaseKind::kInDomain : CaseKind::kOutsideRelation;
    } else if (roll < 85) {
      c.kind = CaseKind::kEdge;
      for (size_t s = 0; s < c.values.size(); ++s) {
        if (uniform(0, 1) == 0) c.values[s] = edges[s][uniform(0, static_cast<int64_t>(edges[s].size()) - 1)];
      }
      if (!domain.MeetsRelations(c.values)) c.kind = CaseKind::kOutsideRelation;
    } else if (roll < 95 && !c.values.empty()) {
      c.kind = CaseKind::kOutOfDomain;
      c.bad_slot = static_cast<int>(uniform(0, static_cast<int64_t>(c.values.size()) - 1));
      const int64_t below = domain.min[c.bad_slot] - 1;
      const bool can_go_below = below >= 0;
      c.values[c.bad_slot] = can_go_below && uniform(0, 1) == 0 ? below : domain.max[c.bad_slot] + 1;
    } else {
      c.kind = uniform(0, 1) == 0 ? CaseKind::kWrongRank : CaseKind::kWrongDtype;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

absl::StatusOr<FuzzCase> ParseCaseFlag(const std::string& text, const FuzzDomain& domain) {
  FuzzCase c;
  c.values.assign(domain.slots.size(), 0);
  std::vector<bool> seen(domain.slots.size(), false);
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    int64_t value = 0;
    if (kv.size() != 2 || !absl::SimpleAtoi(kv[1], &value) || value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--case ", text, ": '", part, "' is not DIM=N with a non-negative integer N"));
    }
    auto it = std::find(domain.slots.begin(), domain.slots.end(), kv[0]);
    if (it == domain.slots.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--case ", text, ": the model has no dynamic dim '", kv[0],
                                                     "' (dims: ", absl::StrJoin(domain.slots, ", "), ")"));
    }
    const size_t s = static_cast<size_t>(it - domain.slots.begin());
    if (seen[s]) return absl::InvalidArgumentError(absl::StrCat("--case ", text, ": '", kv[0], "' given twice"));
    seen[s] = true;
    c.values[s] = value;
  }
  for (size_t s = 0; s < seen.size(); ++s) {
    if (!seen[s]) {
      return absl::InvalidArgumentError(
          absl::StrCat("--case ", text, ": no value for '", domain.slots[s], "' (every dim must be given)"));
    }
    if (c.bad_slot < 0 && (c.values[s] < domain.min[s] || c.values[s] > domain.max[s])) {
      c.kind = CaseKind::kOutOfDomain;
      c.bad_slot = static_cast<int>(s);
    }
  }
  if (c.bad_slot < 0 && !domain.MeetsRelations(c.values)) c.kind = CaseKind::kOutsideRelation;
  return c;
}

std::string CaseFlagText(const FuzzDomain& domain, const std::vector<int64_t>& values) {
  std::vector<std::string> parts;
  for (size_t s = 0; s < domain.slots.size() && s < values.size(); ++s) {
    parts.push_back(absl::StrCat(domain.slots[s], "=", values[s]));
  }
  return absl::StrJoin(parts, ",");
}

}  // namespace shapeshift::tools
