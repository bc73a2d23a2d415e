#include "graph/value_bounds.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/container/flat_hash_set.h"

namespace shapeshift {
namespace {

// Producers visited per question: the chains that matter (Range → Unsqueeze
// → Expand → Gather, CumSum → Mul → Add) are short; a deep or wide walk is
// not a position-id computation.
constexpr int kVisitBudget = 48;

// Ops each of whose output elements is one of input 0's elements: views,
// the data of a Gather, layout ops that only move data, Expand. Listed by
// name, not by the op table's class: the class says how data moves, not that
// no other value enters (a ScatterND writes its updates, a Pad its constant,
// Trilu zeros, Concat every input), and a bound that missed one would be
// unsound. Concat and Trilu are handled by the walk itself.
bool SelectsFromInput0(const Node& n) {
  static const auto* ops = new absl::flat_hash_set<std::string>{
      "Identity", "Reshape", "Flatten", "Squeeze",  "Unsqueeze",      "Expand",  "Transpose",
      "Slice",    "Split",   "Tile",    "Gather",   "GatherElements", "GatherND"};
  return ops->contains(n.op_type());
}

class BoundsWalk {
 public:
  explicit BoundsWalk(ShapeEnv& env) : env_(env) {}

  std::optional<ValueBounds> Of(const Value* v) {
    if (v == nullptr || --budget_ < 0) return std::nullopt;
    const DType dtype = v->type().dtype;
    if (dtype == DType::kBool) return ValueBounds{0, 1};
    if (!IsInteger(dtype)) return std::nullopt;
    if (const Tensor* c = v->constant()) return OfConstant(*c);
    if (const auto& elements = v->elements(); elements && !elements->empty()) return OfElements(*elements);
    const Node* n = v->producer();
    if (n == nullptr) return std::nullopt;  // a graph input: data
    std::optional<ValueBounds> b = OfNode(*n, v->output_index());
    if (!b || !FitsIn(*b, dtype)) return std::nullopt;
    return b;
  }

 private:
  std::optional<ValueBounds> OfConstant(const Tensor& t) {
    if (t.num_elements() == 0) return std::nullopt;
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      const int64_t e = t.GetAsInt64(i);
      lo = std::min(lo, e);
      hi = std::max(hi, e);
    }
    return ValueBounds{lo, hi};
  }

  std::optional<ValueBounds> OfElements(const std::vector<SymExpr>& elements) {
    ValueBounds b{elements[0], elements[0]};
    for (size_t i = 1; i < elements.size(); ++i) b = Union(b, {elements[i], elements[i]});
    return b;
  }

  std::optional<ValueBounds> OfNode(const Node& n, int output) {
    const std::string& op = n.op_type();
    if (SelectsFromInput0(n)) return Of(n.input(0));
    if (op == "Trilu") {
      std::optional<ValueBounds> a = Of(n.input(0));
      if (!a) return std::nullopt;
      return Union(*a, {0, 0});
    }
    if (op == "Cast") {
      const Value* in = n.input(0);
      if (in == nullptr || (in->type().dtype != DType::kBool && !IsInteger(in->type().dtype))) return std::nullopt;
      return Of(in);  // the result's dtype is checked by Of (a narrowing cast must keep the values)
    }
    if (op == "Concat" || op == "Max" || op == "Min") {
      std::optional<ValueBounds> all;
      for (const Value* in : n.inputs()) {
        std::optional<ValueBounds> b = Of(in);
        if (!b) return std::nullopt;
        all = all ? Union(*all, *b) : *b;
      }
      return all;
    }
    if (op == "Where") {
      std::optional<ValueBounds> a = Of(n.input(1)), b = Of(n.input(2));
      if (!a || !b) return std::nullopt;
      return Union(*a, *b);
    }
    if (op == "Neg") {
      std::optional<ValueBounds> a = Of(n.input(0));
      if (!a) return std::nullopt;
      return ValueBounds{-a->hi, -a->lo};
    }
    if (op == "Add" || op == "Sub" || op == "Mul") {
      std::optional<ValueBounds> a = Of(n.input(0));
      if (!a) return std::nullopt;
      std::optional<ValueBounds> b = Of(n.input(1));
      if (!b) return std::nullopt;
      if (op == "Add") return ValueBounds{a->lo + b->lo, a->hi + b->hi};
      if (op == "Sub") return ValueBounds{a->lo - b->hi, a->hi - b->lo};
      // Products of non-negative factors only: the bounds are the corners.
      if (!NonNegative(a->lo) || !NonNegative(b->lo)) return std::nullopt;
      return ValueBounds{a->lo * b->lo, a->hi * b->hi};
    }
    if (op == "Range" && output == 0) return OfRange(n);
    if (op == "CumSum") return OfCumSum(n);
    return std::nullopt;
  }

  // start, start + delta, ... short of limit.
  std::optional<ValueBounds> OfRange(const Node& n) {
    const Value* start = n.input(0);
    const Value* limit = n.input(1);
    const Value* delta = n.input(2);
    if (start == nullptr || limit == nullptr || delta == nullptr) return std::nullopt;
    const auto& s = start->elements();
    const auto& l = limit->elements();
    const auto& d = delta->elements();
    if (!s || !l || !d || s->size() != 1 || l->size() != 1 || d->size() != 1) return std::nullopt;
    std::optional<int64_t> step = (*d)[0].AsConst();
    if (!step || *step == 0) return std::nullopt;
    if (*step > 0) return ValueBounds{(*s)[0], (*l)[0] - 1};
    return ValueBounds{(*l)[0] + 1, (*s)[0]};
  }

  // Prefix sums along `axis` of n elements: within [0, n * hi] when every
  // element is non-negative (exclusive and reverse sums too: they add fewer).
  std::optional<ValueBounds> OfCumSum(const Node& n) {
    const Value* axis = n.input(1);
    if (axis == nullptr || !axis->elements() || axis->elements()->size() != 1) return std::nullopt;
    std::optional<int64_t> a = (*axis->elements())[0].AsConst();
    const std::vector<SymExpr>& shape = n.input(0)->type().shape;
    const int64_t rank = static_cast<int64_t>(shape.size());
    if (!a || *a < -rank || *a >= rank) return std::nullopt;
    const SymExpr length = shape[*a < 0 ? *a + rank : *a];
    std::optional<ValueBounds> in = Of(n.input(0));
    if (!in || !NonNegative(in->lo)) return std::nullopt;
    return ValueBounds{0, length * in->hi};
  }

  ValueBounds Union(const ValueBounds& a, const ValueBounds& b) {
    return {Smaller(a.lo, b.lo), Larger(a.hi, b.hi)};
  }
  SymExpr Smaller(SymExpr a, SymExpr b) {
    if (a == b) return a;
    if (env_.CanProve(Predicate::Le(a, b))) return a;
    if (env_.CanProve(Predicate::Le(b, a))) return b;
    return Min(a, b);
  }
  SymExpr Larger(SymExpr a, SymExpr b) {
    if (a == b) return a;
    if (env_.CanProve(Predicate::Ge(a, b))) return a;
    if (env_.CanProve(Predicate::Ge(b, a))) return b;
    return Max(a, b);
  }
  bool NonNegative(SymExpr e) { return env_.CanProve(Predicate::Ge(e, 0)); }

  // Arithmetic on narrow integers could wrap; the bounds are mathematical,
  // so they hold only when they provably fit the result's type.
  bool FitsIn(const ValueBounds& b, DType dtype) {
    if (dtype == DType::kI64) return true;  // dims and their sums stay far below 2^63
    int64_t lo = 0, hi = 0;
    switch (dtype) {
      case DType::kI32: lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max(); break;
      default: return false;
    }
    return env_.CanProve(Predicate::Ge(b.lo, lo)) && env_.CanProve(Predicate::Le(b.hi, hi));
  }

  ShapeEnv& env_;
  int budget_ = kVisitBudget;
};

}  // namespace

std::optional<ValueBounds> DeriveValueBounds(const Value& value, ShapeEnv& env) {
  return BoundsWalk(env).Of(&value);
}

}  // namespace shapeshift
