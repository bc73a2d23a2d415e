#include "codegen/kernel_ir.h"

#include "codegen/kernel_library.h"
#include "codegen/kernel_print.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen {
namespace {

using ::testing::HasSubstr;

Kernel ScaleKernel(const std::string& name, double factor) {
  Kernel k;
  k.name = name;
  BufferRef x = k.AddInput("x");
  BufferRef y = k.AddOutput("y");
  SymExpr n = k.AddDim("n");
  k.parallel_extent = n;
  k.body = {Store(y, k.ParallelVar(), Load(x, k.ParallelVar()) * F32(factor))};
  return k;
}

TEST(KernelIrTest, LibraryKernelsVerify) {
  EXPECT_TRUE(Verify(SoftmaxKernel(0.125f)).ok());
  EXPECT_TRUE(Verify(LayerNormKernel(1e-12f)).ok());
  EXPECT_TRUE(Verify(BiasGeluKernel(GeluForm::kErf)).ok());
  EXPECT_TRUE(Verify(BiasGeluKernel(GeluForm::kTanh)).ok());
  EXPECT_TRUE(Verify(BiasResidualKernel()).ok());
  EXPECT_TRUE(Verify(Transpose0213Kernel()).ok());
}

TEST(KernelIrTest, PrintShowsSignatureLoopsAndReductions) {
  std::string text = Print(SoftmaxKernel(1.0f));
  EXPECT_THAT(text, HasSubstr("kernel softmax_masked(in x: f32, in mask: f32, out y: f32) dims(rows, n, group)"));
  EXPECT_THAT(text, HasSubstr("parallel p in [0, rows):"));
  EXPECT_THAT(text, HasSubstr("acc row_max = -inf"));
  EXPECT_THAT(text, HasSubstr("for j in [0, n):"));
  EXPECT_THAT(text, HasSubstr("row_max = max(row_max, "));
  EXPECT_THAT(text, HasSubstr("row_sum = sum(row_sum, e)"));
}

// 60 steps: 2^60 nodes as a tree. Every walk visits the 121 distinct nodes.
TEST(KernelIrTest, ASharedSubexpressionIsWalkedAndPrintedOnce) {
  using testing::SharedChainKernel;
  Kernel k = SharedChainKernel(60);
  EXPECT_TRUE(Verify(k).ok()) << Verify(k);
  std::string text = Print(k);
  EXPECT_LT(text.size(), 10000u) << "printed as a tree";
  // Leaves (x[p]) are repeated; each shared inner node is named once.
  EXPECT_THAT(text, HasSubstr("y[p] = (($58 * $58) - $58) where $0 = ((x[p] * x[p]) - x[p]); $1 = (($0 * $0) - $0); "));
  EXPECT_TRUE(StructurallyEqual(k, SharedChainKernel(60, "renamed")));
  EXPECT_EQ(StructuralHash(k), StructuralHash(SharedChainKernel(60, "renamed")));
  EXPECT_FALSE(StructurallyEqual(k, SharedChainKernel(61)));
  // Sharing is not identity: the same expression built as a tree is equal.
  BufferRef x{0, ScalarType::kF32};
  Value a = Load(x, k.ParallelVar()), b = Load(x, k.ParallelVar());
  Kernel tree = SharedChainKernel(0);
  tree.body[0].value = (a * b) - Load(x, k.ParallelVar());
  Kernel dag = SharedChainKernel(1);
  EXPECT_TRUE(StructurallyEqual(tree, dag));
  EXPECT_EQ(StructuralHash(tree), StructuralHash(dag));
  // Without sharing the text is what it always was.
  EXPECT_EQ(PrintStmtLine(tree, tree.body[0]), "y[p] = ((x[p] * x[p]) - x[p])");
}

TEST(KernelIrTest, StructuralIdentityIgnoresNames) {
  Kernel a = LayerNormKernel(1e-5f);
  Kernel b = LayerNormKernel(1e-5f);
  b.name = "encoder_layer_7_ln";
  b.buffers[0].name = "hidden";
  EXPECT_TRUE(StructurallyEqual(a, b));
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
}

TEST(KernelIrTest, StructuralIdentitySeesConstantsAndTypes) {
  EXPECT_FALSE(StructurallyEqual(LayerNormKernel(1e-5f), LayerNormKernel(1e-12f)));
  EXPECT_FALSE(StructurallyEqual(ScaleKernel("s", 2.0), ScaleKernel("s", 3.0)));
  Kernel i64 = ScaleKernel("s", 2.0);
  i64.buffers[1].role = BufferRole::kInput;
  EXPECT_FALSE(StructurallyEqual(ScaleKernel("s", 2.0), i64));
  EXPECT_FALSE(StructurallyEqual(BiasGeluKernel(GeluForm::kErf), BiasGeluKernel(GeluForm::kTanh)));
}

TEST(KernelIrTest, VerifyRejectsUnknownSymbolInIndex) {
  Kernel k = ScaleKernel("bad_index", 2.0);
  k.body = {Store(BufferRef{1, ScalarType::kF32}, SymExpr::Symbol("q"), F32(1))};
  absl::Status s = Verify(k);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("kernel 'bad_index'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("'q'"));
}

TEST(KernelIrTest, VerifyRejectsStoreIntoInput) {
  Kernel k = ScaleKernel("store_input", 2.0);
  k.body = {Store(BufferRef{0, ScalarType::kF32}, k.ParallelVar(), F32(1))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("'x' is an input"));
}

TEST(KernelIrTest, VerifyRejectsTypeErrors) {
  Kernel k = ScaleKernel("types", 2.0);
  BufferRef y{1, ScalarType::kF32};
  k.body = {Store(y, k.ParallelVar(), F32(1) + I64(2))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("operand types differ"));
  k.body = {Store(y, k.ParallelVar(), Cast(ScalarType::kF32, Exp(I64(1))))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("math functions take f32"));
  k.body = {Store(y, k.ParallelVar(), Select(F32(1), F32(1), F32(2)))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("condition must be bool"));
  k.body = {Store(y, k.ParallelVar(), I64(3))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("stores i64 into f32 buffer 'y'"));
  k.body = {Store(y, k.ParallelVar(), Cast(ScalarType::kF32, Unary(UnaryOp::kFloor, I64(4))))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("math functions take f32"));
  // Integer division and remainder are defined (they never trap: see kernel_ir.h).
  k.body = {Store(y, k.ParallelVar(), Cast(ScalarType::kF32, I64(4) / I64(2) + Binary(BinaryOp::kRem, I64(4), I64(0))))};
  EXPECT_TRUE(Verify(k).ok()) << Verify(k);
}

TEST(KernelIrTest, VerifyChecksScopesOfLetsAndAccumulators) {
  Kernel k = ScaleKernel("scopes", 2.0);
  BufferRef y{1, ScalarType::kF32};
  SymExpr j = SymExpr::Symbol("j");
  // A let declared inside a loop is not visible after it.
  k.body = {Loop("j", 0, 4, {Let("t", F32(1))}), Store(y, k.ParallelVar(), Var("t", ScalarType::kF32))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("'t' is not in scope"));
  // Accumulating into a let is an error.
  k.body = {Let("t", F32(1)), Accumulate("t", ReduceOp::kSum, F32(1))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("not an accumulator"));
  // Redeclaring a name in scope is an error; the loop variable is visible in its body only.
  k.body = {Let("t", F32(1)), Let("t", F32(2))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("already in scope"));
  k.body = {Loop("j", 0, 4, {}), Store(y, j, F32(1))};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("'j'"));
  k.body = {Loop("n", 0, 4, {})};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("already in scope"));
}

TEST(KernelIrTest, VerifyRejectsDuplicateDimsAndMissingBuffers) {
  Kernel k = ScaleKernel("dims", 2.0);
  k.AddDim("n");
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("declared twice"));
  Kernel m = ScaleKernel("buffers", 2.0);
  m.body = {Store(BufferRef{5, ScalarType::kF32}, m.ParallelVar(), F32(1))};
  EXPECT_THAT(std::string(Verify(m).message()), HasSubstr("does not exist"));
}

}  // namespace
}  // namespace shapeshift::codegen
