// The shapes `shapeshift fuzz` feeds a model: inside the declared domain,
// on its edges, outside it, and well-shaped requests with the wrong rank or
// dtype.
//
// Why edges get their own share: guards and code generators decide on
// thresholds (`seq <= 64`, `seq % 16 == 0`, vector widths, bucket bounds),
// and a guard that is off by one only shows at the threshold. Uniform
// sampling over 1..512 hits `seq == 65` about once in 500 cases; the edge
// cases (1, min, max, every 2^k and 2^k+1 in range) hit it every few dozen.
//
// Why in-domain draws are log-uniform (every octave [2^j, 2^(j+1)) of a
// range equally likely, uniform inside it): an exported model's dims often
// take the importer's default 1..65536, where a uniform draw is above 4096
// nineteen times in twenty — shapes that take seconds to minutes on the
// reference interpreter, or exceed the memory budget and are skipped
// (fuzz_budget.h) — so a run tested few shapes, and only huge ones. Drawn by
// octave, a 1..65536 dim is at most 256 half the time and still reaches the
// top octave one case in sixteen.
// Outside-domain and malformed cases check the other half of soundness:
// such a request must get an error, never a result.
//
// Generation is a pure function of the seed, so a run replays exactly.
#ifndef SHAPESHIFT_TOOLS_FUZZ_CASES_H_
#define SHAPESHIFT_TOOLS_FUZZ_CASES_H_

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shapes/guard_program.h"

namespace shapeshift::tools {

// The dynamic dims a request binds, in the dispatcher's slot order, with
// their declared inclusive ranges and the domain's relations between them
// (ShapeEnv::domain_constraints(): GPT-2 with past serves `past_sequence +
// sequence <= 1024`).
struct FuzzDomain {
  std::vector<std::string> slots;
  std::vector<int64_t> min;
  std::vector<int64_t> max;
  std::optional<GuardProgram> relations;  // over `slots`; none: nullopt
  std::vector<std::string> relation_texts;  // atom k of `relations`, as a refusal names it

  bool InRanges(const std::vector<int64_t>& values) const;
  bool MeetsRelations(const std::vector<int64_t>& values) const;
  bool Contains(const std::vector<int64_t>& values) const { return InRanges(values) && MeetsRelations(values); }
};

enum class CaseKind {
  kInDomain,     // every dim log-uniform in its range (DrawInRange; redrawn until the relations hold)
  kEdge,         // dims drawn from EdgeValues (each with probability 1/2)
  kOutOfDomain,  // one dim just outside its range (max+1, or min-1 when >= 0)
  kOutsideRelation,  // every dim in its range, together outside a relation
                     // (an edge or --case that breaks one)
  kWrongRank,    // an in-domain shape, but the first input gets an extra dim
  kWrongDtype,   // an in-domain shape, but the first input has another dtype
};
const char* CaseKindName(CaseKind kind);

struct FuzzCase {
  CaseKind kind = CaseKind::kInDomain;
  std::vector<int64_t> values;  // slot order
  int bad_slot = -1;            // kOutOfDomain: the dim outside its range
};

// A value of [min, max] (0 <= min <= max) for an in-domain case: an octave
// of the range ([2^j, 2^(j+1)) clipped to it, with 0 as an octave of its
// own where min is 0) chosen uniformly, then a value uniform inside it.
int64_t DrawInRange(int64_t min, int64_t max, std::mt19937_64& rng);

// 1, min, max, and every 2^k and 2^k+1 inside [min, max], ascending, unique.
std::vector<int64_t> EdgeValues(int64_t min, int64_t max);

// `count` cases from `seed`: about 60% in-domain, 25% edges, 10% outside
// the domain, 5% wrong rank or dtype. An edge that breaks a relation is
// kept as a kOutsideRelation case (the corners are where relations bite).
std::vector<FuzzCase> GenerateCases(const FuzzDomain& domain, int64_t count, uint64_t seed);

// A `--case` value, `batch=2,seq=65`: every slot named once. Values outside
// the declared range make an out-of-domain case, values in range that break
// a relation an outside-relation case; the kind is otherwise in-domain.
absl::StatusOr<FuzzCase> ParseCaseFlag(const std::string& text, const FuzzDomain& domain);
// The `--case` text of `values`.
std::string CaseFlagText(const FuzzDomain& domain, const std::vector<int64_t>& values);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_FUZZ_CASES_H_
