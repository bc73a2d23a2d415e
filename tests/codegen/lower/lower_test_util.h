// Fixture for lowering tests: a graph built with the builder API and shape
// inference, fusion groups written by hand (the FusionPlan contract), and a
// tiny executor that runs lowered steps on concrete tensors so each test can
// compare against the reference interpreter. ExpectMatchesInterpreter checks
// every group twice: on the CPU backend, and as the CUDA backend would run
// it (emitted CUDA C under the host emulation, threads in both orders;
// tests/support/cuda/emulated_steps.h).
#ifndef SHAPESHIFT_TESTS_CODEGEN_LOWER_LOWER_TEST_UTIL_H_
#define SHAPESHIFT_TESTS_CODEGEN_LOWER_LOWER_TEST_UTIL_H_

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/fused_attention.h"
#include "codegen/cpu/cpu_backend.h"
#include "codegen/cpu/onednn_matmul.h"
#include "codegen/cpu/parallel_run.h"
#include "codegen/lower/lower_group.h"
#include "graph/graph.h"
#include "graph/interpreter.h"
#include "graph/shape_inference.h"
#include "gtest/gtest.h"
#include "shapes/shape_env.h"
#include "tests/support/cuda/emulated_steps.h"

namespace shapeshift::codegen::lower::testing {

class LowerTest : public ::testing::Test {
 protected:
  LowerTest() {
    batch = env.DeclareSymbol({"batch", 1, 4}).value();
    seq = env.DeclareSymbol({"seq", 1, 520}).value();
    past = env.DeclareSymbol({"past", 0, 16}).value();
  }

  static cpu::CpuBackend& Backend() {
    static cpu::CpuBackend* backend = cpu::CpuBackend::Create().value().release();
    return *backend;
  }

  GraphValue* In(const std::string& name, std::vector<SymExpr> shape, DType dtype = DType::kF32) {
    return g.AddInput(name, TensorType(dtype, std::move(shape)));
  }
  GraphValue* Const(std::vector<int64_t> shape, uint32_t seed) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return g.AddConstant("", Tensor::FromVector<float>(DType::kF32, shape, Random(n, seed)));
  }
  GraphValue* Scalar(float v) { return g.AddConstant("", Tensor::Scalar(v)); }
  GraphValue* Ints(std::vector<int64_t> values) {
    return g.AddConstant("", Tensor::FromVector<int64_t>(DType::kI64, {static_cast<int64_t>(values.size())}, values));
  }
  Node* Op(const std::string& op, std::vector<GraphValue*> inputs, Attributes attrs = {}) {
    Node* n = g.AddNode(op, std::move(inputs), 1, std::move(attrs), op + "_" + std::to_string(g.num_nodes()));
    absl::Status s = InferNode(*n, env, g.opset());
    EXPECT_TRUE(s.ok()) << s;
    return n;
  }
  static Attributes Attr(const std::string& name, AttrValue v) {
    Attributes a;
    a.Set(name, std::move(v));
    return a;
  }
  static std::vector<float> Random(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
  }
  static Tensor RandomTensor(std::vector<int64_t> shape, uint32_t seed) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return Tensor::FromVector<float>(DType::kF32, shape, Random(n, seed));
  }

  // A group over `nodes` whose outputs are the graph's outputs.
  passes::Group MakeGroup(passes::GroupKind kind, std::vector<Node*> nodes, std::vector<GraphValue*> inputs) {
    passes::Group group;
    group.kind = kind;
    group.nodes = std::move(nodes);
    group.inputs = std::move(inputs);
    group.outputs = g.outputs();
    return group;
  }

  // Runs `steps` on `inputs` (graph-input order) and returns the graph outputs.
  absl::StatusOr<std::vector<Tensor>> RunSteps(const std::vector<LoweredStep>& steps, const std::vector<Tensor>& inputs);

  // Lowers `group`, runs it and the interpreter, and compares every output.
  void ExpectMatchesInterpreter(const passes::Group& group, const std::vector<Tensor>& inputs, double tol = 1e-4);
  // The same within 1e-6, and no NaN in the compiled output: the masked
  // softmaxes' inputs hold NaNs under their masks, which must stay hidden
  // (a NaN on both sides would pass the comparison).
  void ExpectMatchesInterpreterWithoutNaN(const passes::Group& group, const std::vector<Tensor>& inputs);

  ShapeEnv env;
  Graph g{17};
  SymExpr batch, seq, past;
};

inline absl::StatusOr<std::vector<Tensor>> LowerTest::RunSteps(const std::vector<LoweredStep>& steps,
                                                               const std::vector<Tensor>& inputs) {
  absl::StatusOr<Assignment> bound = BindInputSymbols(g, inputs);
  if (!bound.ok()) return bound.status();
  std::map<const GraphValue*, Tensor> store;
  for (size_t i = 0; i < inputs.size(); ++i) store[g.inputs()[i]] = inputs[i];
  auto tensor = [&](const GraphValue* v) -> Tensor& {
    if (auto it = store.find(v); it != store.end()) return it->second;
    if (v->is_constant()) return store[v] = *v->constant();
    std::vector<int64_t> shape = v->type().Evaluate(*bound).value();
    return store[v] = Tensor::Zeros(v->type().dtype, shape).value();
  };
  auto eval = [&](SymExpr e) { return e.Evaluate(*bound).value(); };
  for (const LoweredStep& step : steps) {
    if (const auto* k = std::get_if<KernelCall>(&step)) {
      absl::StatusOr<std::shared_ptr<const cpu::CompiledKernel>> compiled = Backend().Compile(k->kernel);
      if (!compiled.ok()) return compiled.status();
      std::vector<void*> ptrs;
      for (const GraphValue* v : k->buffers) ptrs.push_back(tensor(v).mutable_raw());
      std::vector<int64_t> dims;
      for (SymExpr e : k->dim_values) dims.push_back(eval(e));
      cpu::RunParallel(**compiled, ptrs.data(), dims.data());
    } else if (const auto* m = std::get_if<MatmulCall>(&step)) {
      if (eval(m->batch) == 0 || eval(m->m) == 0 || eval(m->n) == 0) continue;  // empty, as the runtime skips it
      absl::StatusOr<std::unique_ptr<cpu::OnednnMatmul>> mm = cpu::OnednnMatmul::Create(m->config);
      if (!mm.ok()) return mm.status();
      cpu::MatmulOperands ops;
      ops.a = tensor(m->a).data<float>();
      ops.b = tensor(m->b).data<float>();
      if (m->bias) ops.bias = tensor(m->bias).data<float>();
      if (m->residual) ops.residual = tensor(m->residual).data<float>();
      ops.c = tensor(m->c).mutable_data<float>();
      absl::Status s = (*mm)->Execute({eval(m->batch), eval(m->m), eval(m->k), eval(m->n)}, ops);
      if (!s.ok()) return s;
    } else if (const auto* a = std::get_if<AliasCall>(&step)) {
      store[a->alias] = tensor(a->source).Reshaped(a->alias->type().Evaluate(*bound).value()).value();
    } else if (const auto* c = std::get_if<IndexCheckCall>(&step)) {
      const Tensor& ids = tensor(c->indices);
      for (int64_t i = 0; i < ids.num_elements(); ++i) {
        const int64_t id = ids.GetAsInt64(i);
        const int64_t dim = eval(c->dims[i % c->dims.size()]);
        if (id < -dim || id >= dim) {
          return absl::InvalidArgumentError(absl::StrCat("node '", c->node_name, "': index ", id, " out of range"));
        }
      }
    } else if (const auto* a = std::get_if<AttentionCall>(&step)) {
      const AttentionArgs args = cuda::testing::AttentionArgsFor(
          *a, [&](const GraphValue* v) { return tensor(v).mutable_data<float>(); }, eval);
      if (absl::Status s = cpu::RunFusedAttention(args); !s.ok()) return s;
    } else {
      return absl::UnimplementedError("gather steps run in runtime tests");
    }
  }
  std::vector<Tensor> outs;
  for (const GraphValue* v : g.outputs()) outs.push_back(tensor(v));
  return outs;
}

inline void LowerTest::ExpectMatchesInterpreterWithoutNaN(const passes::Group& group,
                                                           const std::vector<Tensor>& inputs) {
  ExpectMatchesInterpreter(group, inputs, /*tol=*/1e-6);
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_TRUE(steps.ok()) << steps.status();
  absl::StatusOr<std::vector<Tensor>> got = RunSteps(*steps, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int64_t i = 0; i < (*got)[0].num_elements(); ++i) ASSERT_FALSE(std::isnan((*got)[0].GetAsDouble(i))) << i;
}

inline void LowerTest::ExpectMatchesInterpreter(const passes::Group& group, const std::vector<Tensor>& inputs,
                                                double tol) {
  absl::StatusOr<std::vector<LoweredStep>> steps = LowerGroup(group, &env);
  ASSERT_TRUE(steps.ok()) << steps.status();
  absl::StatusOr<std::vector<Tensor>> want = Interpret(g, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  auto expect_close = [&](const std::vector<Tensor>& got, const char* backend) {
    ASSERT_EQ(got.size(), want->size()) << backend;
    for (size_t o = 0; o < want->size(); ++o) {
      const Tensor& w = (*want)[o];
      const Tensor& t = got[o];
      ASSERT_EQ(t.shape(), w.shape()) << backend << " output " << o;
      double worst = 0;
      for (int64_t i = 0; i < w.num_elements(); ++i) {
        double err = std::abs(t.GetAsDouble(i) - w.GetAsDouble(i)) / (1.0 + std::abs(w.GetAsDouble(i)));
        worst = std::max(worst, err);
      }
      EXPECT_LE(worst, tol) << backend << " output " << o << " shape " << w.DebugString(0);
    }
  };
  absl::StatusOr<std::vector<Tensor>> got = RunSteps(*steps, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  expect_close(*got, "cpu");
  absl::StatusOr<std::vector<Tensor>> cuda = cuda::testing::RunStepsEmulated(g, *steps, inputs);
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  expect_close(*cuda, "cuda (emulated)");
  // Threads and blocks in the other order: a different result would be a
  // data race on a GPU.
  absl::StatusOr<std::vector<Tensor>> reversed = cuda::testing::RunStepsEmulated(g, *steps, inputs, {.reverse = true});
  ASSERT_TRUE(reversed.ok()) << reversed.status();
  for (size_t o = 0; o < cuda->size(); ++o) {
    ASSERT_EQ((*cuda)[o].byte_size(), (*reversed)[o].byte_size());
    EXPECT_EQ(std::memcmp((*cuda)[o].raw(), (*reversed)[o].raw(), (*cuda)[o].byte_size()), 0)
        << "output " << o << " depends on the order of CUDA threads";
  }
}

// The awkward sizes every test sweeps: 1, 2, primes, and around 512.
inline const std::vector<int64_t>& AwkwardSeqs() {
  static const std::vector<int64_t> seqs = {1, 2, 7, 13, 511, 512, 513};
  return seqs;
}

}  // namespace shapeshift::codegen::lower::testing

#endif  // SHAPESHIFT_TESTS_CODEGEN_LOWER_LOWER_TEST_UTIL_H_
