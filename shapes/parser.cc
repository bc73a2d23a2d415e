// The text form of SymExpr and Predicate: one tokenizer and one
// recursive-descent parser for both, so `shapeshift prove --guards '...'`,
// tests and logs all read exactly what ToString prints.
//
// Grammar (loosest binding first):
//   pred    := and ('||' and)*
//   and     := unary ('&&' unary)*
//   unary   := '!' unary | 'true' | 'false' | '(' pred ')' | expr CMP expr
//   expr    := term (('+' | '-') term)*
//   term    := factor (('*' | '//' | '%') factor)*
//   factor  := '-' factor | INT | IDENT | ('min' | 'max') '(' expr ',' expr ')'
//            | '(' expr ')'
// INT is a decimal int64; -9223372036854775808 (INT64_MIN) is written as a
// negated literal, the only place 9223372036854775808 may appear. A divisor
// of '//' or '%' that is the constant 0 (`seq % 0`, `seq // (2 - 2)`) is a
// parse error naming the operator's column: the expression has no value.
// A '(' in predicate position is ambiguous (`(a + 1) * 2 < b` vs `(a < b)`):
// the parser tries a comparison first and falls back to a parenthesized
// predicate, reporting whichever attempt got further.
#include <cctype>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "shapes/predicate.h"
#include "shapes/sym_expr.h"

namespace shapeshift {
namespace {

enum class Tok { kInt, kIdent, kOp, kEnd };

struct Token {
  Tok kind;
  std::string text;
  size_t column;  // 1-based, for error messages
  int64_t value = 0;
  // The literal 9223372036854775808 (value holds INT64_MIN): valid only
  // right after a unary '-'.
  bool is_int64_min_magnitude = false;
};

constexpr char kInt64Range[] = "-9223372036854775808..9223372036854775807";

absl::Status IntegerRangeError(const std::string& text, size_t column) {
  return absl::InvalidArgumentError(absl::StrCat("integer '", text, "' at column ", column,
                                                 " does not fit in int64 (the range is ", kInt64Range, ")"));
}

absl::StatusOr<std::vector<Token>> Tokenize(absl::string_view text) {
  static constexpr const char* kTwoCharOps[] = {"//", "==", "!=", "<=", ">=", "&&", "||"};
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    size_t start = i;
    if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
      Token t{Tok::kInt, std::string(text.substr(start, i - start)), start + 1};
      uint64_t magnitude = 0;
      constexpr uint64_t kMinMagnitude = uint64_t{1} << 63;
      if (!absl::SimpleAtoi(t.text, &magnitude) || magnitude > kMinMagnitude) {
        return IntegerRangeError(t.text, t.column);
      }
      if (magnitude == kMinMagnitude) {
        t.value = std::numeric_limits<int64_t>::min();
        t.is_int64_min_magnitude = true;
      } else {
        t.value = static_cast<int64_t>(magnitude);
      }
      tokens.push_back(std::move(t));
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (i < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' || text[i] == '.')) {
        ++i;
      }
      tokens.push_back({Tok::kIdent, std::string(text.substr(start, i - start)), start + 1});
      continue;
    }
    bool matched = false;
    for (const char* op : kTwoCharOps) {
      if (text.substr(i, 2) == op) {
        tokens.push_back({Tok::kOp, op, start + 1});
        i += 2;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (absl::string_view("+-*%()<>!,").find(c) != absl::string_view::npos) {
      tokens.push_back({Tok::kOp, std::string(1, c), start + 1});
      ++i;
      continue;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected character '", std::string(1, c), "' at column ", start + 1));
  }
  tokens.push_back({Tok::kEnd, "", text.size() + 1});
  return tokens;
}

bool IsReserved(const std::string& word) {
  return word == "min" || word == "max" || word == "true" || word == "false";
}

class Parser {
 public:
  Parser(absl::string_view text, std::vector<Token> tokens)
      : text_(text), tokens_(std::move(tokens)) {}

  absl::StatusOr<SymExpr> ParseWholeExpr() {
    absl::StatusOr<SymExpr> e = Expr();
    if (!e.ok()) return e;
    if (absl::Status s = ExpectEnd(); !s.ok()) return s;
    return e;
  }

  absl::StatusOr<Predicate> ParseWholePredicate() {
    absl::StatusOr<Predicate> p = Or();
    if (!p.ok()) return p;
    if (absl::Status s = ExpectEnd(); !s.ok()) return s;
    return p;
  }

 private:
  const Token& Peek() const { return tokens_[pos_]; }
  bool PeekOp(absl::string_view op) const { return Peek().kind == Tok::kOp && Peek().text == op; }
  bool AcceptOp(absl::string_view op) {
    if (!PeekOp(op)) return false;
    ++pos_;
    return true;
  }

  absl::Status Error(absl::string_view expected) const {
    const Token& t = Peek();
    std::string found = t.kind == Tok::kEnd ? "end of input" : absl::StrCat("'", t.text, "'");
    return absl::InvalidArgumentError(absl::StrCat("expected ", expected, " at column ", t.column,
                                                   " but found ", found, " in `", text_, "`"));
  }
  absl::Status ExpectOp(absl::string_view op) {
    if (AcceptOp(op)) return absl::OkStatus();
    return Error(absl::StrCat("'", op, "'"));
  }
  absl::Status ExpectEnd() const {
    if (Peek().kind == Tok::kEnd) return absl::OkStatus();
    return Error("end of input");
  }

  absl::StatusOr<SymExpr> Expr() {
    absl::StatusOr<SymExpr> lhs = Term();
    while (lhs.ok() && (PeekOp("+") || PeekOp("-"))) {
      bool plus = Peek().text == "+";
      ++pos_;
      absl::StatusOr<SymExpr> rhs = Term();
      if (!rhs.ok()) return rhs;
      lhs = plus ? *lhs + *rhs : *lhs - *rhs;
    }
    return lhs;
  }

  absl::StatusOr<SymExpr> Term() {
    absl::StatusOr<SymExpr> lhs = Factor();
    while (lhs.ok() && (PeekOp("*") || PeekOp("//") || PeekOp("%"))) {
      const std::string op = Peek().text;
      const size_t op_column = Peek().column;
      ++pos_;
      absl::StatusOr<SymExpr> rhs = Factor();
      if (!rhs.ok()) return rhs;
      if (op != "*" && rhs->AsConst() == 0) {
        return absl::InvalidArgumentError(absl::StrCat("division by zero: the divisor of '", op, "' at column ",
                                                       op_column, " is 0 in `", text_, "`"));
      }
      if (op == "*") {
        lhs = *lhs * *rhs;
      } else if (op == "//") {
        lhs = FloorDiv(*lhs, *rhs);
      } else {
        lhs = Mod(*lhs, *rhs);
      }
    }
    return lhs;
  }

  // Nesting ('(', unary '-', '!') recurses; a hostile input must get an
  // error, not a stack overflow.
  static constexpr int kMaxNesting = 256;
  struct NestingScope {
    explicit NestingScope(int* depth) : depth(depth) { ++*depth; }
    ~NestingScope() { --*depth; }
    int* depth;
  };
  absl::Status NestingError() const {
    return absl::InvalidArgumentError(absl::StrCat("nesting deeper than ", kMaxNesting,
                                                   " levels at column ", Peek().column));
  }

  absl::StatusOr<SymExpr> Factor() {
    NestingScope scope(&depth_);
    if (depth_ > kMaxNesting) return NestingError();
    if (AcceptOp("-")) {
      // -9223372036854775808 is one literal: its magnitude is no int64.
      if (Peek().kind == Tok::kInt && Peek().is_int64_min_magnitude) return SymExpr(tokens_[pos_++].value);
      absl::StatusOr<SymExpr> e = Factor();
      if (!e.ok()) return e;
      return -*e;
    }
    const Token& t = Peek();
    if (t.kind == Tok::kInt) {
      if (t.is_int64_min_magnitude) return IntegerRangeError(t.text, t.column);
      ++pos_;
      return SymExpr(t.value);
    }
    if (t.kind == Tok::kIdent && (t.text == "min" || t.text == "max")) {
      bool is_min = t.text == "min";
      ++pos_;
      if (absl::Status s = ExpectOp("("); !s.ok()) return s;
      absl::StatusOr<SymExpr> a = Expr();
      if (!a.ok()) return a;
      if (absl::Status s = ExpectOp(","); !s.ok()) return s;
      absl::StatusOr<SymExpr> b = Expr();
      if (!b.ok()) return b;
      if (absl::Status s = ExpectOp(")"); !s.ok()) return s;
      return is_min ? Min(*a, *b) : Max(*a, *b);
    }
    if (t.kind == Tok::kIdent && !IsReserved(t.text)) {
      ++pos_;
      return SymExpr::Symbol(t.text);
    }
    if (AcceptOp("(")) {
      absl::StatusOr<SymExpr> e = Expr();
      if (!e.ok()) return e;
      if (absl::Status s = ExpectOp(")"); !s.ok()) return s;
      return e;
    }
    return Error("an integer, a symbol, min(...), max(...) or '('");
  }

  absl::StatusOr<Predicate> Or() {
    absl::StatusOr<Predicate> lhs = And();
    while (lhs.ok() && AcceptOp("||")) {
      absl::StatusOr<Predicate> rhs = And();
      if (!rhs.ok()) return rhs;
      lhs = *lhs || *rhs;
    }
    return lhs;
  }

  absl::StatusOr<Predicate> And() {
    absl::StatusOr<Predicate> lhs = Unary();
    while (lhs.ok() && AcceptOp("&&")) {
      absl::StatusOr<Predicate> rhs = Unary();
      if (!rhs.ok()) return rhs;
      lhs = *lhs && *rhs;
    }
    return lhs;
  }

  absl::StatusOr<Predicate> Unary() {
    NestingScope scope(&depth_);
    if (depth_ > kMaxNesting) return NestingError();
    if (AcceptOp("!")) {
      absl::StatusOr<Predicate> p = Unary();
      if (!p.ok()) return p;
      return !*p;
    }
    const Token& t = Peek();
    if (t.kind == Tok::kIdent && (t.text == "true" || t.text == "false")) {
      ++pos_;
      return t.text == "true" ? Predicate::True() : Predicate::False();
    }
    if (!PeekOp("(")) return Comparison();
    const size_t start = pos_;
    absl::StatusOr<Predicate> comparison = Comparison();
    if (comparison.ok()) return comparison;
    const size_t comparison_reach = pos_;
    pos_ = start + 1;  // past '('
    absl::StatusOr<Predicate> inner = Or();
    if (inner.ok()) {
      if (absl::Status s = ExpectOp(")"); !s.ok()) inner = s;
    }
    if (inner.ok()) return inner;
    if (pos_ >= comparison_reach) return inner;
    pos_ = comparison_reach;  // the reach of the error returned, for an enclosing choice
    return comparison;
  }

  absl::StatusOr<Predicate> Comparison() {
    absl::StatusOr<SymExpr> lhs = Expr();
    if (!lhs.ok()) return lhs.status();
    static constexpr const char* kOps[] = {"==", "!=", "<=", ">=", "<", ">"};
    for (const char* op : kOps) {
      if (!AcceptOp(op)) continue;
      absl::StatusOr<SymExpr> rhs = Expr();
      if (!rhs.ok()) return rhs.status();
      absl::string_view o = op;
      if (o == "==") return Predicate::Eq(*lhs, *rhs);
      if (o == "!=") return Predicate::Ne(*lhs, *rhs);
      if (o == "<=") return Predicate::Le(*lhs, *rhs);
      if (o == ">=") return Predicate::Ge(*lhs, *rhs);
      if (o == "<") return Predicate::Lt(*lhs, *rhs);
      return Predicate::Gt(*lhs, *rhs);
    }
    return Error("a comparison (==, !=, <, <=, >, >=)");
  }

  absl::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

absl::StatusOr<SymExpr> ParseSymExpr(absl::string_view text) {
  absl::StatusOr<std::vector<Token>> tokens = Tokenize(text);
  if (!tokens.ok()) return tokens.status();
  return Parser(text, *std::move(tokens)).ParseWholeExpr();
}

absl::StatusOr<Predicate> ParsePredicate(absl::string_view text) {
  absl::StatusOr<std::vector<Token>> tokens = Tokenize(text);
  if (!tokens.ok()) return tokens.status();
  return Parser(text, *std::move(tokens)).ParseWholePredicate();
}

}  // namespace shapeshift
