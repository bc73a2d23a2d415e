// SymExpr nodes: interning, structural order, evaluation, substitution and
// printing. Construction with simplification lives in sym_expr_ops.cc; the
// canonical polynomial form in internal/polynomial.cc; parsing in parser.cc.
#include "shapes/sym_expr.h"

#include <array>
#include <limits>
#include <ostream>

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "shapes/internal/expr_node.h"

namespace shapeshift {

using internal::ExprNode;

namespace {

size_t ComputeHash(const ExprNode& n) {
  size_t h = absl::HashOf(static_cast<int>(n.kind), n.value, n.name, n.canonical);
  for (const SymExpr& op : n.operands) h = absl::HashOf(h, op.node());
  return h;
}

// Far above kMaxSymExprTreeSize, far below overflow.
constexpr int64_t kTreeSizeSaturation = int64_t{1} << 60;

struct NodePtrHash {
  size_t operator()(const ExprNode* n) const { return n->hash; }
};

struct NodePtrEq {
  bool operator()(const ExprNode* a, const ExprNode* b) const {
    return a->kind == b->kind && a->value == b->value && a->canonical == b->canonical && a->name == b->name &&
           a->operands == b->operands;
  }
};

// The intern table: sharded by hash so that threads building expressions
// at once rarely wait for each other. A node is in its shard exactly while
// its count is positive: lookups revive a node only under the shard's lock,
// and the last reference is dropped under it (SymExpr::ReleaseLast).
class InternTable {
 public:
  static constexpr size_t kShards = 16;

  const ExprNode* Intern(ExprNode& candidate) {
    candidate.hash = ComputeHash(candidate);
    candidate.depth = 1;
    candidate.tree_size = 1;
    for (const SymExpr& op : candidate.operands) {
      candidate.depth = std::max(candidate.depth, op.depth() + 1);
      candidate.tree_size = std::min(candidate.tree_size + op.tree_size(), kTreeSizeSaturation);
    }
    Shard& shard = ShardOf(candidate.hash);
    absl::MutexLock lock(&shard.mu);
    if (auto it = shard.nodes.find(&candidate); it != shard.nodes.end()) {
      (*it)->refs.fetch_add(1, std::memory_order_relaxed);  // live (count >= 1) while in the table
      return *it;
    }
    ExprNode* node = new ExprNode(std::move(candidate));
    shard.nodes.insert(node);
    return node;
  }

  // Drops one reference to each node in `work` (and, for every node that
  // dies, to its operands), iteratively: a deep expression frees in a loop.
  void DropReferences(std::vector<const ExprNode*> work) {
    while (!work.empty()) {
      const ExprNode* n = work.back();
      work.pop_back();
      {
        Shard& shard = ShardOf(n->hash);
        absl::MutexLock lock(&shard.mu);
        if (n->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
        shard.nodes.erase(const_cast<ExprNode*>(n));
      }
      // Unreachable now: its operand references pass to `work`.
      auto* dead = const_cast<ExprNode*>(n);
      for (SymExpr& op : dead->operands) {
        const ExprNode* child = SymExprFactory::Steal(op);
        if (!child->immortal && !SymExprFactory::DropIfNotLast(child)) work.push_back(child);
      }
      delete dead;
    }
  }

  size_t size() {
    size_t total = 0;
    for (Shard& shard : shards_) {
      absl::MutexLock lock(&shard.mu);
      total += shard.nodes.size();
    }
    return total;
  }

 private:
  struct Shard {
    absl::Mutex mu;
    absl::flat_hash_set<ExprNode*, NodePtrHash, NodePtrEq> nodes ABSL_GUARDED_BY(mu);
  };
  Shard& ShardOf(size_t hash) { return shards_[(hash >> 7) % kShards]; }

  std::array<Shard, kShards> shards_;
};

InternTable& Table() {
  static auto* table = new InternTable;  // never destroyed: static SymExprs release into it at exit
  return *table;
}

constexpr int64_t kCachedMin = -64;
constexpr int64_t kCachedMax = 1024;

const ExprNode* InternConst(int64_t value) {
  ExprNode n;
  n.kind = ExprKind::kConst;
  n.value = value;
  return Table().Intern(n);
}

// Small constants are looked up without taking the intern lock, and are
// immortal: the most shared nodes never bounce a count between threads.
const ExprNode* CachedConst(int64_t value) {
  static const auto* cache = [] {
    auto* c = new std::array<const ExprNode*, kCachedMax - kCachedMin + 1>;
    for (int64_t v = kCachedMin; v <= kCachedMax; ++v) {
      const ExprNode* node = InternConst(v);
      const_cast<ExprNode*>(node)->immortal = true;
      (*c)[v - kCachedMin] = node;
    }
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
  return SymExpr(Table().Intern(n), SymExpr::FromNode{});
}

SymExpr SymExprFactory::Make(ExprKind kind, std::vector<SymExpr> operands, bool canonical) {
  ExprNode n;
  n.kind = kind;
  n.operands = std::move(operands);
  n.canonical = canonical;
  // When `n` is found already interned, its operand references are dropped
  // here, after the table's lock is released.
  return SymExpr(Table().Intern(n), SymExpr::FromNode{});
}

const ExprNode* SymExprFactory::Steal(SymExpr& e) {
  const ExprNode* node = e.node();
  e.node_ = SymExpr::ZeroNode();
  return node;
}

bool SymExprFactory::DropIfNotLast(const ExprNode* node) {
  int64_t refs = node->refs.load(std::memory_order_relaxed);
  while (refs > 1) {
    if (node->refs.compare_exchange_weak(refs, refs - 1, std::memory_order_release, std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

SymExpr::SymExpr() : node_(CachedConst(0)) {}
SymExpr::SymExpr(int64_t constant) : node_(CachedConst(constant)) {}
SymExpr SymExpr::Symbol(absl::string_view name) { return SymExprFactory::Symbol(name); }

const internal::ExprRefCount* SymExpr::ZeroNode() {
  static const ExprNode* zero = CachedConst(0);
  return zero;
}

void SymExpr::ReleaseLast(const internal::ExprRefCount* c) {
  Table().DropReferences({static_cast<const ExprNode*>(c)});
}

size_t LiveSymExprCount() {
  CachedConst(0);  // the immortal constants count from the start
  return Table().size();
}

const ExprNode* SymExpr::node() const { return static_cast<const ExprNode*>(node_); }
int64_t SymExpr::depth() const { return node()->depth; }
int64_t SymExpr::tree_size() const { return node()->tree_size; }

ExprKind SymExpr::kind() const { return node()->kind; }

std::optional<int64_t> SymExpr::AsConst() const {
  if (node()->kind != ExprKind::kConst) return std::nullopt;
  return node()->value;
}

const std::string& SymExpr::symbol_name() const { return node()->name; }
absl::Span<const SymExpr> SymExpr::operands() const { return node()->operands; }
size_t SymExpr::hash() const { return node()->hash; }

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
  const ExprNode* n = node();
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
      for (const SymExpr& op : n->operands) {
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
      auto it = map.find(node()->name);
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
    out->insert(node()->name);
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
