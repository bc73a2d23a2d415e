// Predicate construction (with the normalizations that make equal questions
// equal values), evaluation and printing. Parsing lives in parser.cc.
//
// Normalizations, all exact for every integer assignment:
//  - a comparison whose sides differ by a constant folds to true/false;
//  - a constant on the left moves right (`128 < seq` is `seq > 128`), and a
//    constant term on the left moves into the right side (`seq + 1 <= 5` is
//    `seq <= 4`); == and != order their two symbolic sides structurally;
//  - `e % k == 0` (k > 0 constant) is Divisible(e, k), and `e % k != 0` is
//    !Divisible(e, k); Divisible drops the terms of e that are multiples of k;
//  - `!` flips comparisons (`!(a < b)` is `a >= b`) and cancels itself;
//  - && and || flatten, drop their identity, short-circuit on their absorbing
//    element and drop duplicate children.
#include "shapes/predicate.h"

#include <limits>
#include <ostream>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shapeshift {

struct Predicate::Node {
  PredKind kind = PredKind::kTrue;
  SymExpr lhs;
  SymExpr rhs;
  std::vector<Predicate> children;
  size_t hash = 0;
};

namespace {

bool IsComparison(PredKind k) {
  return k == PredKind::kEq || k == PredKind::kNe || k == PredKind::kLt ||
         k == PredKind::kLe || k == PredKind::kGt || k == PredKind::kGe;
}

// The comparison with its sides swapped: a < b  <=>  b > a.
PredKind Mirror(PredKind k) {
  switch (k) {
    case PredKind::kLt: return PredKind::kGt;
    case PredKind::kLe: return PredKind::kGe;
    case PredKind::kGt: return PredKind::kLt;
    case PredKind::kGe: return PredKind::kLe;
    default: return k;
  }
}

// The comparison meaning its negation: !(a < b)  <=>  a >= b.
PredKind Negation(PredKind k) {
  switch (k) {
    case PredKind::kEq: return PredKind::kNe;
    case PredKind::kNe: return PredKind::kEq;
    case PredKind::kLt: return PredKind::kGe;
    case PredKind::kLe: return PredKind::kGt;
    case PredKind::kGt: return PredKind::kLe;
    case PredKind::kGe: return PredKind::kLt;
    default: return k;
  }
}

bool CompareInts(PredKind k, int64_t a, int64_t b) {
  switch (k) {
    case PredKind::kEq: return a == b;
    case PredKind::kNe: return a != b;
    case PredKind::kLt: return a < b;
    case PredKind::kLe: return a <= b;
    case PredKind::kGt: return a > b;
    default: return a >= b;
  }
}

const char* OperatorText(PredKind k) {
  switch (k) {
    case PredKind::kEq: return " == ";
    case PredKind::kNe: return " != ";
    case PredKind::kLt: return " < ";
    case PredKind::kLe: return " <= ";
    case PredKind::kGt: return " > ";
    default: return " >= ";
  }
}

// The constant term of a canonical sum (0 when there is none).
int64_t ConstantTerm(SymExpr e) {
  if (auto c = e.AsConst()) return *c;
  if (e.kind() == ExprKind::kAdd) {
    if (auto c = e.operands().back().AsConst()) return *c;
  }
  return 0;
}

}  // namespace

Predicate::Predicate() : Predicate(True()) {}

Predicate Predicate::True() {
  static const auto* node = new std::shared_ptr<const Node>([] {
    auto n = std::make_shared<Node>();
    n->kind = PredKind::kTrue;
    n->hash = absl::HashOf(static_cast<int>(PredKind::kTrue));
    return n;
  }());
  return Predicate(*node);
}

Predicate Predicate::False() {
  static const auto* node = new std::shared_ptr<const Node>([] {
    auto n = std::make_shared<Node>();
    n->kind = PredKind::kFalse;
    n->hash = absl::HashOf(static_cast<int>(PredKind::kFalse));
    return n;
  }());
  return Predicate(*node);
}

namespace {

Predicate Bool(bool b) { return b ? Predicate::True() : Predicate::False(); }

}  // namespace

// Builds a normalized comparison (see top of file).
static Predicate MakeComparison(PredKind kind, SymExpr a, SymExpr b);

Predicate Predicate::Eq(SymExpr a, SymExpr b) { return MakeComparison(PredKind::kEq, a, b); }
Predicate Predicate::Ne(SymExpr a, SymExpr b) { return MakeComparison(PredKind::kNe, a, b); }
Predicate Predicate::Lt(SymExpr a, SymExpr b) { return MakeComparison(PredKind::kLt, a, b); }
Predicate Predicate::Le(SymExpr a, SymExpr b) { return MakeComparison(PredKind::kLe, a, b); }
Predicate Predicate::Gt(SymExpr a, SymExpr b) { return MakeComparison(PredKind::kGt, a, b); }
Predicate Predicate::Ge(SymExpr a, SymExpr b) { return MakeComparison(PredKind::kGe, a, b); }

// A node with its hash computed; the only way nodes are made.
class PredicateBuilder {
 public:
  static Predicate Atom(PredKind kind, SymExpr lhs, SymExpr rhs) {
    auto n = std::make_shared<Predicate::Node>();
    n->kind = kind;
    n->lhs = lhs;
    n->rhs = rhs;
    n->hash = absl::HashOf(static_cast<int>(kind), lhs, rhs);
    return Wrap(std::move(n));
  }
  static Predicate Compound(PredKind kind, std::vector<Predicate> children) {
    auto n = std::make_shared<Predicate::Node>();
    n->kind = kind;
    size_t h = absl::HashOf(static_cast<int>(kind));
    for (const Predicate& c : children) h = absl::HashOf(h, c.hash());
    n->children = std::move(children);
    n->hash = h;
    return Wrap(std::move(n));
  }

 private:
  static Predicate Wrap(std::shared_ptr<const Predicate::Node> n);
};

static Predicate MakeComparison(PredKind kind, SymExpr a, SymExpr b) {
  if (auto diff = (a - b).AsConst()) return Bool(CompareInts(kind, *diff, 0));
  // Two constants whose difference overflows still compare exactly.
  if (a.IsConst() && b.IsConst()) return Bool(CompareInts(kind, *a.AsConst(), *b.AsConst()));
  if (a.IsConst()) {
    std::swap(a, b);
    kind = Mirror(kind);
  }
  if (b.IsConst()) {
    if (int64_t c = ConstantTerm(a); c != 0) {
      SymExpr moved = b - c;
      SymExpr rest = a - c;
      // Not when b - c overflows, nor when a's constants do not fold (their
      // sum overflows): moving one would not remove it from the left side,
      // and the printed text would not parse back to the same comparison.
      if (moved.IsConst() && ConstantTerm(rest) == 0) {
        a = rest;
        b = moved;
      }
    }
    if (auto k = b.AsConst(); *k == 0 && a.kind() == ExprKind::kMod) {
      auto d = a.operands()[1].AsConst();
      if (d && *d > 0 && (kind == PredKind::kEq || kind == PredKind::kNe)) {
        Predicate divisible = Predicate::Divisible(a.operands()[0], *d);
        return kind == PredKind::kEq ? divisible : Predicate::Not(divisible);
      }
    }
  } else if ((kind == PredKind::kEq || kind == PredKind::kNe) && b < a) {
    std::swap(a, b);
  }
  return PredicateBuilder::Atom(kind, a, b);
}

Predicate Predicate::Divisible(SymExpr a, int64_t divisor) {
  if (divisor == 0) return Eq(a, 0);
  if (divisor < 0 && divisor != std::numeric_limits<int64_t>::min()) divisor = -divisor;
  SymExpr reduced = Mod(a, divisor);
  if (auto r = reduced.AsConst()) return Bool(*r == 0);
  SymExpr lhs = a;
  if (reduced.kind() == ExprKind::kMod && reduced.operands()[1] == SymExpr(divisor)) {
    lhs = reduced.operands()[0];
  }
  return PredicateBuilder::Atom(PredKind::kDivisible, lhs, divisor);
}

namespace {

// && and || share one normalization: `absorbing` is false for && and true
// for ||.
Predicate Junction(PredKind kind, std::vector<Predicate> parts) {
  const PredKind identity = kind == PredKind::kAnd ? PredKind::kTrue : PredKind::kFalse;
  const PredKind absorbing = kind == PredKind::kAnd ? PredKind::kFalse : PredKind::kTrue;
  std::vector<Predicate> flat;
  auto add = [&](const Predicate& p, auto& self) -> bool {
    if (p.kind() == absorbing) return false;
    if (p.kind() == identity) return true;
    if (p.kind() == kind) {
      for (const Predicate& c : p.children()) {
        if (!self(c, self)) return false;
      }
      return true;
    }
    for (const Predicate& existing : flat) {
      if (existing == p) return true;
    }
    flat.push_back(p);
    return true;
  };
  for (const Predicate& p : parts) {
    if (!add(p, add)) return Bool(absorbing == PredKind::kTrue);
  }
  if (flat.empty()) return Bool(identity == PredKind::kTrue);
  if (flat.size() == 1) return flat[0];
  return PredicateBuilder::Compound(kind, std::move(flat));
}

}  // namespace

Predicate Predicate::And(std::vector<Predicate> parts) {
  return Junction(PredKind::kAnd, std::move(parts));
}
Predicate Predicate::Or(std::vector<Predicate> parts) {
  return Junction(PredKind::kOr, std::move(parts));
}

Predicate Predicate::Not(Predicate p) {
  switch (p.kind()) {
    case PredKind::kTrue: return False();
    case PredKind::kFalse: return True();
    case PredKind::kNot: return p.children()[0];
    default: break;
  }
  if (IsComparison(p.kind())) return PredicateBuilder::Atom(Negation(p.kind()), p.lhs(), p.rhs());
  return PredicateBuilder::Compound(PredKind::kNot, {std::move(p)});
}

Predicate PredicateBuilder::Wrap(std::shared_ptr<const Predicate::Node> n) {
  return Predicate(std::move(n));
}

PredKind Predicate::kind() const { return node_->kind; }
bool Predicate::IsAtom() const {
  return IsComparison(node_->kind) || node_->kind == PredKind::kDivisible;
}
SymExpr Predicate::lhs() const { return node_->lhs; }
SymExpr Predicate::rhs() const { return node_->rhs; }
const std::vector<Predicate>& Predicate::children() const { return node_->children; }
size_t Predicate::hash() const { return node_->hash; }

bool operator==(const Predicate& a, const Predicate& b) {
  if (a.node_ == b.node_) return true;
  if (a.hash() != b.hash() || a.kind() != b.kind()) return false;
  if (a.lhs() != b.lhs() || a.rhs() != b.rhs()) return false;
  return a.children() == b.children();
}

absl::StatusOr<bool> Predicate::Evaluate(const Assignment& values) const {
  switch (kind()) {
    case PredKind::kTrue: return true;
    case PredKind::kFalse: return false;
    case PredKind::kAnd:
    case PredKind::kOr: {
      // No short-circuit: an evaluation error anywhere is an error, so the
      // meaning never depends on evaluation order (guards fail closed).
      const bool is_and = kind() == PredKind::kAnd;
      bool result = is_and;
      for (const Predicate& c : children()) {
        absl::StatusOr<bool> v = c.Evaluate(values);
        if (!v.ok()) return v.status();
        result = is_and ? (result && *v) : (result || *v);
      }
      return result;
    }
    case PredKind::kNot: {
      absl::StatusOr<bool> v = children()[0].Evaluate(values);
      if (!v.ok()) return v.status();
      return !*v;
    }
    default: break;
  }
  absl::StatusOr<int64_t> a = lhs().Evaluate(values);
  if (!a.ok()) return a.status();
  if (kind() == PredKind::kDivisible) return FloorModInt(*a, *rhs().AsConst()) == 0;
  absl::StatusOr<int64_t> b = rhs().Evaluate(values);
  if (!b.ok()) return b.status();
  return CompareInts(kind(), *a, *b);
}

Predicate Predicate::Substitute(const absl::flat_hash_map<std::string, SymExpr>& map) const {
  switch (kind()) {
    case PredKind::kTrue:
    case PredKind::kFalse:
      return *this;
    case PredKind::kAnd:
    case PredKind::kOr: {
      std::vector<Predicate> parts;
      for (const Predicate& c : children()) parts.push_back(c.Substitute(map));
      return kind() == PredKind::kAnd ? And(std::move(parts)) : Or(std::move(parts));
    }
    case PredKind::kNot:
      return Not(children()[0].Substitute(map));
    case PredKind::kDivisible:
      return Divisible(lhs().Substitute(map), *rhs().AsConst());
    default:
      return MakeComparison(kind(), lhs().Substitute(map), rhs().Substitute(map));
  }
}

void Predicate::CollectSymbols(absl::btree_set<std::string>* out) const {
  if (IsAtom()) {
    lhs().CollectSymbols(out);
    rhs().CollectSymbols(out);
    return;
  }
  for (const Predicate& c : children()) c.CollectSymbols(out);
}

namespace {

std::string DivisibleText(const Predicate& p, const char* op) {
  SymExpr e = p.lhs();
  std::string lhs = e.kind() == ExprKind::kAdd ? absl::StrCat("(", e.ToString(), ")") : e.ToString();
  return absl::StrCat(lhs, " % ", p.rhs().ToString(), op, "0");
}

}  // namespace

std::string Predicate::ToString() const {
  switch (kind()) {
    case PredKind::kTrue: return "true";
    case PredKind::kFalse: return "false";
    case PredKind::kDivisible: return DivisibleText(*this, " == ");
    case PredKind::kNot: {
      const Predicate& c = children()[0];
      if (c.kind() == PredKind::kDivisible) return DivisibleText(c, " != ");
      return absl::StrCat("!(", c.ToString(), ")");
    }
    case PredKind::kAnd:
    case PredKind::kOr: {
      const bool is_and = kind() == PredKind::kAnd;
      std::vector<std::string> parts;
      for (const Predicate& c : children()) {
        bool paren = is_and && c.kind() == PredKind::kOr;
        parts.push_back(paren ? absl::StrCat("(", c.ToString(), ")") : c.ToString());
      }
      return absl::StrJoin(parts, is_and ? " && " : " || ");
    }
    default:
      return absl::StrCat(lhs().ToString(), OperatorText(kind()), rhs().ToString());
  }
}

Predicate operator&&(Predicate a, Predicate b) { return Predicate::And({std::move(a), std::move(b)}); }
Predicate operator||(Predicate a, Predicate b) { return Predicate::Or({std::move(a), std::move(b)}); }
Predicate operator!(Predicate a) { return Predicate::Not(std::move(a)); }

std::ostream& operator<<(std::ostream& os, const Predicate& p) { return os << p.ToString(); }

}  // namespace shapeshift
