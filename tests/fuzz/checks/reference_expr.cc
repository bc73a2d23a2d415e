#include "tests/fuzz/checks/reference_expr.h"

#include <cctype>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"

namespace shapeshift::fuzz {
namespace {

using Kind = RefNode::Kind;
using NodePtr = std::unique_ptr<RefNode>;

struct Token {
  enum class Type { kInt, kIdent, kOp, kEnd } type;
  std::string text;
  int64_t value = 0;
  bool int64_min_magnitude = false;  // 9223372036854775808: only as `-9223372036854775808`
};

// Integers (must fit int64, or be INT64_MIN's magnitude, which only a unary
// '-' may take), identifiers ([A-Za-z_][A-Za-z0-9_.]*), the operators of
// the grammar; anything else rejects the whole text.
std::optional<std::vector<Token>> Tokenize(absl::string_view text) {
  std::vector<Token> out;
  size_t i = 0;
  auto is = [&](size_t k, auto pred) {
    return k < text.size() && pred(static_cast<unsigned char>(text[k]));
  };
  while (i < text.size()) {
    if (is(i, [](unsigned char c) { return std::isspace(c) != 0; })) {
      ++i;
      continue;
    }
    size_t start = i;
    if (is(i, [](unsigned char c) { return std::isdigit(c) != 0; })) {
      while (is(i, [](unsigned char c) { return std::isdigit(c) != 0; })) ++i;
      Token t{Token::Type::kInt, std::string(text.substr(start, i - start))};
      // By value, so leading zeros are allowed here as in any other literal
      // (`-09223372036854775808` is INT64_MIN, as `014804` is 14804).
      uint64_t magnitude = 0;
      if (!absl::SimpleAtoi(t.text, &magnitude)) return std::nullopt;
      if (magnitude == uint64_t{1} << 63) {
        t.value = std::numeric_limits<int64_t>::min();
        t.int64_min_magnitude = true;
      } else if (magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return std::nullopt;
      } else {
        t.value = static_cast<int64_t>(magnitude);
      }
      out.push_back(std::move(t));
      continue;
    }
    if (is(i, [](unsigned char c) { return std::isalpha(c) != 0 || c == '_'; })) {
      while (is(i, [](unsigned char c) { return std::isalnum(c) != 0 || c == '_' || c == '.'; })) ++i;
      out.push_back({Token::Type::kIdent, std::string(text.substr(start, i - start))});
      continue;
    }
    absl::string_view two = text.substr(i, 2);
    if (two == "//" || two == "==" || two == "!=" || two == "<=" || two == ">=" || two == "&&" ||
        two == "||") {
      out.push_back({Token::Type::kOp, std::string(two)});
      i += 2;
      continue;
    }
    if (absl::string_view("+-*%()<>!,").find(text[i]) == absl::string_view::npos) return std::nullopt;
    out.push_back({Token::Type::kOp, std::string(1, text[i])});
    ++i;
  }
  out.push_back({Token::Type::kEnd, ""});
  return out;
}

NodePtr Make(Kind kind, NodePtr a = nullptr, NodePtr b = nullptr) {
  auto n = std::make_unique<RefNode>();
  n->kind = kind;
  if (a) n->operands.push_back(std::move(a));
  if (b) n->operands.push_back(std::move(b));
  return n;
}

// Recursive descent; nullptr = rejected. `too_deep_` poisons the whole
// parse once nesting passes kMaxReferenceDepth.
class ReferenceParser {
 public:
  explicit ReferenceParser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  RefParse Whole(bool predicate) {
    NodePtr root = predicate ? Or() : Expr();
    RefParse result;
    if (too_deep_) {
      result.outcome = RefParse::Outcome::kTooDeep;
    } else if (root && Peek().type == Token::Type::kEnd) {
      result.outcome = RefParse::Outcome::kParsed;
      result.root = std::move(root);
    }
    return result;
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(ReferenceParser* p) : parser(p) {
      if (++parser->depth_ > kMaxReferenceDepth) parser->too_deep_ = true;
    }
    ~DepthGuard() { --parser->depth_; }
    ReferenceParser* parser;
  };

  const Token& Peek() const { return tokens_[pos_]; }
  bool IsOp(absl::string_view op) const {
    return Peek().type == Token::Type::kOp && Peek().text == op;
  }
  bool Accept(absl::string_view op) {
    if (!IsOp(op)) return false;
    ++pos_;
    return true;
  }
  bool IsIdent(absl::string_view word) const {
    return Peek().type == Token::Type::kIdent && Peek().text == word;
  }

  NodePtr Expr() {
    DepthGuard guard(this);
    if (too_deep_) return nullptr;
    NodePtr lhs = Term();
    while (lhs && (IsOp("+") || IsOp("-"))) {
      Kind kind = Peek().text == "+" ? Kind::kAdd : Kind::kSub;
      ++pos_;
      NodePtr rhs = Term();
      if (!rhs) return nullptr;
      lhs = Make(kind, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  NodePtr Term() {
    NodePtr lhs = Factor();
    while (lhs && (IsOp("*") || IsOp("//") || IsOp("%"))) {
      Kind kind = IsOp("*") ? Kind::kMul : IsOp("//") ? Kind::kFloorDiv : Kind::kMod;
      ++pos_;
      NodePtr rhs = Factor();
      if (!rhs) return nullptr;
      lhs = Make(kind, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  NodePtr Factor() {
    DepthGuard guard(this);
    if (too_deep_) return nullptr;
    if (Accept("-")) {
      if (Peek().type == Token::Type::kInt && Peek().int64_min_magnitude) {
        NodePtr n = Make(Kind::kInt);
        n->value = Peek().value;
        ++pos_;
        return n;
      }
      NodePtr e = Factor();
      return e ? Make(Kind::kNeg, std::move(e)) : nullptr;
    }
    const Token& t = Peek();
    if (t.type == Token::Type::kInt && t.int64_min_magnitude) return nullptr;
    if (t.type == Token::Type::kInt) {
      NodePtr n = Make(Kind::kInt);
      n->value = t.value;
      ++pos_;
      return n;
    }
    if (IsIdent("min") || IsIdent("max")) {
      Kind kind = IsIdent("min") ? Kind::kMin : Kind::kMax;
      ++pos_;
      if (!Accept("(")) return nullptr;
      NodePtr a = Expr();
      if (!a || !Accept(",")) return nullptr;
      NodePtr b = Expr();
      if (!b || !Accept(")")) return nullptr;
      return Make(kind, std::move(a), std::move(b));
    }
    if (t.type == Token::Type::kIdent && !IsIdent("true") && !IsIdent("false")) {
      NodePtr n = Make(Kind::kSymbol);
      n->name = t.text;
      ++pos_;
      return n;
    }
    if (Accept("(")) {
      NodePtr e = Expr();
      if (!e || !Accept(")")) return nullptr;
      return e;
    }
    return nullptr;
  }

  NodePtr Or() {
    DepthGuard guard(this);
    if (too_deep_) return nullptr;
    NodePtr lhs = And();
    while (lhs && Accept("||")) {
      NodePtr rhs = And();
      if (!rhs) return nullptr;
      lhs = Make(Kind::kOr, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  NodePtr And() {
    NodePtr lhs = Unary();
    while (lhs && Accept("&&")) {
      NodePtr rhs = Unary();
      if (!rhs) return nullptr;
      lhs = Make(Kind::kAnd, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  // '(' opens either an expression (`(a + 1) * 2 < b`) or a predicate
  // (`(a < b)`); no text is both, so trying the comparison first and the
  // parenthesized predicate second accepts exactly the grammar.
  NodePtr Unary() {
    DepthGuard guard(this);
    if (too_deep_) return nullptr;
    if (Accept("!")) {
      NodePtr p = Unary();
      return p ? Make(Kind::kNot, std::move(p)) : nullptr;
    }
    if (IsIdent("true") || IsIdent("false")) {
      Kind kind = IsIdent("true") ? Kind::kTrue : Kind::kFalse;
      ++pos_;
      return Make(kind);
    }
    const size_t start = pos_;
    if (NodePtr comparison = Comparison()) return comparison;
    if (too_deep_) return nullptr;
    pos_ = start;
    if (!Accept("(")) return nullptr;
    NodePtr inner = Or();
    if (!inner || !Accept(")")) return nullptr;
    return inner;
  }

  NodePtr Comparison() {
    NodePtr lhs = Expr();
    if (!lhs) return nullptr;
    static constexpr std::pair<const char*, Kind> kOps[] = {
        {"==", Kind::kEq}, {"!=", Kind::kNe}, {"<=", Kind::kLe},
        {">=", Kind::kGe}, {"<", Kind::kLt},  {">", Kind::kGt}};
    for (const auto& [op, kind] : kOps) {
      if (!Accept(op)) continue;
      NodePtr rhs = Expr();
      if (!rhs) return nullptr;
      return Make(kind, std::move(lhs), std::move(rhs));
    }
    return nullptr;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool too_deep_ = false;
};

RefParse Parse(absl::string_view text, bool predicate) {
  std::optional<std::vector<Token>> tokens = Tokenize(text);
  if (!tokens) return {};
  return ReferenceParser(*std::move(tokens)).Whole(predicate);
}

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// Floor division and modulo written out from their definition
// (a == b * q + r, r has the sign of b), independent of shapes/.
std::optional<int64_t> FloorDivide(int64_t a, int64_t b) {
  if (b == 0 || (a == kInt64Min && b == -1)) return std::nullopt;
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

std::optional<int64_t> FloorModulo(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace

RefParse ParseReferenceExpr(absl::string_view text) { return Parse(text, /*predicate=*/false); }
RefParse ParseReferencePredicate(absl::string_view text) { return Parse(text, /*predicate=*/true); }

std::optional<int64_t> EvaluateReferenceExpr(const RefNode& node, const Assignment& values) {
  switch (node.kind) {
    case Kind::kInt:
      return node.value;
    case Kind::kSymbol: {
      auto it = values.find(node.name);
      if (it == values.end()) return std::nullopt;
      return it->second;
    }
    case Kind::kNeg: {
      std::optional<int64_t> v = EvaluateReferenceExpr(*node.operands[0], values);
      if (!v || *v == kInt64Min) return std::nullopt;
      return -*v;
    }
    default:
      break;
  }
  if (node.operands.size() != 2) return std::nullopt;  // a predicate node
  std::optional<int64_t> a = EvaluateReferenceExpr(*node.operands[0], values);
  std::optional<int64_t> b = EvaluateReferenceExpr(*node.operands[1], values);
  if (!a || !b) return std::nullopt;
  int64_t r = 0;
  switch (node.kind) {
    case Kind::kAdd:
      if (__builtin_add_overflow(*a, *b, &r)) return std::nullopt;
      return r;
    case Kind::kSub:
      if (__builtin_sub_overflow(*a, *b, &r)) return std::nullopt;
      return r;
    case Kind::kMul:
      if (__builtin_mul_overflow(*a, *b, &r)) return std::nullopt;
      return r;
    case Kind::kFloorDiv: return FloorDivide(*a, *b);
    case Kind::kMod: return FloorModulo(*a, *b);
    case Kind::kMin: return std::min(*a, *b);
    case Kind::kMax: return std::max(*a, *b);
    default: return std::nullopt;
  }
}

std::optional<bool> EvaluateReferencePredicate(const RefNode& node, const Assignment& values) {
  switch (node.kind) {
    case Kind::kTrue: return true;
    case Kind::kFalse: return false;
    case Kind::kNot: {
      std::optional<bool> v = EvaluateReferencePredicate(*node.operands[0], values);
      if (!v) return std::nullopt;
      return !*v;
    }
    case Kind::kAnd:
    case Kind::kOr: {
      std::optional<bool> a = EvaluateReferencePredicate(*node.operands[0], values);
      std::optional<bool> b = EvaluateReferencePredicate(*node.operands[1], values);
      if (!a || !b) return std::nullopt;
      return node.kind == Kind::kAnd ? (*a && *b) : (*a || *b);
    }
    default:
      break;
  }
  std::optional<int64_t> a = EvaluateReferenceExpr(*node.operands[0], values);
  std::optional<int64_t> b = EvaluateReferenceExpr(*node.operands[1], values);
  if (!a || !b) return std::nullopt;
  switch (node.kind) {
    case Kind::kEq: return *a == *b;
    case Kind::kNe: return *a != *b;
    case Kind::kLt: return *a < *b;
    case Kind::kLe: return *a <= *b;
    case Kind::kGt: return *a > *b;
    case Kind::kGe: return *a >= *b;
    default: return std::nullopt;
  }
}

void CollectReferenceSymbols(const RefNode& node, absl::btree_set<std::string>* out) {
  if (node.kind == Kind::kSymbol) out->insert(node.name);
  for (const auto& child : node.operands) CollectReferenceSymbols(*child, out);
}

}  // namespace shapeshift::fuzz
