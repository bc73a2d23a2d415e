// SymExpr::ToString: readable text in exactly the syntax ParseSymExpr reads,
// with only the parentheses precedence requires, so printing round-trips.
// Precedence (loosest first): + -, then * // % (left-associative), then unary
// minus, then atoms and min(...)/max(...).
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "shapes/internal/expr_node.h"
#include "shapes/sym_expr.h"
#include "shapes/sym_expr_visitor.h"

namespace shapeshift {
namespace {

void Print(SymExpr e, std::string* out);

void PrintConst(int64_t v, std::string* out) {
  // -9223372036854775808 is not a literal the parser can read (its magnitude
  // overflows before the minus applies), so it prints as a sum.
  if (v == std::numeric_limits<int64_t>::min()) {
    absl::StrAppend(out, "(-9223372036854775807 - 1)");
  } else {
    absl::StrAppend(out, v);
  }
}

bool IsSum(SymExpr e) { return e.kind() == ExprKind::kAdd; }
bool IsMultiplicative(SymExpr e) {
  return e.kind() == ExprKind::kMul || e.kind() == ExprKind::kFloorDiv ||
         e.kind() == ExprKind::kMod;
}

void PrintParenthesizedIf(bool paren, SymExpr e, std::string* out) {
  if (paren) out->push_back('(');
  Print(e, out);
  if (paren) out->push_back(')');
}

// The constant coefficient of a product or constant term, or 1.
int64_t LeadingCoefficient(SymExpr term) {
  if (auto c = term.AsConst()) return *c;
  if (term.kind() == ExprKind::kMul && term.node()->canonical) {
    if (auto c = term.operands()[0].AsConst()) return *c;
  }
  return 1;
}

// A product: `2*seq`, `-seq`, `seq*(a // 2)`. With `negate`, prints the
// product with its coefficient negated (the caller already wrote " - ").
void PrintProduct(SymExpr e, bool negate, std::string* out) {
  auto ops = e.operands();
  size_t first = 0;
  int64_t coeff = 1;
  if (auto c = ops[0].AsConst(); c && e.node()->canonical) {
    coeff = *c;
    first = 1;
  }
  if (negate) coeff = -coeff;
  if (coeff == -1) {
    out->push_back('-');
  } else if (coeff != 1) {
    PrintConst(coeff, out);
    out->push_back('*');
  }
  for (size_t i = first; i < ops.size(); ++i) {
    if (i > first) out->push_back('*');
    PrintParenthesizedIf(IsSum(ops[i]) || IsMultiplicative(ops[i]) ||
                             (ops[i].IsConst() && *ops[i].AsConst() < 0),
                         ops[i], out);
  }
}

void PrintSum(SymExpr e, std::string* out) {
  bool first = true;
  for (SymExpr term : e.operands()) {
    int64_t coeff = LeadingCoefficient(term);
    bool subtract = !first && coeff < 0 && coeff != std::numeric_limits<int64_t>::min();
    if (!first) absl::StrAppend(out, subtract ? " - " : " + ");
    first = false;
    if (term.IsConst()) {
      PrintConst(subtract ? -coeff : coeff, out);
    } else if (term.kind() == ExprKind::kMul && term.node()->canonical) {
      PrintProduct(term, subtract, out);
    } else {
      PrintParenthesizedIf(IsSum(term), term, out);
    }
  }
}

void PrintBinary(SymExpr e, const char* op, std::string* out) {
  SymExpr a = e.operands()[0];
  SymExpr b = e.operands()[1];
  PrintParenthesizedIf(IsSum(a), a, out);
  absl::StrAppend(out, op);
  PrintParenthesizedIf(IsSum(b) || IsMultiplicative(b), b, out);
}

class TextPrinter final : public SymExprVisitor<void, std::string*> {
  void VisitConst(const SymExpr&, int64_t value, std::string* out) override { PrintConst(value, out); }
  void VisitSymbol(const SymExpr&, const std::string& name, std::string* out) override { absl::StrAppend(out, name); }
  void VisitAdd(const SymExpr& e, absl::Span<const SymExpr>, std::string* out) override { PrintSum(e, out); }
  void VisitMul(const SymExpr& e, absl::Span<const SymExpr>, std::string* out) override {
    PrintProduct(e, /*negate=*/false, out);
  }
  void VisitFloorDiv(const SymExpr& e, const SymExpr&, const SymExpr&, std::string* out) override {
    PrintBinary(e, " // ", out);
  }
  void VisitMod(const SymExpr& e, const SymExpr&, const SymExpr&, std::string* out) override {
    PrintBinary(e, " % ", out);
  }
  void VisitMin(const SymExpr&, const SymExpr& a, const SymExpr& b, std::string* out) override {
    PrintCall("min(", a, b, out);
  }
  void VisitMax(const SymExpr&, const SymExpr& a, const SymExpr& b, std::string* out) override {
    PrintCall("max(", a, b, out);
  }

  static void PrintCall(const char* name, const SymExpr& a, const SymExpr& b, std::string* out) {
    absl::StrAppend(out, name);
    Print(a, out);
    absl::StrAppend(out, ", ");
    Print(b, out);
    out->push_back(')');
  }
};

void Print(SymExpr e, std::string* out) { TextPrinter().Visit(e, out); }

}  // namespace

std::string SymExpr::ToString() const {
  std::string out;
  Print(*this, &out);
  return out;
}

}  // namespace shapeshift
