// The kernel IR printer: one statement per line, indentation for nesting.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/kernel_ir.h"
#include "codegen/kernel_print.h"
#include "codegen/kernel_visitor.h"

namespace shapeshift::codegen {
namespace {

std::string BufferName(const Kernel& kernel, int index) {
  if (index >= 0 && index < static_cast<int>(kernel.buffers.size())) {
    return kernel.buffers[index].name;
  }
  return absl::StrCat("<buffer ", index, ">");
}

std::string PrintConst(const ValueNode& v) {
  if (v.type != ScalarType::kF32) return absl::StrCat(v.i_value);
  if (std::isinf(v.f_value)) return v.f_value > 0 ? "inf" : "-inf";
  if (std::isnan(v.f_value)) return "nan";
  return absl::StrCat(v.f_value, "f");
}

void PrintBlock(const Kernel& kernel, const std::vector<Stmt>& body, int depth, std::string* out) {
  for (const Stmt& s : body) {
    absl::StrAppend(out, std::string(2 * depth, ' '), PrintStmtLine(kernel, s), "\n");
    if (s.kind == StmtKind::kLoop) PrintBlock(kernel, s.body, depth + 1, out);
  }
}

// A value is a DAG (kernel_ir.h): a non-leaf node read more than once is
// printed once, as `$k` in its readers and `$k = ...` after a `where`, so
// the text stays linear in the DAG (and a tree without sharing prints as
// it always did): `(($0 * $0) + 1f) where $0 = exp(x[p])`.
class ValuePrinter : public ValueFold<std::string> {
 public:
  explicit ValuePrinter(const Kernel& kernel) : kernel_(kernel) {}

  std::string Run(const Value& value) {
    std::string out = Fold(value);
    if (!definitions_.empty()) absl::StrAppend(&out, " where ", absl::StrJoin(definitions_, "; "));
    return out;
  }

 private:
  using Ops = absl::Span<std::string>;
  // Malformed nodes print too (Verify quotes them).
  static std::string Operand(Ops ops, size_t i) { return i < ops.size() ? std::move(ops[i]) : "<missing>"; }

  std::string NullOperand() override { return "<null>"; }
  std::string AfterNode(const ValueNode& v, std::string text, int readers) override {
    if (v.operands.empty() || readers <= 1) return text;
    std::string name = absl::StrCat("$", definitions_.size());
    definitions_.push_back(absl::StrCat(name, " = ", text));
    return name;
  }

  std::string VisitConst(const ValueNode& v, Ops) override { return PrintConst(v); }
  std::string VisitLoad(const ValueNode& v, Ops) override {
    return absl::StrCat(BufferName(kernel_, v.buffer), "[", v.index.ToString(), "]");
  }
  std::string VisitLoadAt(const ValueNode& v, Ops ops) override {
    return absl::StrCat(BufferName(kernel_, v.buffer), "[at ", Operand(ops, 0), "]");
  }
  std::string VisitIndex(const ValueNode& v, Ops) override { return absl::StrCat("index(", v.index.ToString(), ")"); }
  std::string VisitVar(const ValueNode& v, Ops) override { return v.name; }
  std::string VisitUnary(const ValueNode& v, UnaryOp op, Ops ops) override {
    return absl::StrCat(UnaryOpName(op), "(", Operand(ops, 0), ")");
  }
  std::string VisitBinary(const ValueNode& v, BinaryOp op, Ops ops) override {
    return op == BinaryOp::kMax || op == BinaryOp::kMin || op == BinaryOp::kRem
               ? absl::StrCat(BinaryOpName(op), "(", Operand(ops, 0), ", ", Operand(ops, 1), ")")
               : absl::StrCat("(", Operand(ops, 0), " ", BinaryOpName(op), " ", Operand(ops, 1), ")");
  }
  std::string VisitCompare(const ValueNode& v, CompareOp op, Ops ops) override {
    return absl::StrCat("(", Operand(ops, 0), " ", CompareOpName(op), " ", Operand(ops, 1), ")");
  }
  std::string VisitSelect(const ValueNode& v, Ops ops) override {
    return absl::StrCat("select(", Operand(ops, 0), ", ", Operand(ops, 1), ", ", Operand(ops, 2), ")");
  }
  std::string VisitCast(const ValueNode& v, Ops ops) override {
    return absl::StrCat(ScalarTypeName(v.type), "(", Operand(ops, 0), ")");
  }
  std::string VisitInvalid(const ValueNode& v, Ops) override { return "<?>"; }

  const Kernel& kernel_;
  std::vector<std::string> definitions_;
};

// The statement's own line; a loop's body is PrintBlock's.
class StmtLinePrinter : public StmtVisitor<std::string> {
 public:
  explicit StmtLinePrinter(const Kernel& kernel) : kernel_(kernel) {}

 private:
  std::string Text(const Value& v) const { return PrintValue(kernel_, v); }

  std::string VisitLoop(const Stmt& s) override {
    return absl::StrCat("for ", s.name, " in [", s.begin.ToString(), ", ", s.end.ToString(), "):");
  }
  std::string VisitStore(const Stmt& s) override {
    return absl::StrCat(BufferName(kernel_, s.buffer), "[", s.index.ToString(), "] = ", Text(s.value));
  }
  std::string VisitStoreAt(const Stmt& s) override {
    return absl::StrCat(BufferName(kernel_, s.buffer), "[at ", Text(s.at), "] = ", Text(s.value));
  }
  std::string VisitLet(const Stmt& s) override { return absl::StrCat("let ", s.name, " = ", Text(s.value)); }
  std::string VisitAccumulator(const Stmt& s) override { return absl::StrCat("acc ", s.name, " = ", Text(s.value)); }
  std::string VisitAccumulate(const Stmt& s) override {
    return absl::StrCat(s.name, " = ", ReduceOpName(s.reduce), "(", s.name, ", ", Text(s.value), ")");
  }
  std::string VisitInvalid(const Stmt& s) override { return "<?>"; }

  const Kernel& kernel_;
};

}  // namespace

std::string PrintValue(const Kernel& kernel, const Value& value) { return ValuePrinter(kernel).Run(value); }

std::string PrintStmtLine(const Kernel& kernel, const Stmt& s) { return StmtLinePrinter(kernel).Visit(s); }

std::string Print(const Kernel& kernel) {
  std::vector<std::string> params;
  for (const BufferParam& b : kernel.buffers) {
    params.push_back(absl::StrCat(b.role == BufferRole::kInput ? "in " : "out ", b.name, ": ",
                                  ScalarTypeName(b.dtype)));
  }
  std::string out = absl::StrCat("kernel ", kernel.name, "(", absl::StrJoin(params, ", "),
                                 ") dims(", absl::StrJoin(kernel.dims, ", "), ")\n");
  absl::StrAppend(&out, "parallel ", kernel.parallel_var, " in [0, ",
                  kernel.parallel_extent.ToString(), "):\n");
  PrintBlock(kernel, kernel.body, 1, &out);
  return out;
}

}  // namespace shapeshift::codegen
