// Limits found by fuzzing (reproducers in tests/fuzz/corpus/): an
// initializer's declared size is checked against its data before anything
// is allocated, and the shape parsers bound their nesting instead of
// recursing until the stack runs out.
#include <string>

#include "gmock/gmock.h"
#include "graph/onnx/importer.h"
#include "gtest/gtest.h"
#include "shapes/predicate.h"
#include "shapes/sym_expr.h"
#include "tests/graph/onnx_test_model.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;
using testing::OnnxTestModel;

// An 87-byte model whose initializer declares f32[2^33] (32 GiB) and
// carries no data.
TEST(SizeAndNestingLimitsTest, InitializerDimsAreCheckedAgainstItsDataBeforeAllocating) {
  OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"1"});
  m.FloatInitializer("w", {int64_t{1} << 33}, {});
  m.Node("Add", {"x", "w"}, {"y"}, "add");
  m.Output("y", onnx::TensorProto::FLOAT, {""});
  // With the checker off, the importer's own size check is what stands.
  ImportOptions unchecked;
  unchecked.run_checker = false;
  absl::StatusOr<ImportedModel> model = ImportOnnxBytes(m.Bytes(), unchecked);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("'w'"));
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("8589934592"));
  EXPECT_FALSE(ImportOnnxBytes(m.Bytes()).ok());
}

// Unbounded recursion overflowed the stack from ~8000 levels (ASan build).
TEST(SizeAndNestingLimitsTest, DeepNestingIsAnErrorNotAStackOverflow) {
  const int depth = 100000;
  absl::StatusOr<SymExpr> e =
      ParseSymExpr(std::string(depth, '(') + "a" + std::string(depth, ')'));
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("nesting deeper than"));
  absl::StatusOr<SymExpr> neg = ParseSymExpr(std::string(depth, '-') + "a");
  ASSERT_FALSE(neg.ok());
  EXPECT_THAT(std::string(neg.status().message()), HasSubstr("nesting deeper than"));
  absl::StatusOr<Predicate> p = ParsePredicate(std::string(depth, '!') + "a < b");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("nesting deeper than"));
  // Moderate nesting still parses.
  EXPECT_TRUE(ParseSymExpr(std::string(50, '(') + "a" + std::string(50, ')')).ok());
}

}  // namespace
}  // namespace shapeshift
