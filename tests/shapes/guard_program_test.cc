#include "shapes/guard_program.h"

#include <limits>

#include "gtest/gtest.h"
#include "tests/shapes/random_expr.h"

namespace shapeshift {
namespace {

using testing::RandomExprs;
using testing::TestSeed;

std::vector<Predicate> Atoms(std::initializer_list<const char*> texts) {
  std::vector<Predicate> out;
  for (const char* t : texts) out.push_back(*ParsePredicate(t));
  return out;
}

TEST(GuardProgramTest, EvaluatesAndNamesTheFirstFailingAtom) {
  std::vector<Predicate> atoms = Atoms({"seq > 128", "seq % 16 == 0", "batch * seq <= 4096"});
  absl::StatusOr<GuardProgram> prog = GuardProgram::Compile(atoms);
  ASSERT_TRUE(prog.ok()) << prog.status();
  EXPECT_EQ(prog->slots(), (std::vector<std::string>{"batch", "seq"}));
  EXPECT_EQ(prog->SlotOf("seq"), 1u);
  EXPECT_EQ(prog->SlotOf("nope"), std::nullopt);
  EXPECT_EQ(prog->num_atoms(), 3u);
  int64_t ok[] = {2, 144};
  EXPECT_TRUE(prog->Evaluate(ok).pass);
  int64_t small[] = {2, 64};
  GuardVerdict v = prog->Evaluate(small);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.failed_atom, 0u);
  int64_t odd[] = {2, 130};
  EXPECT_EQ(prog->Evaluate(odd).failed_atom, 1u);
  int64_t big[] = {64, 144};
  EXPECT_EQ(prog->Evaluate(big).failed_atom, 2u);
}

TEST(GuardProgramTest, CallerChosenSlotOrder) {
  std::vector<Predicate> atoms = Atoms({"a < b"});
  absl::StatusOr<GuardProgram> prog = GuardProgram::Compile(atoms, {"b", "a", "unused"});
  ASSERT_TRUE(prog.ok());
  int64_t values[] = {5, 3, 0};
  EXPECT_TRUE(prog->Evaluate(values).pass);
  EXPECT_FALSE(GuardProgram::Compile(atoms, {"a"}).ok());
  EXPECT_FALSE(GuardProgram::Compile(atoms, {"a", "b", "a"}).ok());
}

TEST(GuardProgramTest, WrongSlotCountFailsClosed) {
  absl::StatusOr<GuardProgram> prog = GuardProgram::Compile(Atoms({"a < 3"}));
  ASSERT_TRUE(prog.ok());
  GuardVerdict v = prog->Evaluate({});
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.failed_atom, prog->num_atoms());
}

TEST(GuardProgramTest, OverflowAndDivisionByZeroFailClosed) {
  absl::StatusOr<GuardProgram> prog =
      GuardProgram::Compile(Atoms({"a * a >= 0", "10 // b >= 0", "a // b <= 100"}));
  ASSERT_TRUE(prog.ok());
  int64_t huge[] = {int64_t{1} << 40, 1};
  EXPECT_EQ(prog->Evaluate(huge).failed_atom, 0u);
  int64_t zero[] = {3, 0};
  EXPECT_EQ(prog->Evaluate(zero).failed_atom, 1u);
  int64_t min_div[] = {std::numeric_limits<int64_t>::min(), -1};
  EXPECT_EQ(prog->Evaluate(min_div).failed_atom, 0u);
  int64_t fine[] = {-7, 2};
  EXPECT_TRUE(prog->Evaluate(fine).pass);
}

TEST(GuardProgramTest, SharesSubexpressionsAcrossAtoms) {
  absl::StatusOr<GuardProgram> prog =
      GuardProgram::Compile(Atoms({"(s + 15) // 16 <= 8", "(s + 15) // 16 >= 2"}));
  ASSERT_TRUE(prog.ok());
  const std::string code = prog->Disassemble();
  size_t count = 0;
  for (size_t pos = code.find("floordiv"); pos != std::string::npos;
       pos = code.find("floordiv", pos + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << code;
}

TEST(GuardProgramTest, CompoundAtoms) {
  absl::StatusOr<GuardProgram> prog =
      GuardProgram::Compile(Atoms({"a < 3 || a > 10", "!(a == 12)", "a % 4 != 0"}));
  ASSERT_TRUE(prog.ok());
  int64_t v1[] = {1};
  EXPECT_TRUE(prog->Evaluate(v1).pass);
  int64_t v5[] = {5};
  EXPECT_EQ(prog->Evaluate(v5).failed_atom, 0u);
  int64_t v12[] = {12};
  EXPECT_EQ(prog->Evaluate(v12).failed_atom, 1u);
  int64_t v16[] = {16};
  EXPECT_EQ(prog->Evaluate(v16).failed_atom, 2u);
}

// The compiled program and Predicate::Evaluate agree on random guard sets,
// negative values and errors included (an erroring atom fails).
TEST(GuardProgramPropertyTest, AgreesWithPredicateEvaluation) {
  RandomExprs gen(TestSeed() + 5000);
  constexpr int kPredicates = 10000;
  constexpr int kPerSet = 4;
  int failures_seen = 0, passes_seen = 0;
  for (int i = 0; i < kPredicates / kPerSet; ++i) {
    std::vector<Predicate> atoms;
    for (int k = 0; k < kPerSet; ++k) atoms.push_back(gen.Pred(1, 3));
    absl::StatusOr<GuardProgram> prog = GuardProgram::Compile(atoms, {"a", "b", "c"});
    ASSERT_TRUE(prog.ok()) << prog.status();
    for (int s = 0; s < 8; ++s) {
      Assignment v = gen.Values(-20, 20);
      size_t expected_fail = atoms.size();
      for (size_t k = 0; k < atoms.size(); ++k) {
        absl::StatusOr<bool> r = atoms[k].Evaluate(v);
        if (!r.ok() || !*r) {
          expected_fail = k;
          break;
        }
      }
      int64_t slots[] = {v["a"], v["b"], v["c"]};
      GuardVerdict got = prog->Evaluate(slots);
      if (expected_fail == atoms.size()) {
        ASSERT_TRUE(got.pass) << "atom " << got.failed_atom << ": "
                              << atoms[got.failed_atom].ToString();
        ++passes_seen;
      } else {
        ASSERT_FALSE(got.pass) << atoms[expected_fail].ToString();
        ASSERT_EQ(got.failed_atom, expected_fail) << atoms[expected_fail].ToString();
        ++failures_seen;
      }
    }
  }
  EXPECT_GT(failures_seen, 100);
  EXPECT_GT(passes_seen, 100);
}

}  // namespace
}  // namespace shapeshift
