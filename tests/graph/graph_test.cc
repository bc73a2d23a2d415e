// Tests for graph/graph.cc: SSA bookkeeping (producers, uses), rewriting
// helpers, topological order, the verifier and the printer.
#include "graph/graph.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shapeshift {
namespace {

using ::testing::HasSubstr;

TensorType F32(std::vector<SymExpr> shape) { return TensorType(DType::kF32, std::move(shape)); }

TEST(TensorTypeTest, PrintsSymbolicShape) {
  SymExpr batch = SymExpr::Symbol("batch"), seq = SymExpr::Symbol("seq");
  TensorType t = F32({batch, seq, 768});
  EXPECT_EQ(t.ToString(), "f32[batch, seq, 768]");
  EXPECT_EQ(TensorType(DType::kI64, {}).ToString(), "i64[]");
  EXPECT_FALSE(t.IsStatic());
  EXPECT_EQ(t.NumElements(), batch * seq * 768);
  auto dims = t.Evaluate({{"batch", 2}, {"seq", 5}});
  ASSERT_TRUE(dims.ok());
  EXPECT_EQ(*dims, (std::vector<int64_t>{2, 5, 768}));
  EXPECT_FALSE(t.Evaluate({{"batch", 2}}).ok());
}

TEST(GraphTest, TracksProducersAndUses) {
  Graph g(17);
  Value* x = g.AddInput("x", F32({SymExpr::Symbol("n")}));
  Node* relu = g.AddNode("Relu", {x}, 1);
  Node* add = g.AddNode("Add", {relu->output(0), x}, 1, {}, "add");
  g.AddOutput(add->output(0));
  EXPECT_EQ(relu->output(0)->producer(), relu);
  EXPECT_EQ(x->producer(), nullptr);
  EXPECT_TRUE(x->is_graph_input());
  ASSERT_EQ(x->uses().size(), 2u);
  EXPECT_EQ(x->uses()[0], (Use{relu, 0}));
  EXPECT_EQ(x->uses()[1], (Use{add, 1}));
  EXPECT_EQ(g.FindNode("add"), add);
  EXPECT_EQ(g.FindValue("x"), x);
  EXPECT_TRUE(g.Verify().ok());
}

TEST(GraphTest, ConstantsCarrySmallIntegerElements) {
  Graph g;
  Value* c = g.AddConstant("shape", Tensor::FromVector<int64_t>(DType::kI64, {2}, {4, -1}));
  ASSERT_TRUE(c->elements().has_value());
  EXPECT_EQ(*c->elements(), (std::vector<SymExpr>{4, -1}));
  EXPECT_EQ(c->type().ToString(), "i64[2]");
  Value* w = g.AddConstant("w", Tensor::FromVector<float>(DType::kF32, {2}, {1.f, 2.f}));
  EXPECT_FALSE(w->elements().has_value());
  EXPECT_EQ(g.constants().size(), 2u);
}

TEST(GraphTest, ReplaceAllUsesAndRemoveNode) {
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Node* id = g.AddNode("Identity", {x}, 1);
  Node* neg = g.AddNode("Neg", {id->output(0)}, 1);
  g.AddOutput(id->output(0));
  g.AddOutput(neg->output(0));
  EXPECT_THAT(g.RemoveNode(id).message(), HasSubstr("still used"));
  g.ReplaceAllUsesWith(id->output(0), x);
  EXPECT_EQ(neg->input(0), x);
  EXPECT_EQ(g.outputs()[0], x);
  ASSERT_TRUE(g.RemoveNode(id).ok());
  EXPECT_EQ(g.num_nodes(), 1);
  EXPECT_EQ(x->uses().size(), 1u);
  EXPECT_TRUE(g.Verify().ok()) << g.Verify();
}

TEST(GraphTest, RemoveNodeRefusesGraphOutputs) {
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Node* n = g.AddNode("Neg", {x}, 1);
  g.AddOutput(n->output(0));
  EXPECT_THAT(g.RemoveNode(n).message(), HasSubstr("graph output"));
}

TEST(GraphTest, TopologicalSortRestoresOrderAfterRewiring) {
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Node* a = g.AddNode("Neg", {x}, 1, {}, "a");
  Node* b = g.AddNode("Abs", {x}, 1, {}, "b");
  g.AddOutput(a->output(0));
  a->SetInput(0, b->output(0));  // a now reads a later node
  EXPECT_THAT(g.Verify().message(), HasSubstr("not defined before"));
  ASSERT_TRUE(g.TopologicalSort().ok());
  std::vector<Node*> order = g.nodes();
  EXPECT_EQ(order[0], b);
  EXPECT_EQ(order[1], a);
  EXPECT_TRUE(g.Verify().ok());
}

// 50,000 nodes whose dependencies run exactly against the current order
// (node i reads node i+1): the sort reverses them, and independent nodes
// keep their order. (The sort used to rescan the list per node: O(n^2).)
TEST(GraphTest, TopologicalSortOfALongChainWiredBackwards) {
  constexpr int kLength = 50000;
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  std::vector<Node*> chain;
  // Each reads its own placeholder, so the rewiring below is O(1) per node.
  for (int i = 0; i < kLength; ++i) chain.push_back(g.AddNode("Neg", {g.AddConstant("", Tensor::Scalar(0.0f))}, 1));
  Node* independent = g.AddNode("Abs", {x}, 1, {}, "independent");
  for (int i = 0; i + 1 < kLength; ++i) chain[i]->SetInput(0, chain[i + 1]->output(0));
  chain.back()->SetInput(0, x);
  g.RemoveUnusedConstants();
  g.AddOutput(chain[0]->output(0));
  g.AddOutput(independent->output(0));
  ASSERT_TRUE(g.TopologicalSort().ok());
  std::vector<Node*> order = g.nodes();
  ASSERT_EQ(order.size(), static_cast<size_t>(kLength + 1));
  for (int i = 0; i < kLength; ++i) ASSERT_EQ(order[i], chain[kLength - 1 - i]) << i;
  EXPECT_EQ(order.back(), independent);
  EXPECT_TRUE(g.Verify().ok());
}

// A value read 50,000 times is replaced in one pass (this used to search
// and erase in the use list once per use).
TEST(GraphTest, ReplaceAllUsesWithAWidelyReadValue) {
  constexpr int kReaders = 50000;
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Value* y = g.AddInput("y", F32({4}));
  std::vector<Node*> readers;
  for (int i = 0; i < kReaders; ++i) readers.push_back(g.AddNode("Add", {x, i % 2 ? x : y}, 1));
  g.AddOutput(x);
  g.ReplaceAllUsesWith(x, y);
  EXPECT_TRUE(x->uses().empty());
  EXPECT_EQ(y->uses().size(), static_cast<size_t>(2 * kReaders));  // both inputs of every reader
  for (Node* n : readers) {
    EXPECT_EQ(n->input(0), y);
    EXPECT_EQ(n->input(1), y);
  }
  EXPECT_EQ(g.outputs()[0], y);
  EXPECT_TRUE(g.Verify().ok()) << g.Verify();
}

TEST(GraphTest, TopologicalSortReportsCycles) {
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Node* a = g.AddNode("Neg", {x}, 1, {}, "a");
  Node* b = g.AddNode("Abs", {a->output(0)}, 1, {}, "b");
  a->SetInput(0, b->output(0));
  absl::Status s = g.TopologicalSort();
  EXPECT_THAT(s.message(), HasSubstr("cycle"));
}

TEST(GraphTest, GeneratedNamesAreUnique) {
  Graph g;
  Value* x = g.AddInput("x", F32({4}));
  Value* x2 = g.AddInput("x", F32({4}));
  EXPECT_NE(x->name(), x2->name());
  EXPECT_TRUE(g.Verify().ok());
}

TEST(GraphTest, CloneIsDeepAndPrintsTheSame) {
  Graph g(13);
  Value* x = g.AddInput("x", F32({SymExpr::Symbol("n"), 4}));
  Value* shape = g.AddConstant("shape", Tensor::FromVector<int64_t>(DType::kI64, {1}, {-1}));
  Node* r = g.AddNode("Reshape", {x, shape}, 1, {}, "r", {"y"});
  r->output(0)->set_type(F32({4 * SymExpr::Symbol("n")}));
  g.AddOutput(r->output(0));
  std::unique_ptr<Graph> copy = g.Clone();
  EXPECT_EQ(copy->ToString(), g.ToString());
  EXPECT_TRUE(copy->Verify().ok()) << copy->Verify();
  Node* copied = copy->FindNode("r");
  ASSERT_NE(copied, nullptr);
  EXPECT_NE(copied, r);
  EXPECT_EQ(copied->input(0), copy->inputs()[0]);
  ASSERT_TRUE(copy->FindValue("shape")->elements().has_value());
  // Rewriting the copy leaves the original alone.
  copy->ReplaceAllUsesWith(copied->output(0), copy->inputs()[0]);
  ASSERT_TRUE(copy->RemoveNode(copied).ok());
  EXPECT_EQ(g.num_nodes(), 1);
  EXPECT_EQ(g.outputs()[0], r->output(0));
}

TEST(GraphTest, PrinterShowsTypesAttributesAndValues) {
  Graph g(14);
  SymExpr batch = SymExpr::Symbol("batch");
  Value* x = g.AddInput("x", F32({batch, 8}));
  Attributes attrs;
  attrs.Set("perm", std::vector<int64_t>{1, 0});
  Node* t = g.AddNode("Transpose", {x}, 1, attrs, "tr", {"y"});
  t->output(0)->set_type(F32({8, batch}));
  g.AddOutput(t->output(0));
  std::string text = g.ToString();
  EXPECT_THAT(text, HasSubstr("graph opset=14 {"));
  EXPECT_THAT(text, HasSubstr("input  %x: f32[batch, 8]"));
  EXPECT_THAT(text, HasSubstr("%y: f32[8, batch] = Transpose(%x) {perm=[1, 0]}  # tr"));
  EXPECT_THAT(text, HasSubstr("output %y"));
}

}  // namespace
}  // namespace shapeshift
