// Deep and heavily shared graphs: every walk over graph edges or over a
// kernel's expression is iterative or bounded, so a 20,000-node elementwise
// chain compiles (10,000 nodes used to overflow the stack in the element
// emitter) and matches the interpreter, and a value reused at every step
// (a DAG that is exponential as a tree) compiles in time linear in the graph.
//
// A 100,000-node chain goes through the CLI as a user's ONNX file would:
// imported, compiled and checked against the interpreter (`run --check`),
// printed (`inspect --print-ir`) and compile-checked (`check`).
//
// The compiles run on a thread with a small stack: a walk that recursed
// once per node would need far more than it has, so this fails loudly (a
// crash) if a per-node recursion comes back anywhere in the pipeline.
#include <pthread.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "passes/fusion_plan.h"
#include "runtime/session.h"
#include "tests/graph/onnx_test_model.h"
#include "tests/runtime/runtime_test_util.h"
#include "tests/tools/cli_test_util.h"

namespace shapeshift::runtime {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kStackBytes = size_t{16} << 20;  // ASan frames are several times larger
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr size_t kStackBytes = size_t{16} << 20;
#else
constexpr size_t kStackBytes = size_t{1} << 20;
#endif
#else
constexpr size_t kStackBytes = size_t{1} << 20;
#endif

// Runs `body` on a thread with a `kStackBytes` stack (1 MiB: 52 bytes per
// node of a 20,000-node chain).
void RunOnSmallStack(const std::function<void()>& body) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, kStackBytes), 0);
  pthread_t thread;
  auto trampoline = [](void* arg) -> void* {
    (*static_cast<const std::function<void()>*>(arg))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, trampoline, const_cast<std::function<void()>*>(&body)), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

struct Chain {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<ShapeEnv> env;
};

// x : f32[seq, 8] through `length` elementwise nodes, cycling through eight
// ops (so groups of kMaxGroupNodes nodes are identical kernels) that keep
// values in a small range, so 20,000 steps stay finite and comparable.
Chain ElementwiseChain(int length) {
  Chain c{std::make_unique<Graph>(17), std::make_unique<ShapeEnv>()};
  SymExpr seq = c.env->DeclareSymbol({"seq", 1, 16}).value();
  GraphBuilder b(*c.graph, *c.env);
  Value* x = b.Input("x", TensorType(DType::kF32, {seq, 8}));
  Value* half = b.Constant("half", Tensor::Scalar(0.5f));
  Value* two = b.Constant("two", Tensor::Scalar(2.0f));
  for (int i = 0; i < length; ++i) {
    absl::StatusOr<Value*> y;
    switch (i % 8) {
      case 0: y = b.Op("Sigmoid", {x}); break;
      case 1: y = b.Op("Mul", {x, two}); break;
      case 2: y = b.Op("Sub", {x, half}); break;
      case 3: y = b.Op("Tanh", {x}); break;
      case 4: y = b.Op("Neg", {x}); break;
      case 5: y = b.Op("Add", {x, half}); break;
      case 6: y = b.Op("Relu", {x}); break;
      default: y = b.Op("Abs", {x}); break;
    }
    EXPECT_TRUE(y.ok()) << y.status();
    x = *y;
  }
  b.Output(x);
  return c;
}

void ExpectNear(const Tensor& got, const Tensor& want, float tolerance) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    ASSERT_NEAR(got.values<float>()[i], want.values<float>()[i], tolerance) << "element " << i;
  }
}

// Compiles `c` on a small stack, runs it at `input` and compares with the
// interpreter on the same graph.
void CompileRunAndCompare(Chain c, const Tensor& input, float tolerance, ProgramStats* stats) {
  absl::StatusOr<std::vector<Tensor>> want = Interpret(*c.graph, {input});
  ASSERT_TRUE(want.ok()) << want.status();
  std::unique_ptr<Session> session;
  absl::Status compiled;
  RunOnSmallStack([&] {
    absl::StatusOr<std::unique_ptr<Session>> s =
        Session::Create(ModelSource::Built(std::move(c.graph), std::move(c.env)));
    compiled = s.status();
    if (s.ok()) session = *std::move(s);
  });
  ASSERT_TRUE(compiled.ok()) << compiled;
  absl::StatusOr<std::vector<Tensor>> got = session->Run({input});
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectNear((*got)[0], (*want)[0], tolerance);
  *stats = session->stats().program;
  RunOnSmallStack([&] { session.reset(); });  // freeing is iterative too
}

TEST(DeepGraphLimitsTest, TwentyThousandNodeElementwiseChainCompilesAndMatchesTheInterpreter) {
  constexpr int kLength = 20000;
  ProgramStats stats;
  CompileRunAndCompare(ElementwiseChain(kLength), testing::RandomF32({5, 8}, 3), 1e-4f, &stats);
  // Groups of at most kMaxGroupNodes nodes; the full ones are one kernel.
  EXPECT_GE(stats.groups, kLength / passes::kMaxGroupNodes);
  EXPECT_LE(stats.kernels, 3) << "identical chain segments were compiled more than once";
}

// x_{k+1} = max(x_k, x_{k-1}) and y = y - 0.5*y: every value is read twice
// inside one fused kernel (121 nodes: one group). As a tree the kernel's
// expression has ~2^40 nodes (24 steps of the first loop alone took a
// minute to compile when the walks treated it as a tree); the
// kernel IR walks (print, hash, verify, LLVM and CUDA lowering) visit each
// distinct node once.
TEST(DeepGraphLimitsTest, AValueReusedAtEveryStepCompilesInLinearTime) {
  Chain c{std::make_unique<Graph>(17), std::make_unique<ShapeEnv>()};
  SymExpr seq = c.env->DeclareSymbol({"seq", 1, 16}).value();
  GraphBuilder b(*c.graph, *c.env);
  Value* x = b.Input("x", TensorType(DType::kF32, {seq, 8}));
  Value* half = b.Constant("half", Tensor::Scalar(0.5f));
  Value* prev = x;
  for (int i = 0; i < 40; ++i) {
    Value* next = *b.Op("Max", {x, prev});
    prev = x;
    x = next;
  }
  Value* y = x;
  for (int i = 0; i < 40; ++i) y = *b.Op("Sub", {y, *b.Op("Mul", {y, half})});
  b.Output(*b.Op("Add", {x, y}));
  ProgramStats stats;
  CompileRunAndCompare(std::move(c), testing::RandomF32({7, 8}, 4), 1e-5f, &stats);
  EXPECT_EQ(stats.kernel_calls, 1);
}

// The reproducer scaled up tenfold: 10,000 chained Relu nodes in an
// ONNX file crashed `run` (SIGSEGV); 100,000 elementwise nodes now import,
// compile (identical 128-node groups are one kernel) and agree with the
// interpreter. The CLI runs on its main thread's ordinary stack. (Sanitizer
// builds, several times slower, use a quarter of the length.)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kCliChainLength = 25000;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr int kCliChainLength = 25000;
#else
constexpr int kCliChainLength = 100000;
#endif
#else
constexpr int kCliChainLength = 100000;
#endif

// x : f32[seq, 8] through `length` nodes n0..n{length-1} cycling through
// Sigmoid, Neg, Abs, Relu, written as an ONNX file; returns its path.
std::string WriteOnnxChain(int length, const std::string& name) {
  shapeshift::testing::OnnxTestModel m(17);
  m.Input("x", onnx::TensorProto::FLOAT, {"seq", "8"});
  const char* ops[] = {"Sigmoid", "Neg", "Abs", "Relu"};
  std::string previous = "x";
  for (int i = 0; i < length; ++i) {
    const std::string next = i + 1 == length ? "y" : "v" + std::to_string(i);
    m.Node(ops[i % 4], {previous}, {next}, "n" + std::to_string(i));
    previous = next;
  }
  m.Output("y", onnx::TensorProto::FLOAT, {"seq", "8"});
  const std::string model = shapeshift::testing::ProcessTempPath(name);
  std::ofstream(model, std::ios::binary) << m.Bytes();
  return model;
}

TEST(DeepGraphLimitsTest, AHundredThousandNodeOnnxChainRunsThroughTheCliAndPassesItsCheck) {
  const std::string model = WriteOnnxChain(kCliChainLength, "chain_run.onnx");
  shapeshift::testing::CliResult r = shapeshift::testing::RunShapeshift(
      "run " + model + " --dim seq=1..16 --input x=5x8 --repeats 1 --check --no-cache", "2>&1");
  std::filesystem::remove(model);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("check vs interpreter")) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("(ok)")) << r.output;
}

// The other commands that walk the whole graph: the printer and the compile
// check (passes and lowering under every tier).
TEST(DeepGraphLimitsTest, AHundredThousandNodeOnnxChainIsInspectedAndCompileChecked) {
  const std::string model = WriteOnnxChain(kCliChainLength, "chain_check.onnx");
  shapeshift::testing::CliResult inspect = shapeshift::testing::RunShapeshift("inspect " + model + " --print-ir");
  EXPECT_EQ(inspect.exit_code, 0);
  EXPECT_THAT(inspect.output, ::testing::HasSubstr("n" + std::to_string(kCliChainLength - 1)))
      << inspect.output.substr(0, 2000);
  shapeshift::testing::CliResult check = shapeshift::testing::RunShapeshift("check " + model + " --dim seq=1..16");
  EXPECT_EQ(check.exit_code, 0) << check.output.substr(0, 2000);
  std::filesystem::remove(model);
}

}  // namespace
}  // namespace shapeshift::runtime
