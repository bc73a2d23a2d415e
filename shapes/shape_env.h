// ShapeEnv: the symbols of one compilation, their declared ranges and hints,
// and the single place where shape questions are answered.
//
// A pass that wants a shape fact asks `env.Query(pred, provenance)`. The
// answer is proven (true/false for every input in the domain: range and
// modular analysis first, Z3 second), specialized (the symbol's policy lets
// this compile specialize: the answer comes from the hint and the *question*
// is recorded as a guard atom with its provenance), or unknown (the caller
// must emit code correct either way). Guards are therefore the questions the
// compiler asked, never the values it observed.
//
// Facts can be assumed for a scope with `ShapeEnv::Assume` (RAII), the way a
// code generator enters the body of a runtime branch. Scopes nest and must
// end in reverse order of creation.
//
// Query rules, in order:
//  1. Proven: range + modular analysis (cheap), then Z3 (short timeout; both
//     the question and its negation), assuming the declared ranges, the
//     scoped facts and the guards recorded so far (the artifact only ever
//     runs where its guards hold, so they are facts for later questions).
//  2. Specialized: only when every symbol of the question is declared, has a
//     hint and is not kPolymorphic; a kBucketed symbol never specializes on
//     an exact-value question (`sym == c` / `sym != c`, anywhere in the
//     question) — only kStatic may; the hints must not violate a scoped fact
//     (that code is unreachable at the hint); the question must evaluate at
//     the hints. The recorded atom is the question (or its negation),
//     oriented to hold at the hints, deduplicated.
//  3. Otherwise unknown.
#ifndef SHAPESHIFT_SHAPES_SHAPE_ENV_H_
#define SHAPESHIFT_SHAPES_SHAPE_ENV_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shapes/predicate.h"
#include "shapes/sym_expr.h"

namespace shapeshift {

// How a compile may treat one symbol.
enum class SymbolPolicy {
  kPolymorphic,  // never specialize: unknown answers stay unknown
  kBucketed,     // may specialize; answers come from the hint, recorded as guards
  kStatic,       // may specialize on anything, including exact equality
};

struct SymbolInfo {
  std::string name;
  int64_t min = 1;  // inclusive
  int64_t max = 1;  // inclusive
  std::optional<int64_t> hint;
  SymbolPolicy policy = SymbolPolicy::kPolymorphic;
  // Why the range is narrower than declared, when the model implied it (the
  // importer's note naming the node, graph/README.md); "" otherwise. Domain
  // checks add it to their refusal.
  std::string range_note;
};

// "" or "; " + the symbol's range_note: the tail of a refusal of a value
// outside the symbol's range.
std::string RangeNoteSuffix(const SymbolInfo& info);

// A relation between symbols that bounds the domain where no range of one
// symbol can: GPT-2 with past reads position rows up to `past_sequence +
// sequence - 1` of a 1024-row table, so it serves `past_sequence + sequence
// <= 1024` — every pair on one side, none on the other. Part of the domain
// like the ranges: every question assumes it, DomainPredicate() includes it,
// and each request is checked against it (runtime::InputBinder).
struct DomainConstraint {
  Predicate predicate;
  // Why the model implies it (the importer's note naming the node).
  std::string note;
};

// OutOfRange: the values of the symbols of `constraint` (from `values`), the
// relation and its note — the one text every domain check gives a request
// outside a relation.
absl::Status RelationRefusal(const DomainConstraint& constraint, const Assignment& values);

// Who asked a question and why; carried by every recorded guard atom.
struct Provenance {
  std::string pass;    // e.g. "fusion", "shape-inference", "codegen/cpu"
  std::string node;    // graph node name, or "" when not about one node
  std::string reason;  // e.g. "drop the vector remainder loop"
};

// The one text of a provenance, as every report prints it:
// "<pass> at node '<node>': <reason>" (no " at node" part when node is "").
std::string ProvenanceText(const Provenance& p);

struct GuardAtom {
  Predicate predicate;  // the question, oriented so it held at the hint
  Provenance provenance;
};

enum class Answer {
  kProvenTrue,
  kProvenFalse,
  kSpecializedTrue,   // recorded `predicate` as a guard
  kSpecializedFalse,  // recorded `!predicate` as a guard
  kUnknown,
};
bool IsTrue(Answer a);    // kProvenTrue or kSpecializedTrue
bool IsFalse(Answer a);   // kProvenFalse or kSpecializedFalse
const char* AnswerName(Answer a);
const char* SymbolPolicyName(SymbolPolicy p);

class Z3Bridge;

class ShapeEnv {
 public:
  ShapeEnv();
  ~ShapeEnv();
  ShapeEnv(const ShapeEnv&) = delete;
  ShapeEnv& operator=(const ShapeEnv&) = delete;

  // Declares a symbol with an inclusive range; an error if min > max or if the
  // name is already declared with a different range.
  absl::StatusOr<SymExpr> DeclareSymbol(SymbolInfo info);
  // A fresh symbol named `<prefix><n>` with the given range (anonymous dims).
  SymExpr FreshSymbol(absl::string_view prefix, int64_t min, int64_t max);
  bool HasSymbol(absl::string_view name) const;
  const SymbolInfo* FindSymbol(absl::string_view name) const;
  const std::vector<SymbolInfo>& symbols() const;
  absl::Status SetHint(absl::string_view name, int64_t hint);
  // Shrinks a declared symbol's range to [min, max], which must lie inside
  // the current range (and keep its hint). Only shrinking is allowed because
  // that is what keeps it sound: every answer proven so far holds over the
  // wider range, so it holds over the narrower one; an error otherwise. The
  // importer uses it when the model itself only works on part of a dim's
  // default range (graph/README.md, "Model-implied dim ranges"); `note`
  // (why) becomes the symbol's range_note.
  absl::Status NarrowRange(absl::string_view name, int64_t min, int64_t max, absl::string_view note = {});
  absl::Status SetPolicy(absl::string_view name, SymbolPolicy policy);
  // Adds a relation to the domain (see DomainConstraint). Like NarrowRange
  // it only shrinks the domain, which keeps every earlier answer sound. Its
  // symbols must be declared; an equal predicate is added once (the first
  // note stays).
  absl::Status AddDomainConstraint(DomainConstraint constraint);
  const std::vector<DomainConstraint>& domain_constraints() const;
  // Declares `other`'s relations here too (the copies a compile makes of a
  // model's env: tiers, redeclared ranges). Symbols must be declared first.
  absl::Status CopyDomainConstraintsFrom(const ShapeEnv& other);

  // The question interface (see top of file).
  Answer Query(const Predicate& question, const Provenance& provenance);
  // Questions that read as verbs; none records a guard.
  bool CanProve(const Predicate& p);
  bool CanProveEqual(SymExpr a, SymExpr b) { return CanProve(Predicate::Eq(a, b)); }

  // Recorded guard atoms, in the order they were asked.
  const std::vector<GuardAtom>& guards() const;
  // The domain as one predicate: min <= s && s <= max for each symbol s,
  // and every DomainConstraint.
  Predicate DomainPredicate() const;

  // Facts assumed true while a scope is alive (RAII).
  class Scope {
   public:
    Scope(ShapeEnv* env, Predicate fact);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    ShapeEnv* env_;
  };
  Scope Assume(Predicate fact) { return Scope(this, std::move(fact)); }

  Z3Bridge& z3();

 private:
  // Range/modular analysis over the declared ranges, scoped facts and
  // recorded guards; std::nullopt when it cannot decide.
  std::optional<bool> ProveCheaply(const Predicate& p) const;
  // ProveCheaply, then Z3 (both p and !p); std::nullopt when neither decides.
  std::optional<bool> Decide(const Predicate& p);
  // Why `question` may not be specialized on (see Query's rules), or
  // std::nullopt when it may.
  std::optional<std::string> WhyNotSpecializable(const Predicate& question) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_SHAPES_SHAPE_ENV_H_
