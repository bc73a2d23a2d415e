// `shapeshift prove`: does a set of guard sets cover a declared shape
// domain? Each `--guards` is one artifact's guard set (a conjunction); the
// domain is the box of `--dim name=lo..hi` ranges. Z3 either proves every
// point of the domain passes some guard set (exit 0, `covered`) or returns a
// real point that passes none (exit 1, `uncovered: batch=3 seq=130`), which
// is exactly the shape that would still trigger a recompile.
//
// Today the guard sets come as text (`--guards` present ⇒ text form). A
// model form (`shapeshift prove MODEL --dim ...`, the guards of a compiled
// model's artifacts) will be a second entry point beside ProveGuardText.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "shapes/predicate.h"
#include "shapes/symbol_facts.h"
#include "shapes/z3_bridge.h"
#include "tools/args.h"
#include "tools/command.h"

namespace shapeshift::tools {
namespace {

constexpr unsigned kProveTimeoutMs = 10000;

struct DimRange {
  std::string name;
  int64_t lo = 0;
  int64_t hi = 0;
};

// `seq=1..512`
absl::StatusOr<DimRange> ParseDim(const std::string& text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dim '", text, "': ", why, " (expected NAME=LO..HI, e.g. seq=1..512)"));
  };
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return bad("missing NAME=");
  DimRange d;
  d.name = text.substr(0, eq);
  absl::StatusOr<SymExpr> sym = ParseSymExpr(d.name);
  if (!sym.ok() || !sym->IsSymbol() || sym->symbol_name() != d.name) return bad("NAME is not an identifier");
  std::string range = text.substr(eq + 1);
  size_t dots = range.find("..");
  if (dots == std::string::npos) return bad("missing LO..HI");
  if (!absl::SimpleAtoi(range.substr(0, dots), &d.lo) ||
      !absl::SimpleAtoi(range.substr(dots + 2), &d.hi)) {
    return bad("LO and HI must be integers");
  }
  if (d.lo > d.hi) return bad("LO is greater than HI");
  return d;
}

// One `--guards` text: its conjuncts become the atoms of one guard set.
absl::StatusOr<std::vector<Predicate>> ParseGuardSet(const std::string& text,
                                                     const absl::btree_set<std::string>& dims) {
  absl::StatusOr<Predicate> p = ParsePredicate(text);
  if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat("--guards: ", p.status().message()));
  absl::btree_set<std::string> used;
  p->CollectSymbols(&used);
  for (const std::string& name : used) {
    if (!dims.contains(name)) {
      return absl::InvalidArgumentError(absl::StrCat("--guards '", text, "': unknown symbol '", name,
                                                     "' (declare it with --dim ", name, "=LO..HI)"));
    }
  }
  if (p->kind() == PredKind::kAnd) return p->children();
  return std::vector<Predicate>{*p};
}

int UsageError(absl::string_view message) {
  std::fprintf(stderr, "shapeshift prove: %s\n", std::string(message).c_str());
  return kExitUsage;
}

}  // namespace

// The guard-text form: `--dim ... --guards ... [--json]`.
int ProveGuardText(const ParsedArgs& args) {
  std::vector<DimRange> dims;
  absl::btree_set<std::string> names;
  for (const std::string& text : args.All("dim")) {
    absl::StatusOr<DimRange> d = ParseDim(text);
    if (!d.ok()) return UsageError(d.status().message());
    if (!names.insert(d->name).second) return UsageError(absl::StrCat("--dim ", d->name, " given twice"));
    dims.push_back(*d);
  }
  if (dims.empty()) return UsageError("at least one --dim NAME=LO..HI is required");
  std::vector<std::vector<Predicate>> guard_sets;
  for (const std::string& text : args.All("guards")) {
    absl::StatusOr<std::vector<Predicate>> set = ParseGuardSet(text, names);
    if (!set.ok()) return UsageError(set.status().message());
    guard_sets.push_back(*std::move(set));
  }
  std::vector<Predicate> domain_parts;
  for (const DimRange& d : dims) {
    SymExpr s = SymExpr::Symbol(d.name);
    domain_parts.push_back(Predicate::Ge(s, d.lo));
    domain_parts.push_back(Predicate::Le(s, d.hi));
  }
  Z3Bridge z3(kProveTimeoutMs);
  CoverageResult r = z3.Coverage(Predicate::And(domain_parts), guard_sets);
  const bool json = args.Has("json");
  if (r.verdict == Verdict::kUnknown) {
    std::fprintf(stderr, "shapeshift prove: the solver could not decide coverage: %s\n", r.detail.c_str());
    if (json) {
      nlohmann::json out = {{"covered", false}, {"witness", nullptr}, {"unknown", r.detail}};
      std::printf("%s\n", out.dump().c_str());
    } else {
      std::printf("unknown\n");
    }
    return kExitNegative;
  }
  const bool covered = r.verdict == Verdict::kProven;
  if (json) {
    nlohmann::json out = {{"covered", covered}, {"witness", nullptr}};
    if (!covered) {
      nlohmann::json witness = nlohmann::json::object();
      for (const DimRange& d : dims) witness[d.name] = r.witness.at(d.name);
      out["witness"] = witness;
    }
    std::printf("%s\n", out.dump().c_str());
  } else if (covered) {
    std::printf("covered\n");
  } else {
    std::vector<std::string> parts;
    for (const DimRange& d : dims) parts.push_back(absl::StrCat(d.name, "=", r.witness.at(d.name)));
    std::printf("uncovered: %s\n", absl::StrJoin(parts, " ").c_str());
  }
  return covered ? kExitOk : kExitNegative;
}

namespace {

int RunProve(const std::vector<std::string>& argv) {
  FlagSpec spec;
  spec.valued = {"dim", "guards"};
  spec.switches = {"json"};
  absl::StatusOr<ParsedArgs> args = ParseArgs(argv, spec);
  if (!args.ok()) return UsageError(args.status().message());
  if (args->Has("guards")) {
    if (!args->positional.empty()) {
      return UsageError(absl::StrCat("unexpected argument '", args->positional[0],
                                     "' (the --guards form takes no model)"));
    }
    return ProveGuardText(*args);
  }
  return UsageError(
      "usage: shapeshift prove --dim NAME=LO..HI [--dim ...] --guards 'PRED' [--guards ...] [--json]\n"
      "  each --guards is one guard set; prints `covered` (exit 0) or an uncovered point (exit 1)");
}

}  // namespace

SHAPESHIFT_COMMAND(prove, "prove", "prove that guard sets cover a shape domain (or show a gap)",
                   RunProve);

}  // namespace shapeshift::tools
