// Z3Bridge::WidestInterval: widening a specialization to the largest bucket
// of one symbol on which the guard atoms still hold (see z3_bridge.h for the
// exact definition). The universally quantified question "every value in
// [lo, hi] passes" becomes two existential optimizations: the nearest failing
// value above and below the current one.
#include <optional>

#include <z3++.h>

#include "absl/strings/str_cat.h"
#include "shapes/internal/z3_bridge_impl.h"
#include "shapes/internal/z3_watchdog.h"
#include "shapes/z3_bridge.h"

namespace shapeshift {

namespace {

enum class Direction { kUp, kDown };

struct Nearest {
  z3::check_result status;
  std::optional<int64_t> value;  // sat: the nearest failing value
};

// The failing value of `x` nearest to `from` in `direction`, within `bound`.
Nearest NearestFailure(z3::context& ctx, unsigned timeout_ms, const z3::expr& x,
                       const z3::expr& all_hold, int64_t from, int64_t bound,
                       Direction direction) {
  z3::optimize opt(ctx);
  if (direction == Direction::kUp) {
    opt.add(x > ctx.int_val(from) && x <= ctx.int_val(bound));
    opt.minimize(x);
  } else {
    opt.add(x < ctx.int_val(from) && x >= ctx.int_val(bound));
    opt.maximize(x);
  }
  opt.add(!all_hold);
  Nearest n{z3::unknown, std::nullopt};
  {
    internal::Z3Watchdog watchdog(ctx, timeout_ms);
    n.status = opt.check();
  }
  if (n.status == z3::sat) {
    int64_t v;
    if (opt.get_model().eval(x, true).is_numeral_i64(v)) n.value = v;
    else n.status = z3::unknown;
  }
  return n;
}

}  // namespace

IntervalResult Z3Bridge::WidestInterval(const std::string& symbol, const Assignment& at,
                                        absl::Span<const Predicate> atoms, Interval limit) {
  IntervalResult result;
  auto it = at.find(symbol);
  if (it == at.end()) {
    result.detail = absl::StrCat("no value for symbol '", symbol, "'");
    return result;
  }
  const int64_t value = it->second;
  if (!limit.Contains(value)) {
    result.detail = absl::StrCat(symbol, "=", value, " is outside its limit [", limit.lo, ", ",
                                 limit.hi, "]");
    return result;
  }
  // Fix every other symbol at its value.
  absl::flat_hash_map<std::string, SymExpr> fixed;
  for (const auto& [name, v] : at) {
    if (name != symbol) fixed[name] = SymExpr(v);
  }
  std::vector<Predicate> parts;
  for (const Predicate& a : atoms) parts.push_back(a.Substitute(fixed));
  Predicate all = Predicate::And(std::move(parts));
  absl::btree_set<std::string> free;
  all.CollectSymbols(&free);
  free.erase(symbol);
  if (!free.empty()) {
    result.detail = absl::StrCat("no value for symbol '", *free.begin(), "'");
    return result;
  }
  absl::StatusOr<bool> holds_now = all.Evaluate({{symbol, value}});
  if (!holds_now.ok() || !*holds_now) {
    result.verdict = Verdict::kRefuted;
    result.lo = result.hi = value;
    return result;
  }
  try {
    z3::expr x = impl_->translator.Symbol(symbol);
    z3::expr all_hold = impl_->translator.Translate(all);
    Nearest up = NearestFailure(impl_->ctx, timeout_ms_, x, all_hold, value, limit.hi,
                                Direction::kUp);
    Nearest down = NearestFailure(impl_->ctx, timeout_ms_, x, all_hold, value, limit.lo,
                                  Direction::kDown);
    if (up.status == z3::unknown || down.status == z3::unknown) {
      result.detail = "solver gave up (timeout?) while widening";
      return result;
    }
    result.hi = up.value ? *up.value - 1 : limit.hi;
    result.lo = down.value ? *down.value + 1 : limit.lo;
    result.verdict = Verdict::kProven;
  } catch (const z3::exception& e) {
    result = IntervalResult{};
    result.detail = absl::StrCat("z3: ", e.msg());
  }
  return result;
}

}  // namespace shapeshift
