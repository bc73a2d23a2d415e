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

namespace shapeshift::codegen {
namespace {

struct Binding {
  ScalarType type;
  bool is_accumulator;
};

bool IsMathOnly(UnaryOp op) { return op != UnaryOp::kNeg && op != UnaryOp::kAbs; }

class Verifier {
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
  absl::Status CheckValue(const Stmt& s, const Value& v) const {
    if (!v) return StmtError(s, "missing value");
    for (const Value* node : PostOrder(v)) {
      if (absl::Status st = CheckNode(s, *node); !st.ok()) return st;
    }
    return absl::OkStatus();
  }

  // Checks one node; its operands are already checked.
  absl::Status CheckNode(const Stmt& s, const Value& v) const {
    auto bad = [&](absl::string_view why) {
      return StmtError(s, absl::StrCat("`", PrintValue(kernel_, v), "`: ", why));
    };
    size_t expected_operands = 0;
    switch (v->kind) {
      case ValueKind::kConst: break;
      case ValueKind::kLoad:
        if (v->buffer < 0 || v->buffer >= static_cast<int>(kernel_.buffers.size())) {
          return bad("loads from a buffer that does not exist");
        }
        if (kernel_.buffers[v->buffer].dtype != v->type) return bad("type differs from the buffer's");
        if (auto st = CheckIndex(v->index, "load index"); !st.ok()) return st;
        break;
      case ValueKind::kLoadAt:
        if (v->buffer < 0 || v->buffer >= static_cast<int>(kernel_.buffers.size())) {
          return bad("loads from a buffer that does not exist");
        }
        if (kernel_.buffers[v->buffer].dtype != v->type) return bad("type differs from the buffer's");
        if (kernel_.buffers[v->buffer].role != BufferRole::kInput) {
          return bad("a data-indexed load reads an input buffer (no other iteration writes it)");
        }
        expected_operands = 1;
        break;
      case ValueKind::kIndex:
        if (v->type != ScalarType::kI64) return bad("an index value is i64");
        if (auto st = CheckIndex(v->index, "index value"); !st.ok()) return st;
        break;
      case ValueKind::kVar: {
        auto it = bindings_.find(v->name);
        if (it == bindings_.end()) return bad(absl::StrCat("'", v->name, "' is not in scope"));
        if (it->second.type != v->type) return bad("type differs from the binding's");
        break;
      }
      case ValueKind::kUnary: expected_operands = 1; break;
      case ValueKind::kBinary: expected_operands = 2; break;
      case ValueKind::kCompare: expected_operands = 2; break;
      case ValueKind::kSelect: expected_operands = 3; break;
      case ValueKind::kCast: expected_operands = 1; break;
    }
    if (v->operands.size() != expected_operands) return bad("wrong number of operands");
    for (const Value& o : v->operands) {
      if (!o) return bad("missing operand");
    }
    const auto& ops = v->operands;
    switch (v->kind) {
      case ValueKind::kUnary: {
        auto op = static_cast<UnaryOp>(v->op);
        if (v->type != ops[0]->type) return bad("result type differs from the operand's");
        if (IsMathOnly(op) && v->type != ScalarType::kF32) return bad("math functions take f32");
        if (v->type == ScalarType::kBool) return bad("arithmetic on bool");
        break;
      }
      case ValueKind::kBinary:
        if (ops[0]->type != ops[1]->type || v->type != ops[0]->type) return bad("operand types differ");
        if (v->type == ScalarType::kBool) return bad("arithmetic on bool");
        break;
      case ValueKind::kCompare: {
        auto op = static_cast<CompareOp>(v->op);
        if (ops[0]->type != ops[1]->type) return bad("operand types differ");
        if (ops[0]->type == ScalarType::kBool && op != CompareOp::kEq && op != CompareOp::kNe) {
          return bad("bool values are only compared with == and !=");
        }
        break;
      }
      case ValueKind::kLoadAt:
        if (ops[0]->type != ScalarType::kI64) return bad("a data-dependent index is i64");
        break;
      case ValueKind::kSelect:
        if (ops[0]->type != ScalarType::kBool) return bad("the condition must be bool");
        if (ops[1]->type != ops[2]->type || v->type != ops[1]->type) return bad("branch types differ");
        break;
      default: break;
    }
    return absl::OkStatus();
  }

  absl::Status CheckBlock(const std::vector<Stmt>& body) {
    std::vector<std::string> declared;  // popped when the block ends
    absl::Status status = absl::OkStatus();
    for (const Stmt& s : body) {
      status = CheckStmt(s, &declared);
      if (!status.ok()) break;
    }
    for (const std::string& name : declared) bindings_.erase(name);
    return status;
  }

  absl::Status CheckStmt(const Stmt& s, std::vector<std::string>* declared) {
    switch (s.kind) {
      case StmtKind::kLoop: {
        if (auto st = CheckName(s); !st.ok()) return st;
        if (auto st = CheckIndex(s.begin, "loop bound"); !st.ok()) return st;
        if (auto st = CheckIndex(s.end, "loop bound"); !st.ok()) return st;
        symbols_.insert(s.name);
        absl::Status st = CheckBlock(s.body);
        symbols_.erase(s.name);
        return st;
      }
      case StmtKind::kStore: {
        if (auto st = CheckBuffer(s, s.buffer); !st.ok()) return st;
        const BufferParam& b = kernel_.buffers[s.buffer];
        if (b.role != BufferRole::kOutput) return StmtError(s, absl::StrCat("'", b.name, "' is an input"));
        if (auto st = CheckIndex(s.index, "store index"); !st.ok()) return st;
        if (auto st = CheckValue(s, s.value); !st.ok()) return st;
        if (s.value->type != b.dtype) {
          return StmtError(s, absl::StrCat("stores ", ScalarTypeName(s.value->type), " into ",
                                           ScalarTypeName(b.dtype), " buffer '", b.name, "'"));
        }
        return absl::OkStatus();
      }
      case StmtKind::kStoreAt: {
        if (auto st = CheckBuffer(s, s.buffer); !st.ok()) return st;
        const BufferParam& b = kernel_.buffers[s.buffer];
        if (b.role != BufferRole::kOutput) return StmtError(s, absl::StrCat("'", b.name, "' is an input"));
        if (!s.at) return StmtError(s, "missing index");
        if (auto st = CheckValue(s, s.at); !st.ok()) return st;
        if (s.at->type != ScalarType::kI64) return StmtError(s, "a data-dependent store index is i64");
        if (auto st = CheckValue(s, s.value); !st.ok()) return st;
        if (s.value->type != b.dtype) {
          return StmtError(s, absl::StrCat("stores ", ScalarTypeName(s.value->type), " into ",
                                           ScalarTypeName(b.dtype), " buffer '", b.name, "'"));
        }
        return absl::OkStatus();
      }
      case StmtKind::kLet:
      case StmtKind::kAccumulator: {
        if (auto st = CheckName(s); !st.ok()) return st;
        if (auto st = CheckValue(s, s.value); !st.ok()) return st;
        bool is_acc = s.kind == StmtKind::kAccumulator;
        if (is_acc && s.value->type == ScalarType::kBool) return StmtError(s, "bool accumulator");
        bindings_[s.name] = Binding{s.value->type, is_acc};
        declared->push_back(s.name);
        return absl::OkStatus();
      }
      case StmtKind::kAccumulate: {
        auto it = bindings_.find(s.name);
        if (it == bindings_.end() || !it->second.is_accumulator) {
          return StmtError(s, absl::StrCat("'", s.name, "' is not an accumulator in scope"));
        }
        if (auto st = CheckValue(s, s.value); !st.ok()) return st;
        if (s.value->type != it->second.type) return StmtError(s, "type differs from the accumulator's");
        return absl::OkStatus();
      }
    }
    return StmtError(s, "unknown statement kind");
  }

  const Kernel& kernel_;
  absl::flat_hash_set<std::string> symbols_;  // dims and loop variables in scope
  absl::flat_hash_map<std::string, Binding> bindings_;
};

}  // namespace

absl::Status Verify(const Kernel& kernel) { return Verifier(kernel).Run(); }

}  // namespace shapeshift::codegen
