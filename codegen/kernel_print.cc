// The kernel IR printer: one statement per line, indentation for nesting.
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/kernel_ir.h"
#include "codegen/kernel_print.h"

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

}  // namespace

// A value is a DAG (kernel_ir.h): a non-leaf node read more than once is
// printed once, as `$k` in its readers and `$k = ...` after a `where`, so
// the text stays linear in the DAG (and a tree without sharing prints as
// it always did): `(($0 * $0) + 1f) where $0 = exp(x[p])`.
std::string PrintValue(const Kernel& kernel, const Value& value) {
  if (!value) return "<null>";
  std::vector<const Value*> order = PostOrder(value);
  absl::flat_hash_map<const ValueNode*, int> reads;
  for (const Value* v : order) {
    for (const Value& o : (*v)->operands) {
      if (o) ++reads[o.get()];
    }
  }
  auto is_leaf = [](const ValueNode& v) { return v.operands.empty(); };
  absl::flat_hash_map<const ValueNode*, std::string> text;  // how a reader refers to the node
  std::vector<std::string> definitions;
  for (const Value* node : order) {
    const ValueNode& v = **node;
    auto operand = [&](size_t i) -> std::string {
      if (i >= v.operands.size()) return "<missing>";
      if (!v.operands[i]) return "<null>";
      return text.at(v.operands[i].get());
    };
    std::string t;
    switch (v.kind) {
      case ValueKind::kConst: t = PrintConst(v); break;
      case ValueKind::kLoad: t = absl::StrCat(BufferName(kernel, v.buffer), "[", v.index.ToString(), "]"); break;
      case ValueKind::kLoadAt: t = absl::StrCat(BufferName(kernel, v.buffer), "[at ", operand(0), "]"); break;
      case ValueKind::kIndex: t = absl::StrCat("index(", v.index.ToString(), ")"); break;
      case ValueKind::kVar: t = v.name; break;
      case ValueKind::kUnary:
        t = absl::StrCat(UnaryOpName(static_cast<UnaryOp>(v.op)), "(", operand(0), ")");
        break;
      case ValueKind::kBinary: {
        auto op = static_cast<BinaryOp>(v.op);
        t = op == BinaryOp::kMax || op == BinaryOp::kMin || op == BinaryOp::kRem
                ? absl::StrCat(BinaryOpName(op), "(", operand(0), ", ", operand(1), ")")
                : absl::StrCat("(", operand(0), " ", BinaryOpName(op), " ", operand(1), ")");
        break;
      }
      case ValueKind::kCompare:
        t = absl::StrCat("(", operand(0), " ", CompareOpName(static_cast<CompareOp>(v.op)), " ", operand(1), ")");
        break;
      case ValueKind::kSelect:
        t = absl::StrCat("select(", operand(0), ", ", operand(1), ", ", operand(2), ")");
        break;
      case ValueKind::kCast:
        t = absl::StrCat(ScalarTypeName(v.type), "(", operand(0), ")");
        break;
      default:
        t = "<?>";
    }
    if (node != order.back() && !is_leaf(v) && reads[&v] > 1) {
      std::string name = absl::StrCat("$", definitions.size());
      definitions.push_back(absl::StrCat(name, " = ", t));
      t = std::move(name);
    }
    text[&v] = std::move(t);
  }
  std::string out = std::move(text.at(value.get()));
  if (!definitions.empty()) absl::StrAppend(&out, " where ", absl::StrJoin(definitions, "; "));
  return out;
}

std::string PrintStmtLine(const Kernel& kernel, const Stmt& s) {
  switch (s.kind) {
    case StmtKind::kLoop:
      return absl::StrCat("for ", s.name, " in [", s.begin.ToString(), ", ", s.end.ToString(), "):");
    case StmtKind::kStore:
      return absl::StrCat(BufferName(kernel, s.buffer), "[", s.index.ToString(),
                          "] = ", PrintValue(kernel, s.value));
    case StmtKind::kStoreAt:
      return absl::StrCat(BufferName(kernel, s.buffer), "[at ", PrintValue(kernel, s.at),
                          "] = ", PrintValue(kernel, s.value));
    case StmtKind::kLet:
      return absl::StrCat("let ", s.name, " = ", PrintValue(kernel, s.value));
    case StmtKind::kAccumulator:
      return absl::StrCat("acc ", s.name, " = ", PrintValue(kernel, s.value));
    case StmtKind::kAccumulate:
      return absl::StrCat(s.name, " = ", ReduceOpName(s.reduce), "(", s.name, ", ",
                          PrintValue(kernel, s.value), ")");
  }
  return "<?>";
}

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
