#include "codegen/cuda/thread_mapping.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"

namespace shapeshift::codegen::cuda {
namespace {

// Over the DAG, each distinct node once (a chain of k reuses is 2^k nodes as
// a tree).
bool ValueReads(const Value& v, const std::string& name) {
  for (const Value* node : PostOrder(v)) {
    if ((*node)->kind == ValueKind::kVar && (*node)->name == name) return true;
  }
  return false;
}

bool BodyReads(const std::vector<Stmt>& body, const std::string& name) {
  for (const Stmt& s : body) {
    if (ValueReads(s.value, name) || ValueReads(s.at, name) || BodyReads(s.body, name)) return true;
  }
  return false;
}

bool HasStoreAt(const std::vector<Stmt>& body) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::kStoreAt || HasStoreAt(s.body)) return true;
  }
  return false;
}

// Whether a loop's iterations may run on different threads as far as
// data-indexed stores go: kernel_ir.h promises disjoint StoreAt writes only
// across parallel iterations and across the iterations of one innermost
// loop. An outer loop around data-indexed stores (ScatterND's loop over the
// index tuples around each tuple's slice) may write one place twice where
// tuples repeat, and the later iteration must win, so it keeps its order on
// one thread.
bool MaySpreadOverThreads(const Stmt& loop) {
  if (!HasStoreAt(loop.body)) return true;
  for (const Stmt& s : loop.body) {
    if (s.kind == StmtKind::kLoop) return false;  // not innermost
  }
  return true;
}

// The reduce ops of every Accumulate into `name` inside `body` (any depth).
void CollectAccumulates(const std::vector<Stmt>& body, const std::string& name, absl::flat_hash_set<int>* ops) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::kAccumulate && s.name == name) ops->insert(static_cast<int>(s.reduce));
    CollectAccumulates(s.body, name, ops);
  }
}

}  // namespace

bool OnlyDims(SymExpr e, const Kernel& k) {
  for (const std::string& sym : e.Symbols()) {
    if (std::find(k.dims.begin(), k.dims.end(), sym) == k.dims.end()) return false;
  }
  return true;
}

SymExpr TripCount(const Stmt& loop) { return Max(loop.end - loop.begin, 0); }

MappingPlan ChooseMapping(const Kernel& k) {
  MappingPlan plan;
  std::vector<const Stmt*> accumulators;
  for (const Stmt& s : k.body) {
    if (s.kind == StmtKind::kAccumulator) accumulators.push_back(&s);
  }
  if (accumulators.empty()) {
    if (k.body.size() == 1 && k.body[0].kind == StmtKind::kLoop && OnlyDims(k.body[0].begin, k) &&
        OnlyDims(k.body[0].end, k) && MaySpreadOverThreads(k.body[0])) {
      plan.mapping = ThreadMapping::kFlat;
    }
    return plan;
  }
  // Block per row: each top-level loop may reduce top-level accumulators
  // (one op each) that it does not also read; their partials are combined
  // after the loop.
  for (const Stmt& s : k.body) {
    if (s.kind != StmtKind::kLoop) continue;
    if (!MaySpreadOverThreads(s)) return plan;
    RowLoopPlan loop;
    for (const Stmt* acc : accumulators) {
      absl::flat_hash_set<int> ops;
      CollectAccumulates(s.body, acc->name, &ops);
      if (ops.empty()) continue;
      if (ops.size() > 1 || BodyReads(s.body, acc->name)) return plan;  // sequential dependence
      loop.reduced.push_back(acc->name);
      loop.ops.push_back(static_cast<ReduceOp>(*ops.begin()));
    }
    plan.loops[&s] = std::move(loop);
  }
  plan.mapping = ThreadMapping::kBlockPerRow;
  return plan;
}

}  // namespace shapeshift::codegen::cuda
