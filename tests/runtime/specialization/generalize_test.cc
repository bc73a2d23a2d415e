// Guard generalization: implied atoms are dropped with their survivors'
// provenance intact; contradictions are errors.
#include "runtime/specialization/generalize.h"

#include "gtest/gtest.h"

namespace shapeshift::runtime {
namespace {

GuardAtom Atom(const std::string& text, const std::string& pass) {
  return GuardAtom{ParsePredicate(text).value(), Provenance{pass, "", "test"}};
}

Predicate Domain() { return ParsePredicate("1 <= seq && seq <= 512").value(); }

TEST(GeneralizeTest, AtomImpliedByAPinIsDropped) {
  Z3Bridge z3;
  absl::StatusOr<std::vector<GuardAtom>> kept =
      DropImpliedAtoms(Domain(), {Atom("seq == 37", "dispatcher"), Atom("seq <= 64", "memory-plan")}, z3);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].predicate.ToString(), "seq == 37");
  EXPECT_EQ((*kept)[0].provenance.pass, "dispatcher");
}

TEST(GeneralizeTest, AtomImpliedByTheDomainIsDropped) {
  Z3Bridge z3;
  absl::StatusOr<std::vector<GuardAtom>> kept =
      DropImpliedAtoms(Domain(), {Atom("seq <= 1000", "fusion"), Atom("seq % 16 == 0", "codegen")}, z3);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].provenance.pass, "codegen");
}

TEST(GeneralizeTest, IndependentAtomsAreKept) {
  Z3Bridge z3;
  absl::StatusOr<std::vector<GuardAtom>> kept =
      DropImpliedAtoms(Domain(), {Atom("seq <= 64", "a"), Atom("seq % 16 == 0", "b")}, z3);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->size(), 2u);
}

TEST(GeneralizeTest, ContradictionIsAnError) {
  Z3Bridge z3;
  absl::StatusOr<std::vector<GuardAtom>> kept =
      DropImpliedAtoms(Domain(), {Atom("seq <= 16", "a"), Atom("seq > 32", "b")}, z3);
  ASSERT_FALSE(kept.ok());
  EXPECT_NE(kept.status().message().find("contradicts"), std::string::npos) << kept.status();
}

}  // namespace
}  // namespace shapeshift::runtime
