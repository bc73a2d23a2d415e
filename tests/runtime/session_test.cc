// Session on small built graphs: compiled once, run at many shapes, equal to
// the interpreter; inputs rejected with clear errors; arena reuse; threads.
#include "runtime/session.h"

#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "graph/interpreter.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

using testing::AddRelu;
using testing::MaxAbsDiff;
using testing::MiniEncoder;
using testing::RandomF32;
using testing::TokenInputs;

std::unique_ptr<Session> Compile(testing::BuiltModel model, CompileOptions options = {}) {
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), options);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? *std::move(session) : nullptr;
}

TEST(SessionTest, MiniEncoderCompiledOnceMatchesInterpreterAtManyShapes) {
  std::unique_ptr<Session> session = Compile(MiniEncoder());
  ASSERT_NE(session, nullptr);
  testing::BuiltModel reference = MiniEncoder();  // the unoptimized graph, same weights
  std::mt19937 rng(11);
  std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1}, {1, 2}, {2, 13}, {4, 511}, {1, 512}, {3, 513}};
  for (int i = 0; i < 24; ++i) shapes.push_back({1 + rng() % 4, 1 + rng() % 200});
  for (auto [batch, seq] : shapes) {
    SCOPED_TRACE(absl::StrCat("batch ", batch, " seq ", seq));
    std::vector<Tensor> inputs = TokenInputs(batch, seq, 50, batch * 1000 + seq);
    absl::StatusOr<std::vector<Tensor>> got = session->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    absl::StatusOr<std::vector<Tensor>> want = Interpret(*reference.graph, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ((*got)[0].shape(), (*want)[0].shape());
    EXPECT_LE(MaxAbsDiff((*got)[0], (*want)[0]), 1e-3);
  }
  SessionStats stats = session->stats();
  EXPECT_EQ(stats.compiles, 1);
  EXPECT_EQ(stats.recompiles, 0);
  EXPECT_EQ(stats.requests, static_cast<int64_t>(shapes.size()));
  EXPECT_GT(stats.program.gemms, 0);
  EXPECT_GT(stats.program.kernels, 0);
  // Identical q/k/v projections share one primitive.
  EXPECT_LT(stats.program.gemms, stats.program.gemm_calls);
  // Every primitive ran once inside compile, so the first request pays no
  // oneDNN kernel generation; that time is part of compile_ms.
  EXPECT_EQ(stats.program.gemms_warmed, stats.program.gemms);
  EXPECT_LE(stats.program.warmup_ms, stats.program.compile_ms);
}

TEST(SessionTest, BorrowedViewsGiveTheSameResultAsOwningTensors) {
  std::unique_ptr<Session> session = Compile(AddRelu());
  ASSERT_NE(session, nullptr);
  Tensor x = RandomF32({2, 5, 8}, 1), y = RandomF32({2, 5, 8}, 2);
  absl::StatusOr<std::vector<Tensor>> owned = session->Run({x, y});
  ASSERT_TRUE(owned.ok()) << owned.status();
  std::vector<int64_t> shape = {2, 5, 8};
  TensorView views[] = {{DType::kF32, shape, x.raw()}, {DType::kF32, shape, y.raw()}};
  absl::StatusOr<std::vector<Tensor>> borrowed = session->Run(absl::MakeConstSpan(views));
  ASSERT_TRUE(borrowed.ok()) << borrowed.status();
  EXPECT_EQ(MaxAbsDiff((*owned)[0], (*borrowed)[0]), 0);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    EXPECT_EQ((*owned)[0].data<float>()[i], std::max(0.0f, x.data<float>()[i] + y.data<float>()[i]));
  }
}

TEST(SessionTest, OutOfRangeDimIsRejectedNamingInputDimAndRange) {
  std::unique_ptr<Session> session = Compile(AddRelu());
  ASSERT_NE(session, nullptr);
  absl::StatusOr<std::vector<Tensor>> out = session->Run({RandomF32({2, 65, 8}, 1), RandomF32({2, 65, 8}, 2)});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kOutOfRange);
  std::string msg(out.status().message());
  for (const char* part : {"'x'", "dim 1", "seq", "65", "1..64"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << " missing in: " << msg;
  }
}

TEST(SessionTest, BadInputsAreErrorsNotCrashes) {
  std::unique_ptr<Session> session = Compile(AddRelu());
  ASSERT_NE(session, nullptr);
  Tensor good = RandomF32({2, 5, 8}, 1);
  struct Case {
    std::vector<Tensor> inputs;
    const char* expect;
  };
  std::vector<Case> cases = {
      {{good}, "expected 2 inputs"},
      {{good, RandomF32({2, 6, 8}, 2)}, "'y' dim 1 (seq) is 6 but input 'x' dim 1 says seq = 5"},
      {{good, RandomF32({2, 5, 9}, 2)}, "'y' dim 2 is 9"},         // static dim
      {{good, RandomF32({2, 5}, 2)}, "'y' has rank 2"},
      {{good, Tensor::Zeros(DType::kI64, {2, 5, 8}).value()}, "'y' has dtype i64"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<Tensor>> out = session->Run(c.inputs);
    ASSERT_FALSE(out.ok()) << c.expect;
    EXPECT_NE(out.status().message().find(c.expect), std::string::npos) << out.status();
  }
  EXPECT_EQ(session->stats().requests, 0);
}

TEST(SessionTest, EmbeddingIdOutsideTheTableIsAnError) {
  std::unique_ptr<Session> session = Compile(MiniEncoder());
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> inputs = TokenInputs(1, 4, 50, 1);
  inputs[0].mutable_data<int64_t>()[2] = 50;
  absl::StatusOr<std::vector<Tensor>> out = session->Run(inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("index 50"), std::string::npos) << out.status();
}

TEST(SessionTest, DimOverridesNarrowABuiltModelAndUnknownNamesFail) {
  CompileOptions narrow;
  narrow.dims["seq"] = {1, 16};
  std::unique_ptr<Session> session = Compile(AddRelu(), narrow);
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(session->Run({RandomF32({1, 16, 8}, 1), RandomF32({1, 16, 8}, 2)}).ok());
  EXPECT_EQ(session->Run({RandomF32({1, 17, 8}, 1), RandomF32({1, 17, 8}, 2)}).status().code(),
            absl::StatusCode::kOutOfRange);
  CompileOptions typo;
  typo.dims["sequence"] = {1, 16};
  testing::BuiltModel model = AddRelu();
  absl::StatusOr<std::unique_ptr<Session>> bad =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), typo);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sequence"), std::string::npos) << bad.status();
}

TEST(SessionTest, ArenaIsReusedAcrossRequests) {
  testing::BuiltModel model = MiniEncoder();
  absl::StatusOr<std::unique_ptr<Program>> program = Program::Compile(*model.graph, *model.env, {});
  ASSERT_TRUE(program.ok()) << program.status();
  ExecutionContext ctx;
  auto run = [&](int64_t batch, int64_t seq) {
    std::vector<Tensor> inputs = TokenInputs(batch, seq, 50, 3);
    TensorView views[] = {TensorView::Of(inputs[0]), TensorView::Of(inputs[1])};
    absl::StatusOr<std::vector<Tensor>> out = (*program)->Run(absl::MakeConstSpan(views), ctx);
    ASSERT_TRUE(out.ok()) << out.status();
  };
  run(4, 256);
  int64_t allocations = ctx.arena_allocations();
  size_t capacity = ctx.arena_capacity();
  for (int64_t seq : {1, 7, 100, 256, 3}) run(2, seq);
  EXPECT_EQ(ctx.arena_allocations(), allocations);
  EXPECT_EQ(ctx.arena_capacity(), capacity);
}

TEST(SessionTest, ConcurrentRunsFromSeveralThreadsAgree) {
  std::unique_ptr<Session> session = Compile(MiniEncoder());
  ASSERT_NE(session, nullptr);
  std::vector<std::vector<Tensor>> inputs;
  std::vector<Tensor> expected;
  for (int t = 0; t < 4; ++t) {
    inputs.push_back(TokenInputs(1 + t % 2, 10 + 17 * t, 50, t));
    expected.push_back(session->Run(inputs.back()).value()[0]);
  }
  std::vector<double> worst(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        absl::StatusOr<std::vector<Tensor>> out = session->Run(inputs[t]);
        worst[t] = std::max(worst[t], out.ok() ? MaxAbsDiff((*out)[0], expected[t]) : 1e9);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(worst[t], 0) << "thread " << t;
}

TEST(SessionTest, RecordedGuardsAreCheckedPerRequest) {
  // A specialized answer (as a pass would get for a bucketed symbol) makes
  // the compiled program valid only where the question holds.
  testing::BuiltModel model = AddRelu();
  ASSERT_TRUE(model.env->SetPolicy("seq", SymbolPolicy::kBucketed).ok());
  ASSERT_TRUE(model.env->SetHint("seq", 10).ok());
  Answer answer = model.env->Query(Predicate::Le(SymExpr::Symbol("seq"), 32), {"test-pass", "n0", "pretend a tile fits"});
  ASSERT_EQ(answer, Answer::kSpecializedTrue);
  std::unique_ptr<Session> session = Compile(std::move(model));
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(session->Run({RandomF32({1, 32, 8}, 1), RandomF32({1, 32, 8}, 2)}).ok());
  absl::StatusOr<std::vector<Tensor>> out = session->Run({RandomF32({1, 33, 8}, 1), RandomF32({1, 33, 8}, 2)});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(out.status().message().find("pretend a tile fits"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("test-pass"), std::string::npos) << out.status();
}

// The same model-env guard under every policy: refused right after binding,
// before any entry is chosen or compiled, naming the question.
TEST(SessionTest, ModelGuardsAreCheckedBeforeAnyCompileUnderEveryPolicy) {
  for (SpecializationPolicy policy : {SpecializationPolicy::kPolymorphic, SpecializationPolicy::kAuto,
                                      SpecializationPolicy::kBucketed, SpecializationPolicy::kStatic}) {
    testing::BuiltModel model = AddRelu();
    ASSERT_TRUE(model.env->SetPolicy("seq", SymbolPolicy::kBucketed).ok());
    ASSERT_TRUE(model.env->SetHint("seq", 10).ok());
    ASSERT_EQ(model.env->Query(Predicate::Le(SymExpr::Symbol("seq"), 32), {"test-pass", "n0", "pretend a tile fits"}),
              Answer::kSpecializedTrue);
    SessionOptions options;
    options.policy = policy;
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), options);
    ASSERT_TRUE(session.ok()) << session.status();
    const int64_t compiles = (*session)->stats().compiles;
    absl::StatusOr<std::vector<Tensor>> out =
        (*session)->Run({RandomF32({1, 33, 8}, 1), RandomF32({1, 33, 8}, 2)});
    ASSERT_FALSE(out.ok()) << SpecializationPolicyName(policy);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(out.status().message()),
                ::testing::HasSubstr("the request violates a guard of the model: seq <= 32 [asked by test-pass"));
    EXPECT_EQ((*session)->stats().compiles, compiles) << SpecializationPolicyName(policy);
    EXPECT_TRUE((*session)->Run({RandomF32({1, 32, 8}, 1), RandomF32({1, 32, 8}, 2)}).ok());
  }
}

// One facade: the polymorphic session is the polymorphic policy; a policy
// that compiles on the first request has no polymorphic Program to show.
TEST(SessionTest, ThePolymorphicSessionIsThePolymorphicPolicy) {
  std::unique_ptr<Session> session = Compile(AddRelu());
  ASSERT_NE(session, nullptr);
  for (int seq : {1, 7, 64}) ASSERT_TRUE(session->Run({RandomF32({2, seq, 8}, 1), RandomF32({2, seq, 8}, 2)}).ok());
  SessionStats stats = session->stats();
  EXPECT_EQ(stats.compiles, 1);
  EXPECT_EQ(stats.recompiles, 0);
  EXPECT_EQ(stats.requests, 3);
  EXPECT_EQ(stats.entries, 1u);
  EXPECT_EQ(stats.dispatcher.misses, 0);
  ASSERT_NE(session->program(), nullptr);
  EXPECT_EQ(stats.program.kernels, session->program()->stats().kernels);
  EXPECT_GT(stats.program.kernels, 0);

  SessionOptions static_options;
  static_options.policy = SpecializationPolicy::kStatic;
  testing::BuiltModel model = AddRelu();
  absl::StatusOr<std::unique_ptr<Session>> pinned =
      Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), static_options);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_EQ((*pinned)->program(), nullptr);
  EXPECT_EQ((*pinned)->stats().compiles, 0);
  for (int seq : {3, 5, 3}) ASSERT_TRUE((*pinned)->Run({RandomF32({1, seq, 8}, 1), RandomF32({1, seq, 8}, 2)}).ok());
  EXPECT_EQ((*pinned)->stats().compiles, 2);
  EXPECT_EQ((*pinned)->stats().recompiles, 1);
  EXPECT_EQ((*pinned)->stats().requests, 3);
}

// Any number of dynamic dims: 20 inputs with a dim each (exporters such as
// tf2onnx name every unknown dim apart), more than the dispatcher binds
// without allocating, under every policy.
TEST(SessionTest, TwentyDynamicDimsServeUnderEveryPolicy) {
  for (SpecializationPolicy policy : {SpecializationPolicy::kPolymorphic, SpecializationPolicy::kStatic,
                                      SpecializationPolicy::kBucketed, SpecializationPolicy::kAuto}) {
    testing::ModelBuilder m;
    for (int i = 0; i < 20; ++i) {
      Value* x = m.In("x" + std::to_string(i), {m.Dim("d" + std::to_string(i), 1, 64)});
      m.graph().AddOutput(m.Op("Relu", {x}));
    }
    testing::BuiltModel model = m.Finish();
    SessionOptions options;
    options.policy = policy;
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), options);
    ASSERT_TRUE(session.ok()) << SpecializationPolicyName(policy) << ": " << session.status();
    std::vector<Tensor> inputs;
    for (int i = 0; i < 20; ++i) inputs.push_back(RandomF32({1 + i}, i));
    absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(inputs);
    ASSERT_TRUE(out.ok()) << SpecializationPolicyName(policy) << ": " << out.status();
    ASSERT_EQ(out->size(), 20u);
    for (int i = 0; i < 20; ++i) {
      ASSERT_EQ((*out)[i].shape(), std::vector<int64_t>{1 + i});
      for (int64_t k = 0; k <= i; ++k) {
        EXPECT_EQ((*out)[i].data<float>()[k], std::max(0.0f, inputs[i].data<float>()[k]));
      }
    }
    inputs[19] = RandomF32({65}, 99);
    absl::StatusOr<std::vector<Tensor>> beyond = (*session)->Run(inputs);
    ASSERT_FALSE(beyond.ok());
    EXPECT_THAT(std::string(beyond.status().message()),
                ::testing::HasSubstr("input 'x19' dim 0 (d19) = 65 is outside the declared range 1..64"));
  }
}

TEST(SessionTest, PrintAfterReachesThePassManager) {
  std::ostringstream printed;
  CompileOptions options;
  options.print_after = {"fusion"};
  options.print_stream = &printed;
  std::unique_ptr<Session> session = Compile(AddRelu(), options);
  ASSERT_NE(session, nullptr);
  EXPECT_NE(printed.str().find("fusion"), std::string::npos) << printed.str();
}

TEST(SessionTest, OnnxBytesCompileAndMatchTheReference) {
  std::string path = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/tiny_bert_opset17.onnx";
  std::ifstream file(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty());
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(ModelSource::OnnxBytes(bytes, "tiny"));
  ASSERT_TRUE(session.ok()) << session.status();
  const Graph& graph = (*session)->graph();
  ASSERT_EQ(graph.inputs().size(), 2u);
  std::vector<Tensor> inputs;
  for (const Value* in : graph.inputs()) {
    std::vector<int64_t> ones(2 * 9, 1);
    inputs.push_back(Tensor::FromVector<int64_t>(in->type().dtype, {2, 9}, ones));
  }
  absl::StatusOr<std::vector<Tensor>> got = (*session)->Run(inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<std::vector<Tensor>> want = (*session)->RunReference(inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_LE(MaxAbsDiff((*got)[0], (*want)[0]), 1e-4);
}

TEST(SessionTest, CorruptOnnxBytesAreAnErrorNamingTheSource) {
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(ModelSource::OnnxBytes("definitely not a protobuf", "request.onnx"));
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("request.onnx"), std::string::npos) << session.status();
}

}  // namespace
}  // namespace shapeshift::runtime
