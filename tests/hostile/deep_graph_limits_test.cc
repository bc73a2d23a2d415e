// Deep and heavily shared graphs: every walk over graph edges or over a
// kernel's expression is iterative or bounded, so a 20,000-node elementwise
// chain compiles (10,000 nodes used to overflow the stack in the element
// emitter) and matches the interpreter, and a value reused at every step
// (a DAG that is exponential as a tree) compiles in time linear in the graph.
//
// The compiles run on a thread with a small stack: a walk that recursed
// once per node would need far more than it has, so this fails loudly (a
// crash) if a per-node recursion comes back anywhere in the pipeline.
#include <pthread.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "passes/fusion_plan.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

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

}  // namespace
}  // namespace shapeshift::runtime
