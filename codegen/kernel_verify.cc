// Verify(): the kernel IR's well-formedness rules (see kernel_ir.h). Backends
// lower only verified kernels, so they can assume types agree and every name
// resolves.
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "codegen/kernel_ir.h"
#include "codegen/kernel_print.h"
#include "codegen/kernel_visitor.h"

namespace shapeshift::codegen {
namespace {

struct Binding {
  ScalarType type;
  bool is_accumulator;
};

bool IsMathOnly(UnaryOp op) { return op != UnaryOp::kNeg && op != UnaryOp::kAbs; }

using ValueCheck = ValueVisitor<absl::Status, const Stmt&, const Value&>;
using StmtCheck = StmtVisitor<absl::Status, std::vector<std::string>*>;

class Verifier : private ValueCheck, private StmtCheck {
 public:
  explicit Verifier(const Kernel& kernel) : kernel_(kernel) {}

  absl::Status Run() {
    absl::flat_hash_set<std::string> seen_dims;
    for (const std::string& d : kernel_.dims) {
      if (!seen_dims.insert(d).second) return Error(absl::StrCat("dimension '", d, "' declared twice"));
      symbols_.insert(d);
    }
    if (auto s = CheckIndex(kernel_.parallel_extent, "parallel extent"); !s.ok()) return s;
    if (!symbols_.insert(kernel_.parallel_var).second) {
      return Error(absl::StrCat("parallel variable '", kernel_.parallel_var, "' clashes with a dimension"));
    }
    return CheckBlock(kernel_.body);
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("kernel '", kernel_.name, "': ", what));
  }
  absl::Status StmtError(const Stmt& s, absl::string_view what) const {
    return Error(absl::StrCat("in `", PrintStmtLine(kernel_, s), "`: ", what));
  }

  absl::Status CheckIndex(SymExpr e, absl::string_view where) const {
    for (const std::string& sym : e.Symbols()) {
      if (!symbols_.contains(sym)) {
        return Error(absl::StrCat(where, " `", e.ToString(), "` uses '", sym,
                                  "', which is neither a dimension nor an enclosing loop variable"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckName(const Stmt& s) const {
    if (s.name.empty()) return StmtError(s, "empty name");
    if (symbols_.contains(s.name) || bindings_.contains(s.name)) {
      return StmtError(s, absl::StrCat("name '", s.name, "' is already in scope"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckBuffer(const Stmt& s, int buffer) const {
    if (buffer < 0 || buffer >= static_cast<int>(kernel_.buffers.size())) {
      return StmtError(s, absl::StrCat("buffer #", buffer, " does not exist"));
    }
    return absl::OkStatus();
  }

  // Checks every node of `v` (once each: a value is a DAG, kernel_ir.h),
  // operands first; `s` is the statement it belongs to, for messages.
  absl::Status CheckValue(const Stmt& s, const Value& v) {
    if (!v) return StmtError(s, "missing value");
    for (const Value* node : PostOrder(v)) {
      if (absl::Status st = CheckNode(s, *node); !st.ok()) return st;
    }
    return absl::OkStatus();
  }

  // ---- One node (its operands already checked) -----------------------------
  // Each check: the kind's own fields, then its operand count, then the
  // operands' types.

  absl::Status CheckNode(const Stmt& s, const Value& v) { return ValueCheck::Visit(*v, s, v); }

  absl::Status Bad(const Stmt& s, const Value& v, absl::string_view why) const {
    return StmtError(s, absl::StrCat("`", PrintValue(kernel_, v), "`: ", why));
  }

  absl::Status CheckArity(const Stmt& s, const Value& v, size_t expected) const {
    if (v->operands.size() != expected) return Bad(s, v, "wrong number of operands");
    for (const Value& o : v->operands) {
      if (!o) return Bad(s, v, "missing operand");
    }
    return absl::OkStatus();
  }

  absl::Status CheckLoadBuffer(const Stmt& s, const Value& v) const {
    if (v->buffer < 0 || v->buffer >= static_cast<int>(kernel_.buffers.size())) {
      return Bad(s, v, "loads from a buffer that does not exist");
    }
    if (kernel_.buffers[v->buffer].dtype != v->type) return Bad(s, v, "type differs from the buffer's");
    return absl::OkStatus();
  }

  absl::Status VisitConst(const ValueNode& n, const Stmt& s, const Value& v) override { return CheckArity(s, v, 0); }

  absl::Status VisitLoad(const ValueNode& n, const Stmt& s, const Value& v) override {
    if (auto st = CheckLoadBuffer(s, v); !st.ok()) return st;
    if (auto st = CheckIndex(n.index, "load index"); !st.ok()) return st;
    return CheckArity(s, v, 0);
  }

  absl::Status VisitLoadAt(const ValueNode& n, const Stmt& s, const Value& v) override {
    if (auto st = CheckLoadBuffer(s, v); !st.ok()) return st;
    if (kernel_.buffers[n.buffer].role != BufferRole::kInput) {
      return Bad(s, v, "a data-indexed load reads an input buffer (no other iteration writes it)");
    }
    if (auto st = CheckArity(s, v, 1); !st.ok()) return st;
    if (n.operands[0]->type != ScalarType::kI64) return Bad(s, v, "a data-dependent index is i64");
    return absl::OkStatus();
  }

  absl::Status VisitIndex(const ValueNode& n, const Stmt& s, const Value& v) override {
    if (n.type != ScalarType::kI64) return Bad(s, v, "an index value is i64");
    if (auto st = CheckIndex(n.index, "index value"); !st.ok()) return st;
    return CheckArity(s, v, 0);
  }

  absl::Status VisitVar(const ValueNode& n, const Stmt& s, const Value& v) override {
    auto it = bindings_.find(n.name);
    if (it == bindings_.end()) return Bad(s, v, absl::StrCat("'", n.name, "' is not in scope"));
    if (it->second.type != n.type) return Bad(s, v, "type differs from the binding's");
    return CheckArity(s, v, 0);
  }

  absl::Status VisitUnary(const ValueNode& n, UnaryOp op, const Stmt& s, const Value& v) override {
    if (auto st = CheckArity(s, v, 1); !st.ok()) return st;
    if (n.type != n.operands[0]->type) return Bad(s, v, "result type differs from the operand's");
    if (IsMathOnly(op) && n.type != ScalarType::kF32) return Bad(s, v, "math functions take f32");
    if (n.type == ScalarType::kBool) return Bad(s, v, "arithmetic on bool");
    return absl::OkStatus();
  }

  absl::Status VisitBinary(const ValueNode& n, BinaryOp op, const Stmt& s, const Value& v) override {
    if (auto st = CheckArity(s, v, 2); !st.ok()) return st;
    const auto& ops = n.operands;
    if (ops[0]->type != ops[1]->type || n.type != ops[0]->type) return Bad(s, v, "operand types differ");
    if (n.type == ScalarType::kBool) return Bad(s, v, "arithmetic on bool");
    return absl::OkStatus();
  }

  absl::Status VisitCompare(const ValueNode& n, CompareOp op, const Stmt& s, const Value& v) override {
    if (auto st = CheckArity(s, v, 2); !st.ok()) return st;
    const auto& ops = n.operands;
    if (ops[0]->type != ops[1]->type) return Bad(s, v, "operand types differ");
    if (ops[0]->type == ScalarType::kBool && op != CompareOp::kEq && op != CompareOp::kNe) {
      return Bad(s, v, "bool values are only compared with == and !=");
    }
    return absl::OkStatus();
  }

  absl::Status VisitSelect(const ValueNode& n, const Stmt& s, const Value& v) override {
    if (auto st = CheckArity(s, v, 3); !st.ok()) return st;
    const auto& ops = n.operands;
    if (ops[0]->type != ScalarType::kBool) return Bad(s, v, "the condition must be bool");
    if (ops[1]->type != ops[2]->type || n.type != ops[1]->type) return Bad(s, v, "branch types differ");
    return absl::OkStatus();
  }

  absl::Status VisitCast(const ValueNode& n, const Stmt& s, const Value& v) override { return CheckArity(s, v, 1); }

  absl::Status VisitInvalid(const ValueNode& n, const Stmt& s, const Value& v) override {
    return Bad(s, v, absl::StrCat("unknown value kind ", static_cast<int>(n.kind)));
  }

  // ---- Statements ------------------------------------------------------------

  absl::Status CheckBlock(const std::vector<Stmt>& body) {
    std::vector<std::string> declared;  // popped when the block ends
    absl::Status status = absl::OkStatus();
    for (const Stmt& s : body) {
      status = StmtCheck::Visit(s, &declared);
      if (!status.ok()) break;
    }
    for (const std::string& name : declared) bindings_.erase(name);
    return status;
  }

  absl::Status CheckStore(const Stmt& s) const {
    if (auto st = CheckBuffer(s, s.buffer); !st.ok()) return st;
    const BufferParam& b = kernel_.buffers[s.buffer];
    if (b.role != BufferRole::kOutput) return StmtError(s, absl::StrCat("'", b.name, "' is an input"));
    return absl::OkStatus();
  }

  absl::Status CheckStoredValue(const Stmt& s) {
    if (auto st = CheckValue(s, s.value); !st.ok()) return st;
    const BufferParam& b = kernel_.buffers[s.buffer];
    if (s.value->type != b.dtype) {
      return StmtError(s, absl::StrCat("stores ", ScalarTypeName(s.value->type), " into ", ScalarTypeName(b.dtype),
                                       " buffer '", b.name, "'"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckBinding(const Stmt& s, std::vector<std::string>* declared, bool is_acc) {
    if (auto st = CheckName(s); !st.ok()) return st;
    if (auto st = CheckValue(s, s.value); !st.ok()) return st;
    if (is_acc && s.value->type == ScalarType::kBool) return StmtError(s, "bool accumulator");
    bindings_[s.name] = Binding{s.value->type, is_acc};
    declared->push_back(s.name);
    return absl::OkStatus();
  }

  absl::Status VisitLoop(const Stmt& s, std::vector<std::string>*) override {
    if (auto st = CheckName(s); !st.ok()) return st;
    if (auto st = CheckIndex(s.begin, "loop bound"); !st.ok()) return st;
    if (auto st = CheckIndex(s.end, "loop bound"); !st.ok()) return st;
    symbols_.insert(s.name);
    absl::Status st = CheckBlock(s.body);
    symbols_.erase(s.name);
    return st;
  }

  absl::Status VisitStore(const Stmt& s, std::vector<std::string>*) override {
    if (auto st = CheckStore(s); !st.ok()) return st;
    if (auto st = CheckIndex(s.index, "store index"); !st.ok()) return st;
    return CheckStoredValue(s);
  }

  absl::Status VisitStoreAt(const Stmt& s, std::vector<std::string>*) override {
    if (auto st = CheckStore(s); !st.ok()) return st;
    if (!s.at) return StmtError(s, "missing index");
    if (auto st = CheckValue(s, s.at); !st.ok()) return st;
    if (s.at->type != ScalarType::kI64) return StmtError(s, "a data-dependent store index is i64");
    return CheckStoredValue(s);
  }

  absl::Status VisitLet(const Stmt& s, std::vector<std::string>* declared) override {
    return CheckBinding(s, declared, /*is_acc=*/false);
  }

  absl::Status VisitAccumulator(const Stmt& s, std::vector<std::string>* declared) override {
    return CheckBinding(s, declared, /*is_acc=*/true);
  }

  absl::Status VisitAccumulate(const Stmt& s, std::vector<std::string>*) override {
    auto it = bindings_.find(s.name);
    if (it == bindings_.end() || !it->second.is_accumulator) {
      return StmtError(s, absl::StrCat("'", s.name, "' is not an accumulator in scope"));
    }
    if (auto st = CheckValue(s, s.value); !st.ok()) return st;
    if (s.value->type != it->second.type) return StmtError(s, "type differs from the accumulator's");
    return absl::OkStatus();
  }

  absl::Status VisitInvalid(const Stmt& s, std::vector<std::string>*) override {
    return StmtError(s, "unknown statement kind");
  }

  const Kernel& kernel_;
  absl::flat_hash_set<std::string> symbols_;  // dims and loop variables in scope
  absl::flat_hash_map<std::string, Binding> bindings_;
};

}  // namespace

absl::Status Verify(const Kernel& kernel) { return Verifier(kernel).Run(); }

}  // namespace shapeshift::codegen
