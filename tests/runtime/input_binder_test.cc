// InputBinder: the one binding rule (first occurrence binds, repeats agree,
// constants match, ranges hold) and its messages, which the Program, the
// Dispatcher and every client print.
#include "runtime/input_binder.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

namespace shapeshift::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using testing::RandomF32;

// past, seq: k [batch, past + seq, 4] and x [batch, seq, 4] and ids [seq].
testing::BuiltModel PastModel() {
  ModelBuilder m;
  SymExpr batch = m.Dim("batch", 1, 4);
  SymExpr past = m.Dim("past", 0, 16);
  SymExpr seq = m.Dim("seq", 1, 8);
  Value* x = m.In("x", {batch, seq, SymExpr(4)});
  Value* k = m.In("k", {batch, past + seq, SymExpr(4)});
  Value* p = m.In("p", {batch, past, SymExpr(4)});
  m.graph().AddOutput(m.Op("Relu", {x}));
  m.graph().AddOutput(m.Op("Relu", {k}));
  m.graph().AddOutput(m.Op("Relu", {p}));
  return m.Finish();
}

absl::StatusOr<std::unique_ptr<Session>> SessionOf(testing::BuiltModel model, SpecializationPolicy policy) {
  SessionOptions options;
  options.policy = policy;
  return Session::Create(ModelSource::Built(std::move(model.graph), std::move(model.env)), options);
}

struct Views {
  std::vector<Tensor> tensors;
  std::vector<TensorView> views;
  explicit Views(std::vector<Tensor> t) : tensors(std::move(t)) {
    for (const Tensor& x : tensors) views.push_back(TensorView::Of(x));
  }
};

TEST(InputBinderTest, FirstOccurrenceBindsInInputThenDimOrder) {
  testing::BuiltModel model = PastModel();
  absl::StatusOr<InputBinder> binder = InputBinder::Create(*model.graph, *model.env);
  ASSERT_TRUE(binder.ok()) << binder.status();
  // batch and seq from x; past + seq is an expression; past from p.
  EXPECT_THAT(binder->symbol_names(), ElementsAre("batch", "seq", "past"));
  EXPECT_EQ(binder->symbols()[2].input, 2);
  EXPECT_EQ(binder->symbols()[2].dim, 1);
  EXPECT_EQ(binder->inputs()[1].dims[0].repeat, 0);   // k's batch repeats x's
  EXPECT_EQ(binder->inputs()[1].dims[1].bind, -1);    // past + seq: neither
  EXPECT_EQ(binder->inputs()[1].dims[1].repeat, -1);
  EXPECT_EQ(binder->inputs()[1].dims[2].fixed, 4);

  Views good({RandomF32({2, 3, 4}, 1), RandomF32({2, 8, 4}, 2), RandomF32({2, 5, 4}, 3)});
  int64_t values[3] = {0, 0, 0};
  ASSERT_TRUE(binder->Bind(good.views, absl::MakeSpan(values)).ok());
  EXPECT_THAT(values, ElementsAre(2, 3, 5));
}

TEST(InputBinderTest, EveryMistakeIsNamed) {
  testing::BuiltModel model = PastModel();
  InputBinder binder = *InputBinder::Create(*model.graph, *model.env);
  struct Case {
    std::vector<Tensor> inputs;
    const char* expect;
    absl::StatusCode code = absl::StatusCode::kInvalidArgument;
  };
  std::vector<Case> cases;
  cases.push_back({{RandomF32({2, 3, 4}, 1)}, "expected 3 inputs, got 1"});
  cases.push_back({{Tensor::Zeros(DType::kI64, {2, 3, 4}).value(), RandomF32({2, 8, 4}, 2), RandomF32({2, 5, 4}, 3)},
                   "input 'x' has dtype i64, expected f32"});
  cases.push_back({{RandomF32({2, 3}, 1), RandomF32({2, 8, 4}, 2), RandomF32({2, 5, 4}, 3)},
                   "input 'x' has rank 2, expected 3"});
  cases.push_back({{RandomF32({2, 3, 5}, 1), RandomF32({2, 8, 4}, 2), RandomF32({2, 5, 4}, 3)},
                   "input 'x' dim 2 is 5, expected 4"});
  cases.push_back({{RandomF32({2, 9, 4}, 1), RandomF32({2, 8, 4}, 2), RandomF32({2, 5, 4}, 3)},
                   "input 'x' dim 1 (seq) = 9 is outside the declared range 1..8", absl::StatusCode::kOutOfRange});
  cases.push_back({{RandomF32({2, 3, 4}, 1), RandomF32({3, 8, 4}, 2), RandomF32({2, 5, 4}, 3)},
                   "input 'k' dim 0 (batch) is 3 but input 'x' dim 0 says batch = 2"});
  cases.push_back({{RandomF32({2, 3, 4}, 1), RandomF32({2, 8, 4}, 2), RandomF32({2, 17, 4}, 3)},
                   "input 'p' dim 1 (past) = 17 is outside the declared range 0..16", absl::StatusCode::kOutOfRange});
  for (Case& c : cases) {
    Views v(std::move(c.inputs));
    int64_t values[3];
    absl::Status s = binder.Bind(v.views, absl::MakeSpan(values));
    EXPECT_EQ(s.code(), c.code) << c.expect << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.expect));
  }
}

TEST(InputBinderTest, AnUndeclaredSymbolIsAnErrorUnlessAllowed) {
  ModelBuilder m;
  Value* x = m.In("x", {SymExpr::Symbol("n")});
  m.graph().AddOutput(m.Op("Relu", {x}));
  testing::BuiltModel model = m.Finish();
  absl::StatusOr<InputBinder> strict = InputBinder::Create(*model.graph, *model.env);
  ASSERT_FALSE(strict.ok());
  EXPECT_THAT(strict.status().message(), HasSubstr("input 'x' dim 0: symbol 'n' is not declared"));
  absl::StatusOr<InputBinder> lenient = InputBinder::Create(*model.graph, *model.env, /*allow_undeclared=*/true);
  ASSERT_TRUE(lenient.ok()) << lenient.status();
  EXPECT_EQ(lenient->symbols()[0].min, 0);
}

// The Program checks what the binder leaves to it (past + seq) after the size
// tape, on both doors: Program::Run and the Dispatcher's RunBound.
TEST(InputBinderTest, DerivedDimsAreCheckedAfterBindingOnEveryPolicy) {
  for (SpecializationPolicy policy : {SpecializationPolicy::kPolymorphic, SpecializationPolicy::kStatic}) {
    absl::StatusOr<std::unique_ptr<Session>> session = SessionOf(PastModel(), policy);
    ASSERT_TRUE(session.ok()) << session.status();
    absl::StatusOr<std::vector<Tensor>> good =
        (*session)->Run({RandomF32({2, 3, 4}, 1), RandomF32({2, 8, 4}, 2), RandomF32({2, 5, 4}, 3)});
    EXPECT_TRUE(good.ok()) << good.status();
    absl::StatusOr<std::vector<Tensor>> bad =
        (*session)->Run({RandomF32({2, 3, 4}, 1), RandomF32({2, 7, 4}, 2), RandomF32({2, 5, 4}, 3)});
    ASSERT_FALSE(bad.ok());
    // A static entry's pinned program knows the dim as the constant 8.
    const std::string wanted = policy == SpecializationPolicy::kStatic ? "8" : "past + seq = 8";
    EXPECT_THAT(std::string(bad.status().message()),
                HasSubstr("input 'k' dim 1 is 7, but the model requires " + wanted))
        << SpecializationPolicyName(policy);
  }
}

// A relation of the domain (past + seq <= 12 here; GPT-2 with past's
// `past_sequence + sequence <= 1024`) is checked on every request, on the
// binder and through a Session on every policy, naming the dims, their
// values, the relation and its note.
TEST(InputBinderTest, TheDomainsRelationsAreCheckedAfterTheRanges) {
  for (SpecializationPolicy policy : {SpecializationPolicy::kAuto, SpecializationPolicy::kStatic}) {
    testing::BuiltModel model = PastModel();
    const Predicate relation = Predicate::Le(SymExpr::Symbol("past") + SymExpr::Symbol("seq"), 12);
    ASSERT_TRUE(model.env->AddDomainConstraint({relation, "node 'pos' (Gather) reads 12 rows"}).ok());
    InputBinder binder = *InputBinder::Create(*model.graph, *model.env);
    ASSERT_TRUE(binder.relations().has_value());
    int64_t values[3];
    Views inside({RandomF32({2, 3, 4}, 1), RandomF32({2, 12, 4}, 2), RandomF32({2, 9, 4}, 3)});
    EXPECT_TRUE(binder.Bind(inside.views, absl::MakeSpan(values)).ok());
    Views outside({RandomF32({2, 4, 4}, 1), RandomF32({2, 13, 4}, 2), RandomF32({2, 9, 4}, 3)});
    absl::Status refused = binder.Bind(outside.views, absl::MakeSpan(values));
    EXPECT_EQ(refused.code(), absl::StatusCode::kOutOfRange);
    EXPECT_EQ(refused.message(),
              "dims past = 9, seq = 4 are outside the model's domain: past + seq <= 12 does not hold; "
              "node 'pos' (Gather) reads 12 rows");

    absl::StatusOr<std::unique_ptr<Session>> session = SessionOf(std::move(model), policy);
    ASSERT_TRUE(session.ok()) << session.status();
    absl::StatusOr<std::vector<Tensor>> good =
        (*session)->Run({RandomF32({2, 3, 4}, 1), RandomF32({2, 12, 4}, 2), RandomF32({2, 9, 4}, 3)});
    EXPECT_TRUE(good.ok()) << SpecializationPolicyName(policy) << ": " << good.status();
    absl::StatusOr<std::vector<Tensor>> bad =
        (*session)->Run({RandomF32({2, 4, 4}, 1), RandomF32({2, 13, 4}, 2), RandomF32({2, 9, 4}, 3)});
    ASSERT_FALSE(bad.ok()) << SpecializationPolicyName(policy);
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr("past + seq <= 12 does not hold"));
    // Refused before any compile: the one compile is the first request's.
    EXPECT_EQ((*session)->stats().dispatcher.compiles, 1) << SpecializationPolicyName(policy);
  }
}

}  // namespace
}  // namespace shapeshift::runtime
