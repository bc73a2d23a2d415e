#include "shapes/range_analysis.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <string>

#include "shapes/sym_expr_visitor.h"

namespace shapeshift {
namespace {

using Wide = __int128;
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Set while computing one node; records that a bound was clamped.
thread_local bool* clamp_flag = nullptr;

int64_t Clamp(Wide v) {
  if (v < kMin || v > kMax) {
    if (clamp_flag != nullptr) *clamp_flag = true;
    return v < kMin ? kMin : kMax;
  }
  return static_cast<int64_t>(v);
}

Interval FromWide(Wide lo, Wide hi) { return {Clamp(lo), Clamp(hi)}; }

Interval AddIntervals(Interval a, Interval b) {
  return FromWide(Wide{a.lo} + b.lo, Wide{a.hi} + b.hi);
}

Interval MulIntervals(Interval a, Interval b) {
  Wide c[4] = {Wide{a.lo} * b.lo, Wide{a.lo} * b.hi, Wide{a.hi} * b.lo, Wide{a.hi} * b.hi};
  return FromWide(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
}

Wide FloorDivWide(Wide a, Wide b) {
  Wide q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Floor division is monotone in the numerator and, on each side of zero, in
// the denominator: the extremes are at the corners.
Interval FloorDivIntervals(Interval a, Interval b) {
  if (a.IsEmpty() || b.IsEmpty()) return Interval::Everything();  // vacuous facts
  if (b.Contains(0)) {
    if (b.lo == 0 && b.hi == 0) return Interval::Everything();  // always an error
    if (b.lo == 0) b.lo = 1;
    else if (b.hi == 0) b.hi = -1;
    else return Interval::Everything();
  }
  Wide c[4] = {FloorDivWide(a.lo, b.lo), FloorDivWide(a.lo, b.hi), FloorDivWide(a.hi, b.lo),
               FloorDivWide(a.hi, b.hi)};
  return FromWide(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
}

Interval ModIntervals(Interval a, Interval b) {
  if (a.IsEmpty() || b.IsEmpty()) return Interval::Everything();  // vacuous facts
  if (b.lo == 0 && b.hi == 0) return Interval::Everything();     // always an error
  if (b.IsPoint() && b.lo != 0) {
    const int64_t d = b.lo;
    // Within one period the remainder is monotone in the numerator.
    if (FloorDivWide(a.lo, d) == FloorDivWide(a.hi, d)) {
      int64_t x = FloorModInt(a.lo, d), y = FloorModInt(a.hi, d);
      return {std::min(x, y), std::max(x, y)};
    }
  }
  if (b.lo > 0) {
    Interval r{0, Clamp(Wide{b.hi} - 1)};
    if (a.lo >= 0) r.hi = std::min(r.hi, a.hi);  // x % d == x when 0 <= x < d
    return r;
  }
  if (b.hi < 0) {
    Interval r{Clamp(Wide{b.lo} + 1), 0};
    if (a.hi <= 0) r.lo = std::max(r.lo, a.lo);
    return r;
  }
  if (b.lo == 0 && b.hi > 0) return {0, Clamp(Wide{b.hi} - 1)};
  if (b.hi == 0 && b.lo < 0) return {Clamp(Wide{b.lo} + 1), 0};
  // Either sign of divisor: |result| < max |divisor|.
  Wide m = std::max(-Wide{b.lo}, Wide{b.hi});
  return FromWide(-(m - 1), m - 1);
}

}  // namespace

Interval RangeAnalysis::Bounds(SymExpr e) { return Analyze(e).bounds; }
bool RangeAnalysis::Saturated(SymExpr e) { return Analyze(e).saturated; }

const RangeAnalysis::Result& RangeAnalysis::Analyze(SymExpr e) {
  auto it = memo_.find(e);
  if (it != memo_.end()) return it->second;
  Result r;
  // Operands are analyzed (and memoized) inside Compute; their saturation
  // propagates through `saturated`.
  r.bounds = Compute(e, &r.saturated);
  return memo_.emplace(e, r).first->second;
}

Interval RangeAnalysis::Compute(SymExpr e, bool* saturated) {
  // Operand results first, so the clamp flag below belongs to this node.
  for (SymExpr op : e.operands()) *saturated |= Analyze(op).saturated;
  bool* outer = clamp_flag;
  clamp_flag = saturated;
  Interval r = ComputeNode(e);
  clamp_flag = outer;
  return r;
}

namespace {

// One node's interval from its operands' (memoized by the analysis).
class NodeBounds final : public SymExprVisitor<Interval> {
 public:
  NodeBounds(RangeAnalysis& analysis, const SymbolFacts& facts) : analysis_(analysis), facts_(facts) {}

 private:
  Interval VisitConst(const SymExpr&, int64_t value) override { return Interval::Point(value); }
  Interval VisitSymbol(const SymExpr&, const std::string& name) override { return facts_.Get(name).range; }
  Interval VisitAdd(const SymExpr&, absl::Span<const SymExpr> terms) override {
    Interval sum = Interval::Point(0);
    for (SymExpr op : terms) sum = AddIntervals(sum, analysis_.Bounds(op));
    return sum;
  }
  Interval VisitMul(const SymExpr&, absl::Span<const SymExpr> ops) override {
    Interval product = Interval::Point(1);
    for (size_t i = 0; i < ops.size(); ++i) {
      // x*x (a repeated factor) is a square: never negative.
      if (i + 1 < ops.size() && ops[i] == ops[i + 1]) {
        Interval b = analysis_.Bounds(ops[i]);
        Interval sq = MulIntervals(b, b);
        if (b.lo < 0 && b.hi > 0) sq.lo = 0;
        product = MulIntervals(product, sq);
        ++i;
        continue;
      }
      product = MulIntervals(product, analysis_.Bounds(ops[i]));
    }
    return product;
  }
  Interval VisitFloorDiv(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
    return FloorDivIntervals(analysis_.Bounds(a), analysis_.Bounds(b));
  }
  Interval VisitMod(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
    return ModIntervals(analysis_.Bounds(a), analysis_.Bounds(b));
  }
  Interval VisitMin(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
    Interval x = analysis_.Bounds(a), y = analysis_.Bounds(b);
    return {std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
  }
  Interval VisitMax(const SymExpr&, const SymExpr& a, const SymExpr& b) override {
    Interval x = analysis_.Bounds(a), y = analysis_.Bounds(b);
    return {std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
  }

  RangeAnalysis& analysis_;
  const SymbolFacts& facts_;
};

}  // namespace

Interval RangeAnalysis::ComputeNode(SymExpr e) { return NodeBounds(*this, *facts_).Visit(e); }

}  // namespace shapeshift
