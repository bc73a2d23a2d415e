// SymExpr nodes: interning, structural order, evaluation, substitution and
// printing. Construction with simplification lives in sym_expr_ops.cc; the
// canonical polynomial form in internal/polynomial.cc; parsing in parser.cc.
#include "shapes/sym_expr.h"

#include <array>
#include <limits>
#include <ostream>

#include "absl/container/node_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "shapes/internal/expr_node.h"

namespace shapeshift {

using internal::ExprNode;

namespace {

struct NodeHash {
  size_t operator()(const ExprNode& n) const { return n.hash; }
};

struct NodeEq {
  bool operator()(const ExprNode& a, const ExprNode& b) const {
    return a.kind == b.kind && a.value == b.value && a.canonical == b.canonical &&
           a.name == b.name && a.operands == b.operands;
  }
};

size_t ComputeHash(const ExprNode& n) {
  size_t h = absl::HashOf(static_cast<int>(n.kind), n.value, n.name, n.canonical);
  for (SymExpr op : n.operands) h = absl::HashOf(h, op.node());
  return h;
}

class InternTable {
 public:
  const ExprNode* Intern(ExprNode node) {
    node.hash = ComputeHash(node);
    absl::MutexLock lock(&mu_);
    return &*nodes_.insert(std::move(node)).first;
  }

 private:
  absl::Mutex mu_;
  // node_hash_set: element addresses are stable, so SymExpr can hold them.
  absl::node_hash_set<ExprNode, NodeHash, NodeEq> nodes_ ABSL_GUARDED_BY(mu_);
};

InternTable& Table() {
  static auto* table = new InternTable;  // never destroyed: nodes outlive everything
  return *table;
}

constexpr int64_t kCachedMin = -64;
constexpr int64_t kCachedMax = 1024;

const ExprNode* InternConst(int64_t value) {
  ExprNode n;
  n.kind = ExprKind::kConst;
  n.value = value;
  return Table().Intern(std::move(n));
}

// Small constants are looked up without taking the intern lock.
const ExprNode* CachedConst(int64_t value) {
  static const auto* cache = [] {
    auto* c = new std::array<const ExprNode*, kCachedMax - kCachedMin + 1>;
    for (int64_t v = kCachedMin; v <= kCachedMax; ++v) (*c)[v - kCachedMin] = InternConst(v);
    return c;
  }();
  if (value >= kCachedMin && value <= kCachedMax) return (*cache)[value - kCachedMin];
  return InternConst(value);
}

int Compare(SymExpr a, SymExpr b) {
  if (a == b) return 0;
  const ExprNode* x = a.node();
  const ExprNode* y = b.node();
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->value != y->value) return x->value < y->value ? -1 : 1;
  if (int c = x->name.compare(y->name); c != 0) return c < 0 ? -1 : 1;
  if (x->canonical != y->canonical) return x->canonical ? -1 : 1;
  if (x->operands.size() != y->operands.size()) {
    return x->operands.size() < y->operands.size() ? -1 : 1;
  }
  for (size_t i = 0; i < x->operands.size(); ++i) {
    if (int c = Compare(x->operands[i], y->operands[i]); c != 0) return c;
  }
  return 0;
}

absl::Status OverflowError(const SymExpr& e) {
  return absl::OutOfRangeError(absl::StrCat("int64 overflow evaluating `", e.ToString(), "`"));
}

}  // namespace

SymExpr SymExprFactory::Const(int64_t value) { return SymExpr(CachedConst(value), SymExpr::FromNode{}); }

SymExpr SymExprFactory::Symbol(absl::string_view name) {
  ExprNode n;
  n.kind = ExprKind::kSymbol;
  n.name = std::string(name);
  return SymExpr(Table().Intern(std::move(n)), SymExpr::FromNode{});
}

SymExpr SymExprFactory::Make(ExprKind kind, std::vector<SymExpr> operands, bool canonical) {
  ExprNode n;
  n.kind = kind;
  n.operands = std::move(operands);
  n.canonical = canonical;
  return SymExpr(Table().Intern(std::move(n)), SymExpr::FromNode{});
}

SymExpr::SymExpr() : node_(CachedConst(0)) {}
SymExpr::SymExpr(int64_t constant) : node_(CachedConst(constant)) {}
SymExpr SymExpr::Symbol(absl::string_view name) { return SymExprFactory::Symbol(name); }

ExprKind SymExpr::kind() const { return node_->kind; }

std::optional<int64_t> SymExpr::AsConst() const {
  if (node_->kind != ExprKind::kConst) return std::nullopt;
  return node_->value;
}

const std::string& SymExpr::symbol_name() const { return node_->name; }
absl::Span<const SymExpr> SymExpr::operands() const { return node_->operands; }
size_t SymExpr::hash() const { return node_->hash; }

bool operator<(SymExpr a, SymExpr b) { return Compare(a, b) < 0; }

int64_t FloorDivInt(int64_t a, int64_t b) {
  if (b == -1) return -a;  // a / -1 is the only overflowing case; callers exclude INT64_MIN
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t FloorModInt(int64_t a, int64_t b) {
  if (b == -1) return 0;  // INT64_MIN % -1 traps on x86
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

absl::StatusOr<int64_t> SymExpr::Evaluate(const Assignment& values) const {
  const ExprNode* n = node_;
  switch (n->kind) {
    case ExprKind::kConst:
      return n->value;
    case ExprKind::kSymbol: {
      auto it = values.find(n->name);
      if (it == values.end()) {
        return absl::InvalidArgumentError(absl::StrCat("no value for symbol '", n->name, "'"));
      }
      return it->second;
    }
    case ExprKind::kAdd:
    case ExprKind::kMul: {
      const bool add = n->kind == ExprKind::kAdd;
      int64_t acc = add ? 0 : 1;
      for (SymExpr op : n->operands) {
        absl::StatusOr<int64_t> v = op.Evaluate(values);
        if (!v.ok()) return v.status();
        bool overflow = add ? __builtin_add_overflow(acc, *v, &acc)
                            : __builtin_mul_overflow(acc, *v, &acc);
        if (overflow) return OverflowError(*this);
      }
      return acc;
    }
    default:
      break;
  }
  absl::StatusOr<int64_t> a = n->operands[0].Evaluate(values);
  if (!a.ok()) return a.status();
  absl::StatusOr<int64_t> b = n->operands[1].Evaluate(values);
  if (!b.ok()) return b.status();
  switch (n->kind) {
    case ExprKind::kFloorDiv:
    case ExprKind::kMod:
      if (*b == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("division by zero evaluating `", ToString(), "`"));
      }
      if (n->kind == ExprKind::kMod) return FloorModInt(*a, *b);
      if (*a == std::numeric_limits<int64_t>::min() && *b == -1) return OverflowError(*this);
      return FloorDivInt(*a, *b);
    case ExprKind::kMin:
      return std::min(*a, *b);
    case ExprKind::kMax:
      return std::max(*a, *b);
    default:
      return absl::InternalError("unreachable expression kind");
  }
}

SymExpr SymExpr::Substitute(const absl::flat_hash_map<std::string, SymExpr>& map) const {
  switch (kind()) {
    case ExprKind::kConst:
      return *this;
    case ExprKind::kSymbol: {
      auto it = map.find(node_->name);
      return it == map.end() ? *this : it->second;
    }
    case ExprKind::kAdd: {
      SymExpr sum = 0;
      for (SymExpr op : operands()) sum = sum + op.Substitute(map);
      return sum;
    }
    case ExprKind::kMul: {
      SymExpr product = 1;
      for (SymExpr op : operands()) product = product * op.Substitute(map);
      return product;
    }
    default:
      break;
  }
  SymExpr a = operands()[0].Substitute(map);
  SymExpr b = operands()[1].Substitute(map);
  switch (kind()) {
    case ExprKind::kFloorDiv:
      return FloorDiv(a, b);
    case ExprKind::kMod:
      return Mod(a, b);
    case ExprKind::kMin:
      return Min(a, b);
    default:
      return Max(a, b);
  }
}

void SymExpr::CollectSymbols(absl::btree_set<std::string>* out) const {
  if (IsSymbol()) {
    out->insert(node_->name);
    return;
  }
  for (SymExpr op : operands()) op.CollectSymbols(out);
}

absl::btree_set<std::string> SymExpr::Symbols() const {
  absl::btree_set<std::string> out;
  CollectSymbols(&out);
  return out;
}

std::ostream& operator<<(std::ostream& os, SymExpr e) { return os << e.ToString(); }

}  // namespace shapeshift
