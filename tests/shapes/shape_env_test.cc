#include "shapes/shape_env.h"

#include "gtest/gtest.h"

namespace shapeshift {
namespace {

SymbolInfo Info(const char* name, int64_t lo, int64_t hi, std::optional<int64_t> hint = std::nullopt,
                SymbolPolicy policy = SymbolPolicy::kPolymorphic) {
  SymbolInfo s;
  s.name = name;
  s.min = lo;
  s.max = hi;
  s.hint = hint;
  s.policy = policy;
  return s;
}

const Provenance kWho{"test", "node0", "because"};

TEST(ShapeEnvTest, DeclaresSymbolsAndRejectsConflicts) {
  ShapeEnv env;
  ASSERT_TRUE(env.DeclareSymbol(Info("seq", 1, 512)).ok());
  EXPECT_TRUE(env.DeclareSymbol(Info("seq", 1, 512)).ok());
  EXPECT_FALSE(env.DeclareSymbol(Info("seq", 1, 256)).ok());
  EXPECT_FALSE(env.DeclareSymbol(Info("bad", 5, 4)).ok());
  EXPECT_FALSE(env.DeclareSymbol(Info("has space", 1, 4)).ok());
  EXPECT_FALSE(env.DeclareSymbol(Info("h", 1, 4, 9)).ok());
  EXPECT_TRUE(env.HasSymbol("seq"));
  EXPECT_EQ(env.FindSymbol("seq")->max, 512);
  EXPECT_EQ(env.FindSymbol("nope"), nullptr);
  EXPECT_FALSE(env.SetHint("nope", 3).ok());
  EXPECT_FALSE(env.SetHint("seq", 513).ok());
  EXPECT_TRUE(env.SetHint("seq", 37).ok());
  EXPECT_FALSE(env.SetPolicy("nope", SymbolPolicy::kStatic).ok());
  SymExpr fresh = env.FreshSymbol("d", 1, 8);
  EXPECT_TRUE(env.HasSymbol(fresh.symbol_name()));
  EXPECT_NE(env.FreshSymbol("d", 1, 8), fresh);
}

// A relation between symbols (GPT-2 with past: past + seq <= 1024) is part
// of the domain: questions assume it, DomainPredicate() holds it, copies
// carry it; it names only declared symbols and is added once.
TEST(ShapeEnvTest, DomainConstraintsAreAssumedByEveryQuestion) {
  ShapeEnv env;
  ASSERT_TRUE(env.DeclareSymbol(Info("past", 0, 4096)).ok());
  ASSERT_TRUE(env.DeclareSymbol(Info("seq", 1, 4096)).ok());
  const SymExpr past = SymExpr::Symbol("past"), seq = SymExpr::Symbol("seq");
  const Predicate sum_le = Predicate::Le(past + seq, 1024);
  EXPECT_FALSE(env.CanProve(Predicate::Le(seq, 1024)));
  ASSERT_TRUE(env.AddDomainConstraint({sum_le, "because"}).ok());
  EXPECT_TRUE(env.AddDomainConstraint({sum_le, "again"}).ok());
  ASSERT_EQ(env.domain_constraints().size(), 1u);
  EXPECT_EQ(env.domain_constraints()[0].note, "because");
  EXPECT_TRUE(env.CanProve(Predicate::Le(seq, 1024)));
  EXPECT_TRUE(env.CanProve(Predicate::Lt(past, 1024)));
  EXPECT_EQ(env.Query(Predicate::Le(past + seq, 2000), kWho), Answer::kProvenTrue);
  EXPECT_TRUE(env.guards().empty());
  absl::StatusOr<bool> at_corner = env.DomainPredicate().Evaluate({{"past", 1000}, {"seq", 100}});
  ASSERT_TRUE(at_corner.ok());
  EXPECT_FALSE(*at_corner);  // in both ranges, outside the relation
  EXPECT_EQ(env.AddDomainConstraint({Predicate::Le(SymExpr::Symbol("other"), 3), ""}).code(),
            absl::StatusCode::kNotFound);

  ShapeEnv copy;
  ASSERT_TRUE(copy.DeclareSymbol(Info("past", 0, 4096)).ok());
  EXPECT_FALSE(copy.CopyDomainConstraintsFrom(env).ok());  // seq is not declared there
  ASSERT_TRUE(copy.DeclareSymbol(Info("seq", 1, 4096)).ok());
  ASSERT_TRUE(copy.CopyDomainConstraintsFrom(env).ok());
  EXPECT_TRUE(copy.CanProve(Predicate::Le(seq, 1024)));
}

TEST(ShapeEnvTest, ARelationRefusalNamesTheValuesTheRelationAndTheNote) {
  DomainConstraint c{Predicate::Le(SymExpr::Symbol("past") + SymExpr::Symbol("seq"), 1024), "node 'g' reads 1024 rows"};
  absl::Status s = RelationRefusal(c, {{"past", 1000}, {"seq", 30}, {"batch", 2}});
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(s.message(), "dims past = 1000, seq = 30 are outside the model's domain: past + seq <= 1024 does not "
                         "hold; node 'g' reads 1024 rows");
}

TEST(ShapeEnvTest, ProvesFromRanges) {
  ShapeEnv env;
  SymExpr seq = *env.DeclareSymbol(Info("seq", 1, 512));
  EXPECT_EQ(env.Query(Predicate::Le(seq, 512), kWho), Answer::kProvenTrue);
  EXPECT_EQ(env.Query(Predicate::Gt(seq, 512), kWho), Answer::kProvenFalse);
  EXPECT_EQ(env.Query(Predicate::Ge(seq * 4, 4), kWho), Answer::kProvenTrue);
  EXPECT_EQ(env.Query(Predicate::Le(seq, 128), kWho), Answer::kUnknown);
  EXPECT_TRUE(env.guards().empty());
  EXPECT_TRUE(env.CanProve(Predicate::Lt(seq, seq + 1)));
  EXPECT_FALSE(env.CanProve(Predicate::Le(seq, 128)));
}

TEST(ShapeEnvTest, ScopedFactsAreEnteredAndLeft) {
  ShapeEnv env;
  SymExpr seq = *env.DeclareSymbol(Info("seq", 1, 512));
  {
    auto scope = env.Assume(Predicate::Divisible(seq, 16));
    EXPECT_EQ(env.Query(Predicate::Divisible(seq, 8), kWho), Answer::kProvenTrue);
    EXPECT_EQ(env.Query(Predicate::Eq(Mod(seq, 16), 3), kWho), Answer::kProvenFalse);
    {
      auto inner = env.Assume(Predicate::Gt(seq, 128));
      EXPECT_EQ(env.Query(Predicate::Ge(seq, 144), kWho), Answer::kProvenTrue);
    }
    EXPECT_EQ(env.Query(Predicate::Ge(seq, 144), kWho), Answer::kUnknown);
  }
  EXPECT_EQ(env.Query(Predicate::Divisible(seq, 8), kWho), Answer::kUnknown);
}

TEST(ShapeEnvTest, SpecializesOnHintsAndRecordsTheQuestion) {
  ShapeEnv env;
  SymExpr seq = *env.DeclareSymbol(Info("seq", 1, 512, 37, SymbolPolicy::kBucketed));
  EXPECT_EQ(env.Query(Predicate::Le(seq, 64), {"fusion", "ln1", "one tile"}), Answer::kSpecializedTrue);
  EXPECT_EQ(env.Query(Predicate::Divisible(seq, 16), kWho), Answer::kSpecializedFalse);
  ASSERT_EQ(env.guards().size(), 2u);
  EXPECT_EQ(env.guards()[0].predicate.ToString(), "seq <= 64");
  EXPECT_EQ(env.guards()[0].provenance.pass, "fusion");
  EXPECT_EQ(env.guards()[0].provenance.node, "ln1");
  EXPECT_EQ(env.guards()[1].predicate.ToString(), "seq % 16 != 0");
  // Recorded guards are facts afterwards (the artifact only runs where they
  // hold): asking again, or asking something they imply, records nothing.
  EXPECT_EQ(env.Query(Predicate::Le(seq, 64), kWho), Answer::kProvenTrue);
  EXPECT_EQ(env.guards().size(), 2u);
  EXPECT_EQ(env.Query(Predicate::Le(seq, 100), kWho), Answer::kProvenTrue);
  EXPECT_EQ(env.guards().size(), 2u);
}

TEST(ShapeEnvTest, BucketedSymbolsNeverSpecializeOnExactValues) {
  ShapeEnv env;
  SymExpr seq = *env.DeclareSymbol(Info("seq", 1, 512, 37, SymbolPolicy::kBucketed));
  EXPECT_EQ(env.Query(Predicate::Eq(seq, 37), kWho), Answer::kUnknown);
  EXPECT_EQ(env.Query(Predicate::Ne(seq, 37), kWho), Answer::kUnknown);
  EXPECT_TRUE(env.guards().empty());
  ASSERT_TRUE(env.SetPolicy("seq", SymbolPolicy::kStatic).ok());
  EXPECT_EQ(env.Query(Predicate::Eq(seq, 37), kWho), Answer::kSpecializedTrue);
  EXPECT_EQ(env.guards().size(), 1u);
}

TEST(ShapeEnvTest, PolymorphicOrHintlessSymbolsStayUnknown) {
  ShapeEnv env;
  SymExpr a = *env.DeclareSymbol(Info("a", 1, 512, 37, SymbolPolicy::kPolymorphic));
  SymExpr b = *env.DeclareSymbol(Info("b", 1, 512, std::nullopt, SymbolPolicy::kStatic));
  SymExpr c = *env.DeclareSymbol(Info("c", 1, 512, 5, SymbolPolicy::kStatic));
  EXPECT_EQ(env.Query(Predicate::Le(a, 64), kWho), Answer::kUnknown);
  EXPECT_EQ(env.Query(Predicate::Le(b, 64), kWho), Answer::kUnknown);
  EXPECT_EQ(env.Query(Predicate::Le(a + c, 64), kWho), Answer::kUnknown);
  EXPECT_TRUE(env.guards().empty());
}

TEST(ShapeEnvTest, NoSpecializationWhenHintsViolateScopedFacts) {
  ShapeEnv env;
  SymExpr seq = *env.DeclareSymbol(Info("seq", 1, 512, 37, SymbolPolicy::kStatic));
  auto scope = env.Assume(Predicate::Gt(seq, 128));
  EXPECT_EQ(env.Query(Predicate::Le(seq, 256), kWho), Answer::kUnknown);
  EXPECT_TRUE(env.guards().empty());
}

TEST(ShapeEnvTest, UsesZ3WhenRangesAreNotEnough) {
  ShapeEnv env;
  SymExpr a = *env.DeclareSymbol(Info("a", 1, 64));
  SymExpr b = *env.DeclareSymbol(Info("b", 1, 64));
  auto scope = env.Assume(Predicate::Le(a, b));
  // Needs the relation a <= b, which intervals cannot hold.
  EXPECT_EQ(env.Query(Predicate::Le(Min(a, b), b), kWho), Answer::kProvenTrue);
  EXPECT_EQ(env.Query(Predicate::Gt(a - b, 0), kWho), Answer::kProvenFalse);
  EXPECT_EQ(env.Query(Predicate::Eq(FloorDiv(a, 2) * 2 + Mod(a, 2), a), kWho), Answer::kProvenTrue);
}

TEST(ShapeEnvTest, DomainPredicate) {
  ShapeEnv env;
  ASSERT_TRUE(env.DeclareSymbol(Info("b", 1, 8)).ok());
  ASSERT_TRUE(env.DeclareSymbol(Info("s", 2, 16)).ok());
  EXPECT_EQ(env.DomainPredicate().ToString(), "b >= 1 && b <= 8 && s >= 2 && s <= 16");
  EXPECT_STREQ(AnswerName(Answer::kSpecializedTrue), "specialized-true");
  EXPECT_TRUE(IsTrue(Answer::kProvenTrue));
  EXPECT_TRUE(IsFalse(Answer::kSpecializedFalse));
  EXPECT_FALSE(IsTrue(Answer::kUnknown));
}

}  // namespace
}  // namespace shapeshift
