// An independent reading of the shape-expression text: a second parser for
// the grammar shapes/parser.cc documents, whose tree is evaluated exactly as
// written (no canonicalization, no simplification, every operation checked).
//
// Why a second parser: ParseSymExpr/ParsePredicate build canonical forms as
// they parse, so "the original" an input means is only available by reading
// the text again without the canonicalizer. The fuzz checks compare the two
// on concrete assignments; wherever both evaluate without error they must
// agree. Evaluation is strict (an error anywhere is an error, like
// Predicate::Evaluate's no-short-circuit rule), so agreement is required
// exactly where the written formula has one meaning.
#ifndef SHAPESHIFT_TESTS_FUZZ_CHECKS_REFERENCE_EXPR_H_
#define SHAPESHIFT_TESTS_FUZZ_CHECKS_REFERENCE_EXPR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/strings/string_view.h"
#include "shapes/sym_expr.h"

namespace shapeshift::fuzz {

struct RefNode {
  enum class Kind {
    // integer expressions
    kInt, kSymbol, kNeg, kAdd, kSub, kMul, kFloorDiv, kMod, kMin, kMax,
    // predicates
    kTrue, kFalse, kEq, kNe, kLt, kLe, kGt, kGe, kAnd, kOr, kNot,
  };
  Kind kind = Kind::kInt;
  int64_t value = 0;  // kInt
  std::string name;   // kSymbol
  std::vector<std::unique_ptr<RefNode>> operands;
};

struct RefParse {
  enum class Outcome {
    kParsed,    // `root` holds the tree
    kRejected,  // not in the grammar
    kTooDeep,   // nesting beyond kMaxDepth: the reference gives no opinion
  };
  Outcome outcome = Outcome::kRejected;
  std::unique_ptr<RefNode> root;
};

// Nesting the reference parser follows before giving up (kTooDeep), so the
// reference itself never exhausts the stack on hostile input.
inline constexpr int kMaxReferenceDepth = 200;

RefParse ParseReferenceExpr(absl::string_view text);
RefParse ParseReferencePredicate(absl::string_view text);

// std::nullopt on division by zero, int64 overflow or an unbound symbol.
std::optional<int64_t> EvaluateReferenceExpr(const RefNode& node, const Assignment& values);
std::optional<bool> EvaluateReferencePredicate(const RefNode& node, const Assignment& values);

void CollectReferenceSymbols(const RefNode& node, absl::btree_set<std::string>* out);

}  // namespace shapeshift::fuzz

#endif  // SHAPESHIFT_TESTS_FUZZ_CHECKS_REFERENCE_EXPR_H_
