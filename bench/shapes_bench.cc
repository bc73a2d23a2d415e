// Shape engine benchmarks (issue 2): the dispatch-path guard evaluator, the
// Z3 implication check passes use, and canonicalization throughput.
// Results and the command that produced them: bench/RESULTS.md.
#include <vector>

#include "benchmark/benchmark.h"
#include "shapes/guard_program.h"
#include "shapes/predicate.h"
#include "shapes/shape_env.h"
#include "shapes/sym_expr.h"
#include "shapes/z3_bridge.h"

namespace shapeshift {
namespace {

// A bucketed decoder artifact's guard set: ten atoms over three symbols.
std::vector<Predicate> TenAtomGuardSet() {
  std::vector<Predicate> atoms;
  for (const char* text : {"seq >= 129", "seq <= 256", "seq % 16 == 0", "batch <= 8",
                           "batch * seq <= 4096", "(seq + 63) // 64 <= 4", "kv >= seq",
                           "kv % 64 == 0", "min(seq, 128) == 128", "kv - seq <= 1024"}) {
    atoms.push_back(*ParsePredicate(text));
  }
  return atoms;
}

void BM_GuardProgramEvaluate10Atoms(benchmark::State& state) {
  std::vector<Predicate> atoms = TenAtomGuardSet();
  GuardProgram program = *GuardProgram::Compile(atoms, {"batch", "seq", "kv"});
  int64_t slots[] = {4, 144, 256};  // passes: every atom is evaluated
  for (auto _ : state) {
    benchmark::DoNotOptimize(slots);
    GuardVerdict v = program.Evaluate(slots);
    benchmark::DoNotOptimize(v);
  }
  state.counters["instructions"] = static_cast<double>(program.num_instructions());
}
BENCHMARK(BM_GuardProgramEvaluate10Atoms);

// The same guard set interpreted through Predicate::Evaluate, for scale.
void BM_PredicateEvaluate10Atoms(benchmark::State& state) {
  std::vector<Predicate> atoms = TenAtomGuardSet();
  Assignment values{{"batch", 4}, {"seq", 144}, {"kv", 256}};
  for (auto _ : state) {
    bool all = true;
    for (const Predicate& a : atoms) all = all && *a.Evaluate(values);
    benchmark::DoNotOptimize(all);
  }
}
BENCHMARK(BM_PredicateEvaluate10Atoms);

// Z3Bridge::Implies as a pass uses it: domain + guard set => goal.
void BM_Z3ImpliesProven(benchmark::State& state) {
  Z3Bridge z3;
  std::vector<Predicate> assumptions = TenAtomGuardSet();
  assumptions.push_back(*ParsePredicate("batch >= 1 && batch <= 32 && seq >= 1 && seq <= 512 && kv >= 1 && kv <= 2048"));
  Predicate goal = *ParsePredicate("seq % 8 == 0 && batch * seq <= 8192");
  for (auto _ : state) {
    ImplicationResult r = z3.Implies(assumptions, goal);
    if (r.verdict != Verdict::kProven) state.SkipWithError("expected proven");
  }
}
BENCHMARK(BM_Z3ImpliesProven)->Unit(benchmark::kMillisecond);

void BM_Z3ImpliesRefuted(benchmark::State& state) {
  Z3Bridge z3;
  std::vector<Predicate> assumptions = TenAtomGuardSet();
  assumptions.push_back(*ParsePredicate("batch >= 1 && batch <= 32 && seq >= 1 && seq <= 512 && kv >= 1 && kv <= 2048"));
  Predicate goal = *ParsePredicate("seq <= 200");
  for (auto _ : state) {
    ImplicationResult r = z3.Implies(assumptions, goal);
    if (r.verdict != Verdict::kRefuted) state.SkipWithError("expected refuted");
  }
}
BENCHMARK(BM_Z3ImpliesRefuted)->Unit(benchmark::kMillisecond);

// Building shape expressions through the canonical polynomial form: each
// iteration builds a 12-operation expression (interning included).
void BM_Canonicalize(benchmark::State& state) {
  SymExpr seq = SymExpr::Symbol("seq"), batch = SymExpr::Symbol("batch"), heads = SymExpr::Symbol("heads");
  int64_t k = 0;
  for (auto _ : state) {
    SymExpr e = (2 * seq + batch - seq) * heads + CeilDiv(seq + (k & 7), 16) * 16 - batch * heads;
    e = e + seq * (batch + 1) - Mod(seq, 8);
    benchmark::DoNotOptimize(e);
    ++k;
  }
  state.SetItemsProcessed(state.iterations() * 12);
}
BENCHMARK(BM_Canonicalize);

// A ShapeEnv question answered by range/modular analysis (no Z3).
void BM_ShapeEnvQueryByAnalysis(benchmark::State& state) {
  ShapeEnv env;
  SymbolInfo info;
  info.name = "seq";
  info.min = 1;
  info.max = 512;
  SymExpr seq = *env.DeclareSymbol(info);
  auto scope = env.Assume(Predicate::Divisible(seq, 16));
  Predicate q = Predicate::Divisible(seq * 3 + 32, 8);
  for (auto _ : state) {
    Answer a = env.Query(q, {"bench", "", ""});
    benchmark::DoNotOptimize(a);
  }
}
BENCHMARK(BM_ShapeEnvQueryByAnalysis);

}  // namespace
}  // namespace shapeshift

BENCHMARK_MAIN();
