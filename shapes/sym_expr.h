// SymExpr: immutable, hash-consed integer expressions over named symbols.
//
// Every shape dimension, buffer size and loop bound in shapeshift is a SymExpr.
// Expressions are interned: two structurally equal expressions are the same
// object, so equality and hashing are pointer operations, and passes can use
// SymExprs as map keys freely.
//
// Canonical form. Sums of products with integer coefficients are kept in one
// canonical form (terms sorted, like terms merged, zero terms dropped,
// constants folded), so equal polynomials are the same object:
// `2*s0 + s1 - s0` is `s0 + s1`. FloorDiv, Mod, Min and Max are opaque atoms
// inside that polynomial, with local simplifications (constant folding,
// `x floordiv 1`, `(k*x) mod k`, ...).
//
// Division semantics (the single definition every consumer shares — the
// evaluator, range analysis, the Z3 bridge, the guard evaluator and generated
// code): FloorDiv rounds toward negative infinity and Mod has the sign of the
// divisor, so that  a == b * FloorDiv(a, b) + Mod(a, b)  for every b != 0.
// Examples: FloorDiv(-7, 2) == -4, Mod(-7, 2) == 1, Mod(7, -2) == -1.
// Division by zero is an evaluation error, never undefined behaviour; so is
// int64 overflow (checked with __builtin_*_overflow). A `+`/`*` whose folded
// coefficients would overflow is kept unexpanded and fails evaluation.
//
// Interning is thread-safe: expressions may be built on several threads.
//
// Lifetime. Nodes are reference counted: a SymExpr is one pointer whose
// copies adjust an atomic count, and a node leaves the intern table when its
// last SymExpr goes (freeing is iterative, however deep the expression). So
// a long-running process that compiles many shapes (the static policy
// specializes on every length) holds only the expressions its live graphs,
// programs and caches still use; LiveSymExprCount() says how many. Small
// constants (-64..1024) are immortal and cost no atomic operation to copy.
//
// Size limits. Every node knows its depth and its size as a tree (shared
// subexpressions counted each time they occur). The printer, the evaluator,
// the analyses and the Z3 translation recurse over operands and walk trees,
// so the doors that build expressions from untrusted input keep them within
// kMaxSymExprDepth and kMaxSymExprTreeSize (shape inference refuses a dim
// beyond them naming the node, and forgets a shape value beyond them; the
// parser bounds nesting).
#ifndef SHAPESHIFT_SHAPES_SYM_EXPR_H_
#define SHAPESHIFT_SHAPES_SYM_EXPR_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace shapeshift {

enum class ExprKind {
  kConst,
  kSymbol,
  kAdd,       // sum of terms; canonical (see above)
  kMul,       // product of factors; the constant coefficient, if any, first
  kFloorDiv,  // operands: {numerator, denominator}
  kMod,       // operands: {numerator, denominator}
  kMin,       // operands: {a, b}
  kMax,       // operands: {a, b}
};

// A concrete value for every symbol an expression mentions.
using Assignment = absl::flat_hash_map<std::string, int64_t>;

// See "Size limits" above. Real models' shape expressions are a few levels
// deep and a few dozen nodes large.
inline constexpr int64_t kMaxSymExprDepth = 256;
inline constexpr int64_t kMaxSymExprTreeSize = 1 << 16;

namespace internal {
// The reference count every interned node starts with; the rest of the
// node is in internal/expr_node.h. Inline here so SymExpr copies are cheap.
struct ExprRefCount {
  mutable std::atomic<int64_t> refs{1};
  bool immortal = false;  // the small-constant cache: never counted, never freed
};
struct ExprNode;
}  // namespace internal

class SymExpr {
 public:
  SymExpr();                   // the constant 0
  SymExpr(int64_t constant);   // NOLINT(google-explicit-constructor): dims read as numbers
  static SymExpr Symbol(absl::string_view name);

  SymExpr(const SymExpr& other) noexcept : node_(other.node_) { Retain(node_); }
  // A moved-from SymExpr is the constant 0.
  SymExpr(SymExpr&& other) noexcept : node_(other.node_) { other.node_ = ZeroNode(); }
  SymExpr& operator=(const SymExpr& other) noexcept {
    Retain(other.node_);
    Release(node_);
    node_ = other.node_;
    return *this;
  }
  SymExpr& operator=(SymExpr&& other) noexcept {
    std::swap(node_, other.node_);
    return *this;
  }
  ~SymExpr() { Release(node_); }

  ExprKind kind() const;
  bool IsConst() const { return kind() == ExprKind::kConst; }
  bool IsSymbol() const { return kind() == ExprKind::kSymbol; }
  std::optional<int64_t> AsConst() const;  // value when kind() == kConst
  const std::string& symbol_name() const;  // requires IsSymbol()
  absl::Span<const SymExpr> operands() const;
  size_t hash() const;
  // 1 for a constant or symbol, else 1 + the deepest operand's depth.
  int64_t depth() const;
  // Nodes in the expression as a tree (a subexpression counted every time
  // it occurs); saturates far above kMaxSymExprTreeSize.
  int64_t tree_size() const;

  // Interned: equality is identity.
  friend bool operator==(SymExpr a, SymExpr b) { return a.node_ == b.node_; }
  friend bool operator!=(SymExpr a, SymExpr b) { return a.node_ != b.node_; }
  template <typename H>
  friend H AbslHashValue(H h, SymExpr e) {
    return H::combine(std::move(h), e.node_);
  }
  // A total order that is stable across runs (structural, not by address).
  friend bool operator<(SymExpr a, SymExpr b);

  friend SymExpr operator+(SymExpr a, SymExpr b);
  friend SymExpr operator-(SymExpr a, SymExpr b);
  friend SymExpr operator*(SymExpr a, SymExpr b);
  friend SymExpr operator-(SymExpr a);
  SymExpr& operator+=(SymExpr b) { return *this = *this + b; }
  SymExpr& operator*=(SymExpr b) { return *this = *this * b; }

  // Value under `values`; an error names a missing symbol or a division by 0.
  absl::StatusOr<int64_t> Evaluate(const Assignment& values) const;
  // Replaces symbols by expressions (result re-canonicalized).
  SymExpr Substitute(const absl::flat_hash_map<std::string, SymExpr>& map) const;
  // Readable text in the parser's syntax: `2*seq + 1`, `(seq + 15) // 16`,
  // `seq % 16`, `min(seq, 128)`, `max(a, b)`.
  std::string ToString() const;
  void CollectSymbols(absl::btree_set<std::string>* out) const;
  absl::btree_set<std::string> Symbols() const;

  // The interned node; defined in internal/expr_node.h (shapes/ only).
  const internal::ExprNode* node() const;

 private:
  // Tagged so that `SymExpr(0)` (0 is also a null pointer constant) picks
  // the int64_t constructor unambiguously. Adopts one reference.
  struct FromNode {};
  SymExpr(const internal::ExprNode* node, FromNode);  // internal/expr_node.h
  friend struct internal::ExprNode;
  friend class SymExprFactory;

  static void Retain(const internal::ExprRefCount* c) {
    if (!c->immortal) c->refs.fetch_add(1, std::memory_order_relaxed);
  }
  static void Release(const internal::ExprRefCount* c) {
    if (c->immortal) return;
    // Dropping a reference that is not the last needs no lock; the last one
    // is dropped under the intern table's lock (ReleaseLast), so that no
    // lookup can revive a node being freed.
    int64_t refs = c->refs.load(std::memory_order_relaxed);
    while (refs > 1) {
      if (c->refs.compare_exchange_weak(refs, refs - 1, std::memory_order_release, std::memory_order_relaxed)) {
        return;
      }
    }
    ReleaseLast(c);
  }
  static void ReleaseLast(const internal::ExprRefCount* c);
  static const internal::ExprRefCount* ZeroNode();

  const internal::ExprRefCount* node_;
};

// Distinct expressions alive in the process (the intern table's size,
// immortal small constants included): what tests and monitoring watch to
// see that the table stays bounded.
size_t LiveSymExprCount();

SymExpr FloorDiv(SymExpr a, SymExpr b);
SymExpr Mod(SymExpr a, SymExpr b);
SymExpr Min(SymExpr a, SymExpr b);
SymExpr Max(SymExpr a, SymExpr b);
// ceil(a / b) for b > 0, expressed with FloorDiv.
SymExpr CeilDiv(SymExpr a, SymExpr b);

// Floor-semantics helpers on plain integers (the one definition; see top).
// Both require b != 0.
int64_t FloorDivInt(int64_t a, int64_t b);
int64_t FloorModInt(int64_t a, int64_t b);

// Parses the text form printed by ToString: integers, identifiers, + - * // %
// (floor division and modulo), unary minus, parentheses, min(a, b), max(a, b).
absl::StatusOr<SymExpr> ParseSymExpr(absl::string_view text);

std::ostream& operator<<(std::ostream& os, SymExpr e);

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_SYM_EXPR_H_
