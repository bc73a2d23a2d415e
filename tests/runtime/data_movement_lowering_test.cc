// Compiled data movement (codegen/lower/lower_indexing.cc) in the forms the
// model zoo exports, beyond the op table's one sample per op: Gather of an
// activation by a scalar (BERT's CLS pick under torch.compile), Gather on an
// inner axis by a runtime index tensor, GatherND with batch_dims,
// GatherElements with indices smaller than the data, ScatterND as a cache
// update, Tile with shape-derived repeats and Trilu with a symbolic diagonal. Each program is compiled once
// over symbolic dims and compared with the interpreter at several shapes;
// indices outside the data fail the request naming the node and the index.
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "graph/interpreter.h"
#include "graph/tensor_compare.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

using ::testing::HasSubstr;
using testing::BuiltModel;
using testing::ModelBuilder;

constexpr char kNode[] = "under_test";

Tensor Floats(std::vector<int64_t> shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return Tensor::FromVector<float>(DType::kF32, shape, v);
}

// Indices in [-dim, dim) (negatives count from the end).
template <typename T>
Tensor Indices(DType dtype, std::vector<int64_t> shape, int64_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(-dim, dim - 1);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(dist(rng));
  return Tensor::FromVector<T>(dtype, shape, v);
}

struct Fixture {
  std::unique_ptr<Graph> reference;
  std::unique_ptr<Session> session;
};

Fixture Compile(BuiltModel model) {
  Fixture f;
  f.reference = model.graph->Clone();
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)));
  EXPECT_TRUE(session.ok()) << session.status();
  if (session.ok()) f.session = *std::move(session);
  return f;
}

void ExpectMatches(Fixture& f, const std::vector<Tensor>& inputs, const std::string& where) {
  ASSERT_NE(f.session, nullptr);
  absl::StatusOr<std::vector<Tensor>> want = Interpret(*f.reference, inputs);
  ASSERT_TRUE(want.ok()) << where << ": " << want.status();
  absl::StatusOr<std::vector<Tensor>> got = f.session->Run(inputs);
  ASSERT_TRUE(got.ok()) << where << ": " << got.status();
  const TensorComparison cmp = CompareTensorLists(*got, *want);
  EXPECT_TRUE(cmp.agree) << where << ": " << cmp.first_mismatch;
}

const std::vector<std::pair<int64_t, int64_t>>& Shapes() {
  static const auto* shapes = new std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 17}, {3, 64}, {1, 33}};
  return *shapes;
}

TEST(DataMovementLoweringTest, GatherOfAnActivationByAScalar) {
  for (int64_t index : {0, -1}) {
    ModelBuilder m;
    SymExpr b = m.Dim("batch", 1, 4), s = m.Dim("seq", 1, 64);
    Value* x = m.In("x", {b, s, 8});
    Value* picked = m.NamedNode(kNode, "Gather", {x, m.graph().AddConstant("", Tensor::ScalarI64(index))},
                                ModelBuilder::Attr("axis", int64_t{1}))
                        ->output(0);
    m.graph().AddOutput(picked);
    Fixture f = Compile(m.Finish());
    for (auto [batch, seq] : Shapes()) {
      ExpectMatches(f, {Floats({batch, seq, 8}, 7 * batch + seq)}, absl::StrCat("index ", index, " seq ", seq));
    }
  }
}

TEST(DataMovementLoweringTest, GatherOnAnInnerAxisByRuntimeIndices) {
  ModelBuilder m;
  SymExpr b = m.Dim("batch", 1, 4), s = m.Dim("seq", 1, 64), n = m.Dim("n", 1, 9);
  Value* x = m.In("x", {b, s, 8});
  Value* ids = m.In("ids", {n, 2}, DType::kI32);
  Value* y = m.NamedNode(kNode, "Gather", {x, ids}, ModelBuilder::Attr("axis", int64_t{2}))->output(0);
  m.graph().AddOutput(y);
  Fixture f = Compile(m.Finish());
  for (auto [batch, seq] : Shapes()) {
    const int64_t count = 1 + seq % 9;
    ExpectMatches(f, {Floats({batch, seq, 8}, batch + seq), Indices<int32_t>(DType::kI32, {count, 2}, 8, seq)},
                  absl::StrCat("seq ", seq));
  }
}

TEST(DataMovementLoweringTest, GatherNDWithBatchDims) {
  ModelBuilder m;
  SymExpr b = m.Dim("batch", 1, 4), s = m.Dim("seq", 1, 64);
  Value* x = m.In("x", {b, s, 8});
  Value* idx = m.In("idx", {b, 5, 2}, DType::kI64);  // (position, channel) pairs per batch row
  Value* y = m.NamedNode(kNode, "GatherND", {x, idx}, ModelBuilder::Attr("batch_dims", int64_t{1}))->output(0);
  m.graph().AddOutput(y);
  Fixture f = Compile(m.Finish());
  for (auto [batch, seq] : Shapes()) {
    Tensor pairs = Indices<int64_t>(DType::kI64, {batch, 5, 2}, 8, seq);
    int64_t* p = pairs.mutable_data<int64_t>();
    for (int64_t i = 0; i < pairs.num_elements(); i += 2) p[i] = (p[i] + 8) % seq;  // positions in [0, seq)
    ExpectMatches(f, {Floats({batch, seq, 8}, batch * seq), pairs}, absl::StrCat("seq ", seq));
  }
}

TEST(DataMovementLoweringTest, GatherElementsWithIndicesNarrowerThanTheData) {
  ModelBuilder m;
  SymExpr b = m.Dim("batch", 1, 4), s = m.Dim("seq", 1, 64);
  Value* x = m.In("x", {b, s, 8});
  Value* idx = m.In("idx", {b, s, 3}, DType::kI64);
  Value* y = m.NamedNode(kNode, "GatherElements", {x, idx}, ModelBuilder::Attr("axis", int64_t{1}))->output(0);
  m.graph().AddOutput(y);
  Fixture f = Compile(m.Finish());
  for (auto [batch, seq] : Shapes()) {
    ExpectMatches(f, {Floats({batch, seq, 8}, seq), Indices<int64_t>(DType::kI64, {batch, seq, 3}, seq, batch)},
                  absl::StrCat("seq ", seq));
  }
}

TEST(DataMovementLoweringTest, TileByShapeDerivedRepeats) {
  ModelBuilder m;
  SymExpr b = m.Dim("batch", 1, 4), s = m.Dim("seq", 1, 64);
  Value* x = m.In("x", {b, 1, 3});
  Value* y = m.In("y", {s});
  Value* seq = m.Op("Shape", {y});  // [seq]
  Value* repeats = m.Op("Concat", {m.Ints({1}), seq, m.Ints({2})}, ModelBuilder::Attr("axis", int64_t{0}));
  Value* tiled = m.NamedNode(kNode, "Tile", {x, repeats})->output(0);  // [batch, seq, 6]
  m.graph().AddOutput(tiled);
  Fixture f = Compile(m.Finish());
  for (auto [batch, seq] : Shapes()) {
    ExpectMatches(f, {Floats({batch, 1, 3}, batch), Floats({seq}, seq)}, absl::StrCat("seq ", seq));
  }
}

TEST(DataMovementLoweringTest, TriluBelowASymbolicDiagonal) {
  ModelBuilder m;
  SymExpr b = m.Dim("batch", 1, 4), s = m.Dim("seq", 1, 64);
  Value* x = m.In("x", {b, s, 2 * s});
  // k = seq - 3: a diagonal that moves with the request.
  Value* k = m.Op("Sub", {m.Op("Squeeze", {m.Op("Shape", {m.In("y", {s})}), m.Ints({0})}),
                          m.graph().AddConstant("", Tensor::ScalarI64(3))});
  Value* lower = m.NamedNode(kNode, "Trilu", {x, k}, ModelBuilder::Attr("upper", int64_t{0}))->output(0);
  m.graph().AddOutput(lower);
  Fixture f = Compile(m.Finish());
  for (auto [batch, seq] : Shapes()) {
    ExpectMatches(f, {Floats({batch, seq, 2 * seq}, seq), Floats({seq}, 1)}, absl::StrCat("seq ", seq));
  }
}

// A cache update: rows of a [batch, 16, 4] cache replaced at (batch,
// position) pairs from the request; negative positions count from the end.
TEST(DataMovementLoweringTest, ScatterNDWritesRowsAtDataChosenPlaces) {
  ModelBuilder m;
  SymExpr b = m.Dim("batch", 1, 4), s = m.Dim("seq", 1, 16);
  Value* cache = m.In("cache", {b, 16, 4});
  Value* where = m.In("where", {b, s, 2}, DType::kI64);
  Value* rows = m.In("rows", {b, s, 4});
  m.graph().AddOutput(m.NamedNode(kNode, "ScatterND", {cache, where, rows})->output(0));
  Fixture f = Compile(m.Finish());
  for (auto [batch, seq] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 7}, {3, 16}}) {
    Tensor pairs = Tensor::Zeros(DType::kI64, {batch, seq, 2}).value();
    int64_t* p = pairs.mutable_data<int64_t>();
    for (int64_t i = 0; i < batch; ++i) {
      for (int64_t t = 0; t < seq; ++t) {
        p[(i * seq + t) * 2] = i;
        p[(i * seq + t) * 2 + 1] = t % 2 == 0 ? (3 * t) % 16 - 16 : (3 * t) % 16;  // distinct positions
      }
    }
    ExpectMatches(f, {Floats({batch, 16, 4}, seq), pairs, Floats({batch, seq, 4}, batch)}, absl::StrCat("seq ", seq));
  }
  absl::StatusOr<std::vector<Tensor>> bad =
      f.session->Run({Floats({1, 16, 4}, 1), Tensor::FromVector<int64_t>(DType::kI64, {1, 1, 2}, {0, 16}),
                      Floats({1, 1, 4}, 2)});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("node 'under_test' (ScatterND): index 16 at position 1"));
}

// Out-of-range indices: the request fails naming the node and the index,
// as the interpreter does; nothing reads outside the data.
TEST(DataMovementLoweringTest, AnIndexOutsideTheDataFailsTheRequestNamingNodeAndIndex) {
  ModelBuilder m;
  SymExpr b = m.Dim("batch", 1, 4), s = m.Dim("seq", 1, 64), n = m.Dim("n", 1, 9);
  Value* x = m.In("x", {b, s, 8});
  Value* ids = m.In("ids", {n}, DType::kI64);
  m.graph().AddOutput(m.NamedNode(kNode, "Gather", {x, ids}, ModelBuilder::Attr("axis", int64_t{1}))->output(0));
  Fixture f = Compile(m.Finish());
  ASSERT_NE(f.session, nullptr);
  for (int64_t bad : {5, -6, 1000000}) {
    std::vector<Tensor> inputs = {Floats({2, 5, 8}, 3), Tensor::FromVector<int64_t>(DType::kI64, {3}, {0, bad, 1})};
    absl::StatusOr<std::vector<Tensor>> got = f.session->Run(inputs);
    ASSERT_FALSE(got.ok()) << "index " << bad;
    EXPECT_THAT(got.status().message(), HasSubstr(absl::StrCat("node '", kNode, "'")));
    EXPECT_THAT(got.status().message(), HasSubstr(absl::StrCat("index ", bad, " at position 1")));
    EXPECT_FALSE(Interpret(*f.reference, inputs).ok());
  }
  // The boundary values are served.
  ExpectMatches(f, {Floats({2, 5, 8}, 3), Tensor::FromVector<int64_t>(DType::kI64, {2}, {4, -5})}, "boundary");
}

// A constant index that only some sequences contain: checked per request.
TEST(DataMovementLoweringTest, AConstantIndexBeyondShortSequencesIsCheckedPerRequest) {
  ModelBuilder m;
  SymExpr b = m.Dim("batch", 1, 4), s = m.Dim("seq", 1, 64);
  Value* x = m.In("x", {b, s, 8});
  m.graph().AddOutput(m.NamedNode(kNode, "Gather", {x, m.graph().AddConstant("", Tensor::ScalarI64(3))},
                                  ModelBuilder::Attr("axis", int64_t{1}))
                          ->output(0));
  Fixture f = Compile(m.Finish());
  ASSERT_NE(f.session, nullptr);
  ExpectMatches(f, {Floats({2, 4, 8}, 1)}, "seq 4");
  absl::StatusOr<std::vector<Tensor>> got = f.session->Run({Floats({2, 3, 8}, 1)});
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("node 'under_test' (Gather): index 3 at position 0"));
  EXPECT_THAT(got.status().message(), HasSubstr("axis 1 of size 3"));
}

TEST(DataMovementLoweringTest, AnIndexTupleOutsideTheDataFailsNamingTheAxis) {
  ModelBuilder m;
  SymExpr s = m.Dim("seq", 1, 64);
  Value* table = m.Weights({16, 4});
  Value* idx = m.In("idx", {s, 1}, DType::kI64);
  m.graph().AddOutput(m.NamedNode(kNode, "GatherND", {table, idx})->output(0));
  Fixture f = Compile(m.Finish());
  ASSERT_NE(f.session, nullptr);
  absl::StatusOr<std::vector<Tensor>> got =
      f.session->Run({Tensor::FromVector<int64_t>(DType::kI64, {3, 1}, {2, 15, 16})});
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("node 'under_test' (GatherND): index 16 at position 2"));
  EXPECT_THAT(got.status().message(), HasSubstr("axis 0 of size 16"));
}

}  // namespace
}  // namespace shapeshift::runtime
