// ShapeEnv: symbol table, scoped facts, guard recording, and the Query
// pipeline (see shape_env.h and shapes/README.md for the rules).
#include "shapes/shape_env.h"

#include <cctype>
#include <utility>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shapes/analysis_prover.h"
#include "shapes/symbol_facts.h"
#include "shapes/z3_bridge.h"

namespace shapeshift {

bool IsTrue(Answer a) { return a == Answer::kProvenTrue || a == Answer::kSpecializedTrue; }
bool IsFalse(Answer a) { return a == Answer::kProvenFalse || a == Answer::kSpecializedFalse; }

std::string ProvenanceText(const Provenance& p) {
  return absl::StrCat(p.pass, p.node.empty() ? "" : absl::StrCat(" at node '", p.node, "'"), ": ", p.reason);
}

std::string RangeNoteSuffix(const SymbolInfo& info) {
  return info.range_note.empty() ? std::string() : absl::StrCat("; ", info.range_note);
}

absl::Status RelationRefusal(const DomainConstraint& constraint, const Assignment& values) {
  absl::btree_set<std::string> names;
  constraint.predicate.CollectSymbols(&names);
  std::vector<std::string> bound;
  for (const std::string& name : names) {
    auto it = values.find(name);
    bound.push_back(it == values.end() ? name : absl::StrCat(name, " = ", it->second));
  }
  return absl::OutOfRangeError(absl::StrCat("dims ", absl::StrJoin(bound, ", "), " are outside the model's domain: ",
                                            constraint.predicate.ToString(), " does not hold",
                                            constraint.note.empty() ? "" : absl::StrCat("; ", constraint.note)));
}

const char* AnswerName(Answer a) {
  switch (a) {
    case Answer::kProvenTrue: return "proven-true";
    case Answer::kProvenFalse: return "proven-false";
    case Answer::kSpecializedTrue: return "specialized-true";
    case Answer::kSpecializedFalse: return "specialized-false";
    case Answer::kUnknown: return "unknown";
  }
  return "unknown";
}

const char* SymbolPolicyName(SymbolPolicy p) {
  switch (p) {
    case SymbolPolicy::kPolymorphic: return "polymorphic";
    case SymbolPolicy::kBucketed: return "bucketed";
    case SymbolPolicy::kStatic: return "static";
  }
  return "polymorphic";
}

namespace {

bool IsIdentifier(absl::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
    return false;
  }
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  }
  return name != "min" && name != "max" && name != "true" && name != "false";
}

// `sym == const` (or `!=`) on one symbol: the exact-value question only a
// static symbol may specialize on.
bool IsExactValueQuestion(const Predicate& p, const std::string& sym) {
  if (p.kind() != PredKind::kEq && p.kind() != PredKind::kNe) return false;
  return p.lhs().IsSymbol() && p.lhs().symbol_name() == sym && p.rhs().IsConst();
}

bool MentionsExactValue(const Predicate& p, const std::string& sym) {
  if (IsExactValueQuestion(p, sym)) return true;
  for (const Predicate& c : p.children()) {
    if (MentionsExactValue(c, sym)) return true;
  }
  return false;
}

}  // namespace

struct ShapeEnv::Impl {
  std::vector<SymbolInfo> symbols;
  absl::flat_hash_map<std::string, size_t> index;
  std::vector<Predicate> facts;  // scoped assumptions, innermost last
  std::vector<GuardAtom> guards;
  absl::flat_hash_set<Predicate> guard_set;  // dedupe
  std::vector<DomainConstraint> constraints;
  std::unique_ptr<Z3Bridge> z3;
  int fresh_counter = 0;

  // Everything a question may assume: declared ranges, scoped facts, and
  // recorded guards (the artifact only ever runs where they hold).
  std::vector<Predicate> Assumptions(const Predicate& domain) const {
    std::vector<Predicate> all{domain};
    all.insert(all.end(), facts.begin(), facts.end());
    for (const GuardAtom& g : guards) all.push_back(g.predicate);
    return all;
  }

  SymbolFacts CheapFacts() const {
    SymbolFacts f;
    for (const SymbolInfo& s : symbols) f.Declare(s.name, s.min, s.max);
    for (const DomainConstraint& c : constraints) f.Assume(c.predicate);
    for (const Predicate& p : facts) f.Assume(p);
    for (const GuardAtom& g : guards) f.Assume(g.predicate);
    return f;
  }

  Z3Bridge& Solver() {
    if (!z3) z3 = std::make_unique<Z3Bridge>(/*timeout_ms=*/200);
    return *z3;
  }
};

ShapeEnv::ShapeEnv() : impl_(std::make_unique<Impl>()) {}
ShapeEnv::~ShapeEnv() = default;

absl::StatusOr<SymExpr> ShapeEnv::DeclareSymbol(SymbolInfo info) {
  if (!IsIdentifier(info.name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("symbol name '", info.name, "' is not an identifier"));
  }
  if (info.min > info.max) {
    return absl::InvalidArgumentError(absl::StrCat("symbol '", info.name, "': empty range ",
                                                   info.min, "..", info.max));
  }
  if (info.hint && (*info.hint < info.min || *info.hint > info.max)) {
    return absl::InvalidArgumentError(absl::StrCat("symbol '", info.name, "': hint ", *info.hint,
                                                   " outside ", info.min, "..", info.max));
  }
  if (auto it = impl_->index.find(info.name); it != impl_->index.end()) {
    const SymbolInfo& old = impl_->symbols[it->second];
    if (old.min != info.min || old.max != info.max) {
      return absl::AlreadyExistsError(absl::StrCat("symbol '", info.name, "' already declared as ",
                                                   old.min, "..", old.max, ", not ", info.min,
                                                   "..", info.max));
    }
    return SymExpr::Symbol(info.name);
  }
  impl_->index[info.name] = impl_->symbols.size();
  std::string name = info.name;
  impl_->symbols.push_back(std::move(info));
  return SymExpr::Symbol(name);
}

SymExpr ShapeEnv::FreshSymbol(absl::string_view prefix, int64_t min, int64_t max) {
  std::string name;
  do {
    name = absl::StrCat(prefix, impl_->fresh_counter++);
  } while (HasSymbol(name));
  SymbolInfo info;
  info.name = name;
  info.min = min;
  info.max = max;
  impl_->index[name] = impl_->symbols.size();
  impl_->symbols.push_back(std::move(info));
  return SymExpr::Symbol(name);
}

bool ShapeEnv::HasSymbol(absl::string_view name) const { return impl_->index.contains(name); }

const SymbolInfo* ShapeEnv::FindSymbol(absl::string_view name) const {
  auto it = impl_->index.find(name);
  return it == impl_->index.end() ? nullptr : &impl_->symbols[it->second];
}

const std::vector<SymbolInfo>& ShapeEnv::symbols() const { return impl_->symbols; }

absl::Status ShapeEnv::SetHint(absl::string_view name, int64_t hint) {
  auto it = impl_->index.find(name);
  if (it == impl_->index.end()) {
    return absl::NotFoundError(absl::StrCat("unknown symbol '", name, "'"));
  }
  SymbolInfo& s = impl_->symbols[it->second];
  if (hint < s.min || hint > s.max) {
    return absl::OutOfRangeError(absl::StrCat("hint ", hint, " for '", name, "' is outside ",
                                              s.min, "..", s.max));
  }
  s.hint = hint;
  return absl::OkStatus();
}

absl::Status ShapeEnv::NarrowRange(absl::string_view name, int64_t min, int64_t max, absl::string_view note) {
  auto it = impl_->index.find(name);
  if (it == impl_->index.end()) {
    return absl::NotFoundError(absl::StrCat("unknown symbol '", name, "'"));
  }
  SymbolInfo& s = impl_->symbols[it->second];
  if (min > max || min < s.min || max > s.max) {
    return absl::InvalidArgumentError(absl::StrCat("cannot narrow '", name, "' from ", s.min, "..", s.max,
                                                   " to ", min, "..", max, ": not a non-empty sub-range"));
  }
  if (s.hint && (*s.hint < min || *s.hint > max)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot narrow '", name, "' to ", min, "..", max,
                                                   ": its hint ", *s.hint, " would fall outside"));
  }
  s.min = min;
  s.max = max;
  if (!note.empty()) s.range_note = std::string(note);
  return absl::OkStatus();
}

absl::Status ShapeEnv::SetPolicy(absl::string_view name, SymbolPolicy policy) {
  auto it = impl_->index.find(name);
  if (it == impl_->index.end()) {
    return absl::NotFoundError(absl::StrCat("unknown symbol '", name, "'"));
  }
  impl_->symbols[it->second].policy = policy;
  return absl::OkStatus();
}

absl::Status ShapeEnv::AddDomainConstraint(DomainConstraint constraint) {
  absl::btree_set<std::string> names;
  constraint.predicate.CollectSymbols(&names);
  for (const std::string& name : names) {
    if (!HasSymbol(name)) {
      return absl::NotFoundError(absl::StrCat("domain constraint ", constraint.predicate.ToString(),
                                              ": unknown symbol '", name, "'"));
    }
  }
  for (const DomainConstraint& c : impl_->constraints) {
    if (c.predicate == constraint.predicate) return absl::OkStatus();
  }
  impl_->constraints.push_back(std::move(constraint));
  return absl::OkStatus();
}

const std::vector<DomainConstraint>& ShapeEnv::domain_constraints() const { return impl_->constraints; }

absl::Status ShapeEnv::CopyDomainConstraintsFrom(const ShapeEnv& other) {
  for (const DomainConstraint& c : other.domain_constraints()) {
    if (absl::Status s = AddDomainConstraint(c); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::optional<bool> ShapeEnv::ProveCheaply(const Predicate& p) const {
  SymbolFacts facts = impl_->CheapFacts();
  AnalysisProver prover(&facts);
  return prover.Prove(p);
}

std::optional<bool> ShapeEnv::Decide(const Predicate& p) {
  if (p.kind() == PredKind::kTrue) return true;
  if (p.kind() == PredKind::kFalse) return false;
  if (std::optional<bool> cheap = ProveCheaply(p)) return cheap;
  std::vector<Predicate> assumptions = impl_->Assumptions(DomainPredicate());
  Z3Bridge& z3 = impl_->Solver();
  if (z3.Implies(assumptions, p).verdict == Verdict::kProven) return true;
  if (z3.Implies(assumptions, Predicate::Not(p)).verdict == Verdict::kProven) return false;
  return std::nullopt;
}

std::optional<std::string> ShapeEnv::WhyNotSpecializable(const Predicate& question) const {
  absl::btree_set<std::string> names;
  question.CollectSymbols(&names);
  Assignment hints;
  for (const std::string& name : names) {
    const SymbolInfo* s = FindSymbol(name);
    if (s == nullptr) return absl::StrCat("'", name, "' is not declared");
    if (s->policy == SymbolPolicy::kPolymorphic) return absl::StrCat("'", name, "' is polymorphic");
    if (!s->hint) return absl::StrCat("'", name, "' has no hint");
    if (s->policy == SymbolPolicy::kBucketed && MentionsExactValue(question, name)) {
      return absl::StrCat("'", name, "' is bucketed: only static symbols specialize on exact values");
    }
    hints[name] = *s->hint;
  }
  for (const Predicate& f : impl_->facts) {
    absl::StatusOr<bool> holds = f.Evaluate(hints);
    // A fact about other symbols cannot be checked at these hints; a fact
    // the hints violate means this code is unreachable at the hint.
    if (holds.ok() && !*holds) return absl::StrCat("the hints violate the assumed fact ", f.ToString());
  }
  return std::nullopt;
}

Answer ShapeEnv::Query(const Predicate& question, const Provenance& provenance) {
  if (std::optional<bool> proven = Decide(question)) {
    return *proven ? Answer::kProvenTrue : Answer::kProvenFalse;
  }
  if (WhyNotSpecializable(question)) return Answer::kUnknown;
  Assignment hints;
  for (const SymbolInfo& s : impl_->symbols) {
    if (s.hint) hints[s.name] = *s.hint;
  }
  absl::StatusOr<bool> at_hint = question.Evaluate(hints);
  if (!at_hint.ok()) return Answer::kUnknown;  // e.g. divides by zero at the hint
  Predicate guard = *at_hint ? question : Predicate::Not(question);
  if (impl_->guard_set.insert(guard).second) {
    impl_->guards.push_back(GuardAtom{guard, provenance});
  }
  return *at_hint ? Answer::kSpecializedTrue : Answer::kSpecializedFalse;
}

bool ShapeEnv::CanProve(const Predicate& p) {
  std::optional<bool> v = Decide(p);
  return v.has_value() && *v;
}

const std::vector<GuardAtom>& ShapeEnv::guards() const { return impl_->guards; }

Predicate ShapeEnv::DomainPredicate() const {
  std::vector<Predicate> parts;
  for (const SymbolInfo& s : impl_->symbols) {
    SymExpr sym = SymExpr::Symbol(s.name);
    parts.push_back(Predicate::Ge(sym, s.min));
    parts.push_back(Predicate::Le(sym, s.max));
  }
  for (const DomainConstraint& c : impl_->constraints) parts.push_back(c.predicate);
  return Predicate::And(std::move(parts));
}

ShapeEnv::Scope::Scope(ShapeEnv* env, Predicate fact) : env_(env) {
  env_->impl_->facts.push_back(std::move(fact));
}

ShapeEnv::Scope::~Scope() { env_->impl_->facts.pop_back(); }

Z3Bridge& ShapeEnv::z3() { return impl_->Solver(); }

}  // namespace shapeshift
