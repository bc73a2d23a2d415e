#include "codegen/kernel_visitor.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/kernel_library.h"
#include "codegen/kernel_print.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codegen/test_util.h"

namespace shapeshift::codegen {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Names the Visit* each node reaches, with the decoded op.
class KindNamer final : public ValueVisitor<std::string> {
  std::string VisitConst(const ValueNode&) override { return "const"; }
  std::string VisitLoad(const ValueNode&) override { return "load"; }
  std::string VisitLoadAt(const ValueNode&) override { return "load-at"; }
  std::string VisitIndex(const ValueNode&) override { return "index"; }
  std::string VisitVar(const ValueNode&) override { return "var"; }
  std::string VisitUnary(const ValueNode&, UnaryOp op) override { return absl::StrCat("unary ", UnaryOpName(op)); }
  std::string VisitBinary(const ValueNode&, BinaryOp op) override {
    return absl::StrCat("binary ", BinaryOpName(op));
  }
  std::string VisitCompare(const ValueNode&, CompareOp op) override {
    return absl::StrCat("compare ", CompareOpName(op));
  }
  std::string VisitSelect(const ValueNode&) override { return "select"; }
  std::string VisitCast(const ValueNode&) override { return "cast"; }
  std::string VisitInvalid(const ValueNode& v) override { return absl::StrCat("invalid ", static_cast<int>(v.kind)); }
};

class StmtNamer final : public StmtVisitor<std::string, int> {
  std::string VisitLoop(const Stmt&, int depth) override { return absl::StrCat("loop ", depth); }
  std::string VisitStore(const Stmt&, int depth) override { return absl::StrCat("store ", depth); }
  std::string VisitStoreAt(const Stmt&, int depth) override { return absl::StrCat("store-at ", depth); }
  std::string VisitLet(const Stmt&, int depth) override { return absl::StrCat("let ", depth); }
  std::string VisitAccumulator(const Stmt&, int depth) override { return absl::StrCat("accumulator ", depth); }
  std::string VisitAccumulate(const Stmt&, int depth) override { return absl::StrCat("accumulate ", depth); }
  std::string VisitInvalid(const Stmt& s, int depth) override {
    return absl::StrCat("invalid ", static_cast<int>(s.kind));
  }
};

// One value of every ValueKind, in enum order.
std::vector<Value> OneOfEachKind() {
  BufferRef x{0, ScalarType::kF32};
  SymExpr p = SymExpr::Symbol("p");
  Value load = Load(x, p);
  return {F32(1),
          load,
          LoadAt(x, I64(3)),
          IndexValue(p),
          Var("acc", ScalarType::kF32),
          Unary(UnaryOp::kTanh, load),
          Binary(BinaryOp::kRem, load, load),
          Compare(CompareOp::kGe, load, load),
          Select(Compare(CompareOp::kLt, load, load), load, load),
          Cast(ScalarType::kI32, load)};
}

TEST(KernelVisitorTest, EveryValueKindReachesItsOwnVisit) {
  KindNamer namer;
  std::vector<std::string> names;
  for (const Value& v : OneOfEachKind()) names.push_back(namer.Visit(*v));
  EXPECT_THAT(names, ElementsAre("const", "load", "load-at", "index", "var", "unary tanh", "binary rem",
                                 "compare >=", "select", "cast"));
  // The last enumerator is the last kind listed: a kind appended to
  // ValueKind must be added above (and to KindNamer, which otherwise does
  // not compile).
  EXPECT_EQ(static_cast<int>(ValueKind::kCast) + 1, static_cast<int>(names.size()));
  ValueNode corrupt;
  corrupt.kind = static_cast<ValueKind>(77);
  EXPECT_EQ(namer.Visit(corrupt), "invalid 77");
}

TEST(KernelVisitorTest, EveryStmtKindReachesItsOwnVisit) {
  BufferRef y{0, ScalarType::kF32};
  std::vector<Stmt> stmts = {Loop("j", 0, 4, {}),  Store(y, 0, F32(1)),           StoreAt(y, I64(0), F32(1)),
                             Let("e", F32(1)),     Accumulator("acc", F32(0)), Accumulate("acc", ReduceOp::kSum, F32(1))};
  StmtNamer namer;
  std::vector<std::string> names;
  for (const Stmt& s : stmts) names.push_back(namer.Visit(s, 3));
  EXPECT_THAT(names, ElementsAre("loop 3", "store 3", "store-at 3", "let 3", "accumulator 3", "accumulate 3"));
  EXPECT_EQ(static_cast<int>(StmtKind::kAccumulate) + 1, static_cast<int>(names.size()));
  Stmt corrupt;
  corrupt.kind = static_cast<StmtKind>(99);
  EXPECT_EQ(namer.Visit(corrupt, 0), "invalid 99");
}

// Evaluates an f32 value with x[p] = `x`: a fold that needs its operands'
// results, and counts the nodes it computes.
class Evaluator final : public ValueFold<double> {
 public:
  explicit Evaluator(double x) : x_(x) {}
  int visits = 0;
  std::vector<int> readers;  // AfterNode's count per node, in visiting order

 private:
  using Ops = absl::Span<double>;
  double NullOperand() override { return 0; }
  double AfterNode(const ValueNode&, double result, int r) override {
    readers.push_back(r);
    return result;
  }
  double VisitConst(const ValueNode& v, Ops) override { return ++visits, v.f_value; }
  double VisitLoad(const ValueNode&, Ops) override { return ++visits, x_; }
  double VisitLoadAt(const ValueNode&, Ops) override { return ++visits, x_; }
  double VisitIndex(const ValueNode&, Ops) override { return ++visits, 0; }
  double VisitVar(const ValueNode&, Ops) override { return ++visits, 0; }
  double VisitUnary(const ValueNode&, UnaryOp op, Ops o) override { return ++visits, op == UnaryOp::kNeg ? -o[0] : o[0]; }
  double VisitBinary(const ValueNode&, BinaryOp op, Ops o) override {
    ++visits;
    switch (op) {
      case BinaryOp::kAdd: return o[0] + o[1];
      case BinaryOp::kSub: return o[0] - o[1];
      case BinaryOp::kMul: return o[0] * o[1];
      default: return 0;  // not in the values this test builds
    }
  }
  double VisitCompare(const ValueNode&, CompareOp, Ops o) override { return ++visits, o[0] < o[1]; }
  double VisitSelect(const ValueNode&, Ops o) override { return ++visits, o[0] != 0 ? o[1] : o[2]; }
  double VisitCast(const ValueNode&, Ops o) override { return ++visits, o[0]; }
  double x_;
};

// 60 steps of v = v*v - v: 2^60 nodes as a tree, 121 as a DAG.
TEST(KernelVisitorTest, AFoldVisitsEachNodeOfASharedChainOnce) {
  Kernel k = testing::SharedChainKernel(60);
  const Value& v = k.body[0].value;
  ASSERT_EQ(PostOrder(v).size(), 121u);
  Evaluator eval(0.3);
  double got = eval.Fold(v);
  EXPECT_EQ(eval.visits, 121);
  EXPECT_FLOAT_EQ(static_cast<float>(got), testing::SharedChainReference(60, 0.3f));
  // Each step's value is read three times (twice by its product, once by
  // the difference); x[p] likewise; the root by nobody.
  ASSERT_EQ(eval.readers.size(), 121u);
  EXPECT_EQ(eval.readers.front(), 3);
  EXPECT_EQ(eval.readers.back(), 0);
}

// Operand texts move into a reader that is their only one and are copied
// for a shared node, so a long unshared chain and a shared one both come
// out right.
class Texts final : public ValueFold<std::string> {
  using Ops = absl::Span<std::string>;
  std::string NullOperand() override { return "null"; }
  std::string VisitConst(const ValueNode& v, Ops) override { return absl::StrCat(v.f_value); }
  std::string VisitLoad(const ValueNode&, Ops) override { return "x"; }
  std::string VisitLoadAt(const ValueNode&, Ops o) override { return absl::StrCat("x[", o[0], "]"); }
  std::string VisitIndex(const ValueNode&, Ops) override { return "i"; }
  std::string VisitVar(const ValueNode& v, Ops) override { return v.name; }
  std::string VisitUnary(const ValueNode&, UnaryOp op, Ops o) override {
    return absl::StrCat(UnaryOpName(op), "(", o[0], ")");
  }
  std::string VisitBinary(const ValueNode&, BinaryOp op, Ops o) override {
    return absl::StrCat("(", o[0], BinaryOpName(op), o[1], ")");
  }
  std::string VisitCompare(const ValueNode&, CompareOp op, Ops o) override {
    return absl::StrCat("(", o[0], CompareOpName(op), o[1], ")");
  }
  std::string VisitSelect(const ValueNode&, Ops o) override { return absl::StrJoin(o, "?"); }
  std::string VisitCast(const ValueNode&, Ops o) override { return absl::StrCat("cast(", o[0], ")"); }
};

TEST(KernelVisitorTest, AFoldPassesOperandResultsInOrder) {
  BufferRef x{0, ScalarType::kF32};
  Value a = Load(x, SymExpr::Symbol("p"));
  Value e = Exp(a - F32(2));
  EXPECT_EQ(Texts().Fold(e * e + Unary(UnaryOp::kNeg, a)), "((exp((x-2))*exp((x-2)))+neg(x))");
  Value broken = std::make_shared<const ValueNode>(ValueNode{ValueKind::kBinary, ScalarType::kF32, 0, 0, -1, 0, "",
                                                             static_cast<uint8_t>(BinaryOp::kAdd), {a, nullptr}});
  EXPECT_EQ(Texts().Fold(broken), "(x+null)");
  EXPECT_EQ(Texts().Fold(nullptr), "null");
}

TEST(KernelVisitorTest, FoldDagWithoutDispatchCountsTreeSize) {
  // The tree size of a shared chain, computed on the DAG.
  Kernel k = testing::SharedChainKernel(20);
  int calls = 0;
  int64_t tree = FoldDag<int64_t>(k.body[0].value, 0, [&](const ValueNode&, absl::Span<int64_t> ops, int) {
    ++calls;
    int64_t n = 1;
    for (int64_t o : ops) n += o;
    return n;
  });
  EXPECT_EQ(calls, 41);
  // v(k+1) = v(k)*v(k) - v(k): t(k+1) = 1 + (1 + 2 t(k)) + t(k), t(0) = 1.
  int64_t want = 1;
  for (int i = 0; i < 20; ++i) want = 3 * want + 2;
  EXPECT_EQ(tree, want);
}

TEST(KernelVisitorTest, LibraryKernelsPrintAndVerifyThroughTheBases) {
  for (const Kernel& k : {SoftmaxKernel(0.125f), LayerNormKernel(1e-5f), BiasGeluKernel(GeluForm::kTanh),
                          BiasResidualKernel(), Transpose0213Kernel()}) {
    EXPECT_TRUE(Verify(k).ok()) << Verify(k);
    EXPECT_THAT(Print(k), HasSubstr("kernel " + k.name + "("));
  }
}

TEST(KernelVisitorTest, VerifyRejectsAValueOfNoKind) {
  Kernel k;
  k.name = "corrupt";
  BufferRef y = k.AddOutput("y");
  k.parallel_extent = k.AddDim("n");
  auto node = std::make_shared<ValueNode>();
  node->kind = static_cast<ValueKind>(42);
  k.body = {Store(y, k.ParallelVar(), node)};
  absl::Status s = Verify(k);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("in `y[p] = <?>`: `<?>`: unknown value kind 42"));
  Stmt bad;
  bad.kind = static_cast<StmtKind>(9);
  k.body = {bad};
  EXPECT_THAT(std::string(Verify(k).message()), HasSubstr("in `<?>`: unknown statement kind"));
}

}  // namespace
}  // namespace shapeshift::codegen
