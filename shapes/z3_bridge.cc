// Z3Bridge queries. Each query builds a fresh plain SMT solver
// (z3::solver::simple(): the default solver's tactic preprocessing cost
// ~15-25 ms per query here, the plain one ~0.4 ms on the same guard sets);
// every check runs under a watchdog with the bridge's
// timeout. z3::exception is caught here and becomes kUnknown with the
// solver's message.
#include "shapes/z3_bridge.h"

#include <algorithm>

#include <z3++.h>

#include "absl/container/btree_set.h"
#include "absl/strings/str_cat.h"
#include "shapes/internal/z3_bridge_impl.h"
#include "shapes/internal/z3_watchdog.h"

namespace shapeshift {

using internal::Z3Translator;
using internal::Z3Watchdog;

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kProven: return "proven";
    case Verdict::kRefuted: return "refuted";
    case Verdict::kUnknown: return "unknown";
  }
  return "unknown";
}

namespace {

absl::btree_set<std::string> SymbolsOf(absl::Span<const Predicate> preds) {
  absl::btree_set<std::string> out;
  for (const Predicate& p : preds) p.CollectSymbols(&out);
  return out;
}

// Reads `names` from a model (completing unconstrained symbols); false when a
// value does not fit int64.
bool ReadModel(const z3::model& model, Z3Translator& tr,
               const absl::btree_set<std::string>& names, Assignment* out) {
  for (const std::string& name : names) {
    z3::expr v = model.eval(tr.Symbol(name), /*model_completion=*/true);
    int64_t value;
    if (!v.is_numeral_i64(value)) return false;
    (*out)[name] = value;
  }
  return true;
}

// True when `p` evaluates to `expected` under `values` (an evaluation error
// counts as false: guards fail closed).
bool Holds(const Predicate& p, const Assignment& values) {
  absl::StatusOr<bool> v = p.Evaluate(values);
  return v.ok() && *v;
}

std::string UnknownReason(z3::solver& s) {
  return absl::StrCat("solver gave up: ", s.reason_unknown());
}

}  // namespace

Z3Bridge::Z3Bridge(unsigned timeout_ms) : impl_(std::make_unique<Impl>()), timeout_ms_(timeout_ms) {}
Z3Bridge::~Z3Bridge() = default;

namespace {

// One solver check bounded by the bridge's timeout (see z3_watchdog.h).
z3::check_result Check(z3::solver& s, z3::context& ctx, unsigned timeout_ms) {
  Z3Watchdog watchdog(ctx, timeout_ms);
  return s.check();
}
z3::check_result Check(z3::solver& s, z3::context& ctx, unsigned timeout_ms,
                       const z3::expr_vector& assumptions) {
  Z3Watchdog watchdog(ctx, timeout_ms);
  return s.check(assumptions);
}

}  // namespace

ImplicationResult Z3Bridge::Implies(absl::Span<const Predicate> assumptions,
                                    const Predicate& goal) {
  ImplicationResult result;
  try {
    z3::solver s(impl_->ctx, z3::solver::simple());
    for (const Predicate& a : assumptions) s.add(impl_->translator.Translate(a));
    s.add(!impl_->translator.Translate(goal));
    switch (Check(s, impl_->ctx, timeout_ms_)) {
      case z3::unsat:
        result.verdict = Verdict::kProven;
        return result;
      case z3::unknown:
        result.detail = UnknownReason(s);
        return result;
      case z3::sat:
        break;
    }
    absl::btree_set<std::string> names = SymbolsOf(assumptions);
    goal.CollectSymbols(&names);
    Assignment cex;
    if (!ReadModel(s.get_model(), impl_->translator, names, &cex)) {
      result.detail = "counterexample does not fit int64";
      return result;
    }
    bool valid = !Holds(goal, cex);
    for (const Predicate& a : assumptions) valid = valid && Holds(a, cex);
    if (!valid) {
      // Only possible through division by zero, where Z3 and we disagree.
      result.detail = "solver counterexample does not evaluate (division by zero?)";
      return result;
    }
    result.verdict = Verdict::kRefuted;
    result.counterexample = std::move(cex);
  } catch (const z3::exception& e) {
    result = ImplicationResult{};
    result.detail = absl::StrCat("z3: ", e.msg());
  }
  return result;
}

SimplifyResult Z3Bridge::Simplify(const Predicate& domain, absl::Span<const Predicate> atoms) {
  SimplifyResult result;
  auto keep_all = [&] {
    result.kept.clear();
    result.dropped.clear();
    for (size_t i = 0; i < atoms.size(); ++i) result.kept.push_back(i);
  };
  try {
    Z3Translator& tr = impl_->translator;
    z3::solver s(impl_->ctx, z3::solver::simple());
    s.add(tr.Translate(domain));
    // atom i is asserted only under its tracking literal, so one solver
    // answers "do the others imply atom i" for every i.
    std::vector<z3::expr> tracks;
    for (size_t i = 0; i < atoms.size(); ++i) {
      z3::expr t = impl_->ctx.bool_const(absl::StrCat("__keep_", i).c_str());
      s.add(z3::implies(t, tr.Translate(atoms[i])));
      tracks.push_back(t);
    }
    z3::expr_vector all(impl_->ctx);
    for (const z3::expr& t : tracks) all.push_back(t);
    switch (Check(s, impl_->ctx, timeout_ms_, all)) {
      case z3::unsat:
        result.consistency = Verdict::kRefuted;
        keep_all();
        return result;
      case z3::unknown:
        result.detail = UnknownReason(s);
        keep_all();
        return result;
      case z3::sat: {
        absl::btree_set<std::string> names = SymbolsOf(atoms);
        domain.CollectSymbols(&names);
        result.consistency = Verdict::kProven;
        if (!ReadModel(s.get_model(), tr, names, &result.witness)) result.witness.clear();
        break;
      }
    }
    std::vector<bool> dropped(atoms.size(), false);
    for (size_t i = 0; i < atoms.size(); ++i) {
      z3::expr_vector others(impl_->ctx);
      for (size_t j = 0; j < atoms.size(); ++j) {
        if (j != i && !dropped[j]) others.push_back(tracks[j]);
      }
      s.push();
      s.add(!tr.Translate(atoms[i]));
      dropped[i] = Check(s, impl_->ctx, timeout_ms_, others) == z3::unsat;  // unknown keeps the atom
      s.pop();
    }
    for (size_t i = 0; i < atoms.size(); ++i) (dropped[i] ? result.dropped : result.kept).push_back(i);
  } catch (const z3::exception& e) {
    result = SimplifyResult{};
    result.detail = absl::StrCat("z3: ", e.msg());
    keep_all();
  }
  return result;
}

UnsatCoreResult Z3Bridge::UnsatCore(absl::Span<const Predicate> atoms, const Assignment& values) {
  UnsatCoreResult result;
  for (size_t i = 0; i < atoms.size(); ++i) {
    if (!Holds(atoms[i], values)) result.failing.push_back(i);
  }
  try {
    Z3Translator& tr = impl_->translator;
    z3::solver s(impl_->ctx, z3::solver::simple());
    // Tracking literals: one per atom, one per symbol binding, so the core
    // names both the atoms and the input values responsible.
    std::vector<z3::expr> literals;
    std::vector<std::string> binding_names;
    for (size_t i = 0; i < atoms.size(); ++i) {
      z3::expr t = impl_->ctx.bool_const(absl::StrCat("__atom_", i).c_str());
      s.add(z3::implies(t, tr.Translate(atoms[i])));
      literals.push_back(t);
    }
    absl::btree_set<std::string> names = SymbolsOf(atoms);
    for (const std::string& name : names) {
      auto it = values.find(name);
      if (it == values.end()) continue;  // left free: part of what Z3 may choose
      z3::expr t = impl_->ctx.bool_const(absl::StrCat("__bind_", name).c_str());
      s.add(z3::implies(t, tr.Symbol(name) == impl_->ctx.int_val(static_cast<int64_t>(it->second))));
      literals.push_back(t);
      binding_names.push_back(name);
    }
    auto check = [&](const std::vector<bool>& on) {
      z3::expr_vector assumed(impl_->ctx);
      for (size_t k = 0; k < literals.size(); ++k) {
        if (on[k]) assumed.push_back(literals[k]);
      }
      return Check(s, impl_->ctx, timeout_ms_, assumed);
    };
    std::vector<bool> in_core(literals.size(), true);
    switch (check(in_core)) {
      case z3::sat:
        result.verdict = Verdict::kRefuted;
        return result;
      case z3::unknown:
        result.detail = UnknownReason(s);
        return result;
      case z3::unsat:
        break;
    }
    // Start from Z3's core, then shrink it by deletion until minimal.
    std::fill(in_core.begin(), in_core.end(), false);
    z3::expr_vector core = s.unsat_core();
    for (unsigned c = 0; c < core.size(); ++c) {
      for (size_t k = 0; k < literals.size(); ++k) {
        if (z3::eq(core[c], literals[k])) in_core[k] = true;
      }
    }
    for (size_t k = 0; k < literals.size(); ++k) {
      if (!in_core[k]) continue;
      in_core[k] = false;
      if (check(in_core) != z3::unsat) in_core[k] = true;  // needed (or unknown: keep)
    }
    for (size_t k = 0; k < literals.size(); ++k) {
      if (!in_core[k]) continue;
      if (k < atoms.size()) {
        result.core.push_back(k);
      } else {
        result.core_symbols.push_back(binding_names[k - atoms.size()]);
      }
    }
    result.verdict = Verdict::kProven;
  } catch (const z3::exception& e) {
    result.verdict = Verdict::kUnknown;
    result.core.clear();
    result.core_symbols.clear();
    result.detail = absl::StrCat("z3: ", e.msg());
  }
  return result;
}

std::string Z3VersionString() {
  unsigned major = 0, minor = 0, build = 0, revision = 0;
  Z3_get_version(&major, &minor, &build, &revision);
  return absl::StrCat("Z3 ", major, ".", minor, ".", build, ".", revision);
}

CoverageResult Z3Bridge::Coverage(const Predicate& domain,
                                  absl::Span<const std::vector<Predicate>> guard_sets) {
  CoverageResult result;
  try {
    Z3Translator& tr = impl_->translator;
    z3::solver s(impl_->ctx, z3::solver::simple());
    s.add(tr.Translate(domain));
    absl::btree_set<std::string> names;
    domain.CollectSymbols(&names);
    std::vector<Predicate> sets;
    for (const std::vector<Predicate>& set : guard_sets) {
      Predicate conj = Predicate::And(set);
      conj.CollectSymbols(&names);
      s.add(!tr.Translate(conj));
      sets.push_back(std::move(conj));
    }
    result.query = s.to_smt2();
    switch (Check(s, impl_->ctx, timeout_ms_)) {
      case z3::unsat:
        result.verdict = Verdict::kProven;
        return result;
      case z3::unknown:
        result.detail = UnknownReason(s);
        return result;
      case z3::sat:
        break;
    }
    Assignment witness;
    if (!ReadModel(s.get_model(), tr, names, &witness)) {
      result.detail = "witness does not fit int64";
      return result;
    }
    bool valid = Holds(domain, witness);
    for (const Predicate& set : sets) valid = valid && !Holds(set, witness);
    if (!valid) {
      result.detail = "solver witness does not evaluate (division by zero?)";
      return result;
    }
    result.verdict = Verdict::kRefuted;
    result.witness = std::move(witness);
  } catch (const z3::exception& e) {
    result = CoverageResult{};
    result.detail = absl::StrCat("z3: ", e.msg());
  }
  return result;
}

absl::StatusOr<int64_t> Z3Bridge::EvaluateInZ3(SymExpr e, const Assignment& values) {
  try {
    Z3Translator& tr = impl_->translator;
    z3::expr_vector from(impl_->ctx), to(impl_->ctx);
    for (const std::string& name : e.Symbols()) {
      auto it = values.find(name);
      if (it == values.end()) {
        return absl::InvalidArgumentError(absl::StrCat("no value for symbol '", name, "'"));
      }
      from.push_back(tr.Symbol(name));
      to.push_back(impl_->ctx.int_val(static_cast<int64_t>(it->second)));
    }
    z3::expr v = tr.Translate(e).substitute(from, to).simplify();
    int64_t out;
    if (!v.is_numeral_i64(out)) {
      return absl::OutOfRangeError(absl::StrCat("Z3 value of `", e.ToString(),
                                                "` is not an int64 numeral: ", v.to_string()));
    }
    return out;
  } catch (const z3::exception& ex) {
    return absl::InternalError(absl::StrCat("z3: ", ex.msg()));
  }
}

}  // namespace shapeshift
