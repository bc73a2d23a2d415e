// Visitor bases for the kernel IR (kernel_ir.h): the one place that
// switches over ValueKind and StmtKind.
//
// Why: the printer, Verify, the LLVM lowering and the CUDA emitter each had
// their own `switch (kind)`, and a kind added to kernel_ir.h had to be found
// in every copy (one with a `default:` would quietly do nothing with it).
// Here each kind is a pure virtual Visit*, dispatched once; adding a kind is
// an edit to this file and a compile error in every concrete visitor until
// it says what the kind means to it (an abstract class cannot be built).
// Passes that only look at one kind (`kind == ValueKind::kVar`) need no
// visitor: an equality test is not a switch copy.
//
// Values are DAGs (kernel_ir.h: a chain of k reuses is 2^k nodes as a
// tree), so nothing here walks a tree:
//  - ValueVisitor<R, Args...>: one node to its typed Visit* (the op already
//    decoded for unary, binary and compare). The caller reaches operands
//    itself, in its own order: the LLVM lowering recurses with a memo, and
//    the order in which it emits operands is part of its output.
//  - ValueFold<R>: a whole value bottom-up, each distinct node once, its
//    Visit* given the operands' results (the printer, the CUDA emitter);
//    FoldDag is the same walk for a fold that needs no dispatch (hashing).
//  - StmtVisitor<R, Args...>: one statement to its Visit*.
// Mutators (rebuilding a DAG with its sharing kept) are kernel_mutator.h.
//
// A kind outside the enums (a corrupted node, or a static_cast) goes to
// VisitInvalid, which aborts unless overridden; the printer and Verify
// override it (Verify rejects such a node, so backends never see one).
#ifndef SHAPESHIFT_CODEGEN_KERNEL_VISITOR_H_
#define SHAPESHIFT_CODEGEN_KERNEL_VISITOR_H_

#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "codegen/kernel_ir.h"

namespace shapeshift::codegen {

namespace internal {
// Prints what was dispatched and aborts: a kind no enumerator names.
[[noreturn]] void AbortOnInvalidKind(const char* what, int kind);
}  // namespace internal

// ---- Values ------------------------------------------------------------------

template <typename R, typename... Args>
class ValueVisitor {
 public:
  virtual ~ValueVisitor() = default;

  R Visit(const ValueNode& v, Args... args) {
    switch (v.kind) {
      case ValueKind::kConst: return VisitConst(v, std::forward<Args>(args)...);
      case ValueKind::kLoad: return VisitLoad(v, std::forward<Args>(args)...);
      case ValueKind::kLoadAt: return VisitLoadAt(v, std::forward<Args>(args)...);
      case ValueKind::kIndex: return VisitIndex(v, std::forward<Args>(args)...);
      case ValueKind::kVar: return VisitVar(v, std::forward<Args>(args)...);
      case ValueKind::kUnary: return VisitUnary(v, static_cast<UnaryOp>(v.op), std::forward<Args>(args)...);
      case ValueKind::kBinary: return VisitBinary(v, static_cast<BinaryOp>(v.op), std::forward<Args>(args)...);
      case ValueKind::kCompare: return VisitCompare(v, static_cast<CompareOp>(v.op), std::forward<Args>(args)...);
      case ValueKind::kSelect: return VisitSelect(v, std::forward<Args>(args)...);
      case ValueKind::kCast: return VisitCast(v, std::forward<Args>(args)...);
    }
    return VisitInvalid(v, std::forward<Args>(args)...);
  }

 protected:
  // The node's fields and operands as kernel_ir.h describes them per kind.
  virtual R VisitConst(const ValueNode& v, Args... args) = 0;   // f_value (f32) or i_value
  virtual R VisitLoad(const ValueNode& v, Args... args) = 0;    // buffer[index]
  virtual R VisitLoadAt(const ValueNode& v, Args... args) = 0;  // buffer[operands[0]]
  virtual R VisitIndex(const ValueNode& v, Args... args) = 0;   // index as i64
  virtual R VisitVar(const ValueNode& v, Args... args) = 0;     // name
  virtual R VisitUnary(const ValueNode& v, UnaryOp op, Args... args) = 0;
  virtual R VisitBinary(const ValueNode& v, BinaryOp op, Args... args) = 0;
  virtual R VisitCompare(const ValueNode& v, CompareOp op, Args... args) = 0;
  virtual R VisitSelect(const ValueNode& v, Args... args) = 0;  // {cond, if_true, if_false}
  virtual R VisitCast(const ValueNode& v, Args... args) = 0;    // operands[0] to `type`
  virtual R VisitInvalid(const ValueNode& v, Args... args) {
    internal::AbortOnInvalidKind("ValueKind", static_cast<int>(v.kind));
  }
};

// fn(node, operand results, readers) for every distinct node of `root`,
// operands first (PostOrder), and the root's result. `readers` counts the
// operand slots of the DAG naming the node (x in `x * x`: 2; the root: 0).
// A null operand's result is `null_result`. An operand with one reader has
// its result moved into the span (string results stay linear: a chain is
// never copied level by level); one read more often is copied.
template <typename R, typename Fn>
R FoldDag(const Value& root, const R& null_result, Fn&& fn) {
  if (!root) return null_result;
  std::vector<const Value*> order = PostOrder(root);
  absl::flat_hash_map<const ValueNode*, int> readers;
  for (const Value* v : order) {
    for (const Value& o : (*v)->operands) {
      if (o) ++readers[o.get()];
    }
  }
  absl::flat_hash_map<const ValueNode*, R> result;
  result.reserve(order.size());
  std::vector<R> operands;
  for (const Value* node : order) {
    const ValueNode& v = **node;
    operands.clear();
    for (const Value& o : v.operands) {
      if (!o) {
        operands.push_back(null_result);
        continue;
      }
      R& r = result.find(o.get())->second;
      if (readers[o.get()] > 1) {
        operands.push_back(r);
      } else {
        operands.push_back(std::move(r));
      }
    }
    auto found = readers.find(&v);
    R r = fn(v, absl::MakeSpan(operands), found == readers.end() ? 0 : found->second);
    result.insert_or_assign(&v, std::move(r));
  }
  return std::move(result.find(root.get())->second);
}

// A bottom-up fold with the kind dispatch: Visit*(node, operand results).
// The spans are the operands' results in order (moved in where a node has
// one reader, so a visitor may move out of them); a node with fewer
// operands than its kind needs gets a shorter span (Verify refuses it; the
// printer prints it for Verify's messages).
template <typename R>
class ValueFold : public ValueVisitor<R, absl::Span<R>> {
 public:
  // The root's result (NullOperand() for a null root).
  R Fold(const Value& root) {
    return FoldDag<R>(root, NullOperand(), [this](const ValueNode& v, absl::Span<R> operands, int readers) {
      return AfterNode(v, this->Visit(v, operands), readers);
    });
  }

 protected:
  // Stands for a null operand.
  virtual R NullOperand() = 0;
  // Sees each node's result before its readers do; `readers` as in FoldDag.
  // The printer and the CUDA emitter name shared nodes here.
  virtual R AfterNode(const ValueNode& v, R result, int readers) { return result; }
};

// ---- Statements --------------------------------------------------------------

template <typename R, typename... Args>
class StmtVisitor {
 public:
  virtual ~StmtVisitor() = default;

  R Visit(const Stmt& s, Args... args) {
    switch (s.kind) {
      case StmtKind::kLoop: return VisitLoop(s, std::forward<Args>(args)...);
      case StmtKind::kStore: return VisitStore(s, std::forward<Args>(args)...);
      case StmtKind::kStoreAt: return VisitStoreAt(s, std::forward<Args>(args)...);
      case StmtKind::kLet: return VisitLet(s, std::forward<Args>(args)...);
      case StmtKind::kAccumulator: return VisitAccumulator(s, std::forward<Args>(args)...);
      case StmtKind::kAccumulate: return VisitAccumulate(s, std::forward<Args>(args)...);
    }
    return VisitInvalid(s, std::forward<Args>(args)...);
  }

 protected:
  virtual R VisitLoop(const Stmt& s, Args... args) = 0;         // name in [begin, end): body
  virtual R VisitStore(const Stmt& s, Args... args) = 0;        // buffer[index] = value
  virtual R VisitStoreAt(const Stmt& s, Args... args) = 0;      // buffer[at] = value
  virtual R VisitLet(const Stmt& s, Args... args) = 0;          // name = value
  virtual R VisitAccumulator(const Stmt& s, Args... args) = 0;  // acc name = value
  virtual R VisitAccumulate(const Stmt& s, Args... args) = 0;   // name = reduce(name, value)
  virtual R VisitInvalid(const Stmt& s, Args... args) {
    internal::AbortOnInvalidKind("StmtKind", static_cast<int>(s.kind));
  }
};

}  // namespace shapeshift::codegen

#endif  // SHAPESHIFT_CODEGEN_KERNEL_VISITOR_H_
