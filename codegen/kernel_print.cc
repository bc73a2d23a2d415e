// The kernel IR printer: one statement per line, indentation for nesting.
#include <cmath>

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

std::string PrintValue(const Kernel& kernel, const Value& value) {
  if (!value) return "<null>";
  const ValueNode& v = *value;
  auto operand = [&](size_t i) {
    return i < v.operands.size() ? PrintValue(kernel, v.operands[i]) : std::string("<missing>");
  };
  switch (v.kind) {
    case ValueKind::kConst: return PrintConst(v);
    case ValueKind::kLoad: return absl::StrCat(BufferName(kernel, v.buffer), "[", v.index.ToString(), "]");
    case ValueKind::kLoadAt: return absl::StrCat(BufferName(kernel, v.buffer), "[at ", operand(0), "]");
    case ValueKind::kIndex: return absl::StrCat("index(", v.index.ToString(), ")");
    case ValueKind::kVar: return v.name;
    case ValueKind::kUnary:
      return absl::StrCat(UnaryOpName(static_cast<UnaryOp>(v.op)), "(", operand(0), ")");
    case ValueKind::kBinary: {
      auto op = static_cast<BinaryOp>(v.op);
      if (op == BinaryOp::kMax || op == BinaryOp::kMin || op == BinaryOp::kRem) {
        return absl::StrCat(BinaryOpName(op), "(", operand(0), ", ", operand(1), ")");
      }
      return absl::StrCat("(", operand(0), " ", BinaryOpName(op), " ", operand(1), ")");
    }
    case ValueKind::kCompare:
      return absl::StrCat("(", operand(0), " ", CompareOpName(static_cast<CompareOp>(v.op)), " ",
                          operand(1), ")");
    case ValueKind::kSelect:
      return absl::StrCat("select(", operand(0), ", ", operand(1), ", ", operand(2), ")");
    case ValueKind::kCast:
      return absl::StrCat(ScalarTypeName(v.type), "(", operand(0), ")");
  }
  return "<?>";
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
