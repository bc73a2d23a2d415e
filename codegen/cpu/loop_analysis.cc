#include "codegen/cpu/loop_analysis.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "codegen/kernel_visitor.h"

namespace shapeshift::codegen::cpu {
namespace {

// Values are DAGs (kernel_ir.h): these visit each node once.
bool ReadsAny(const Value& v, const absl::btree_map<std::string, ReduceOp>& names) {
  for (const Value* node : PostOrder(v)) {
    if ((*node)->kind == ValueKind::kVar && names.contains((*node)->name)) return true;
  }
  return false;
}

// Which buffer a node reads and at what index (a data-dependent address is
// in no known row: a placeholder symbol, which no loop variable matches, so
// the row analysis never stages it). Every kind answers, so one added later
// that reads memory cannot slip past the streaming analysis.
class BufferRead final : public ValueVisitor<std::optional<std::pair<int, SymExpr>>> {
  using Read = std::optional<std::pair<int, SymExpr>>;
  Read VisitConst(const ValueNode&) override { return std::nullopt; }
  Read VisitLoad(const ValueNode& v) override { return std::pair{v.buffer, v.index}; }
  Read VisitLoadAt(const ValueNode& v) override { return std::pair{v.buffer, SymExpr::Symbol("<data>")}; }
  Read VisitIndex(const ValueNode&) override { return std::nullopt; }
  Read VisitVar(const ValueNode&) override { return std::nullopt; }
  Read VisitUnary(const ValueNode&, UnaryOp) override { return std::nullopt; }
  Read VisitBinary(const ValueNode&, BinaryOp) override { return std::nullopt; }
  Read VisitCompare(const ValueNode&, CompareOp) override { return std::nullopt; }
  Read VisitSelect(const ValueNode&) override { return std::nullopt; }
  Read VisitCast(const ValueNode&) override { return std::nullopt; }
};

// The buffer a statement itself writes (not its body's), or -1.
class BufferWrite final : public StmtVisitor<int> {
  int VisitLoop(const Stmt&) override { return -1; }
  int VisitStore(const Stmt& s) override { return s.buffer; }
  int VisitStoreAt(const Stmt& s) override { return s.buffer; }
  int VisitLet(const Stmt&) override { return -1; }
  int VisitAccumulator(const Stmt&) override { return -1; }
  int VisitAccumulate(const Stmt&) override { return -1; }
};

bool StoresTo(const Stmt& s, int buffer) {
  if (BufferWrite().Visit(s) == buffer) return true;
  for (const Stmt& inner : s.body) {
    if (StoresTo(inner, buffer)) return true;
  }
  return false;
}

void CollectLoads(const Value& v, int buffer, std::vector<SymExpr>* indices) {
  BufferRead read;
  for (const Value* node : PostOrder(v)) {
    auto r = read.Visit(**node);
    if (r && r->first == buffer) indices->push_back(r->second);
  }
}

bool LoadsFrom(const Value& v, int buffer) {
  std::vector<SymExpr> indices;
  CollectLoads(v, buffer, &indices);
  return !indices.empty();
}

bool Touches(const Stmt& s, int buffer) {
  if (LoadsFrom(s.value, buffer) || LoadsFrom(s.at, buffer) || BufferWrite().Visit(s) == buffer) {
    return true;
  }
  for (const Stmt& inner : s.body) {
    if (Touches(inner, buffer)) return true;
  }
  return false;
}

class Planner {
 public:
  explicit Planner(const Kernel& kernel) : kernel_(kernel) {}

  StreamingPlan Run() {
    for (int buffer = 0; buffer < static_cast<int>(kernel_.buffers.size()); ++buffer) StageRow(buffer);
    for (const auto& [buffer, row] : plan_.staged) plan_.streamable.insert(row.final_store);
    const std::vector<Stmt>& body = kernel_.body;
    for (size_t i = 0; i < body.size(); ++i) {
      if (!IsStreamingLoop(body[i])) continue;
      const Stmt& loop = body[i];
      for (size_t s = 0; s < loop.body.size(); ++s) {
        const Stmt& store = loop.body[s];
        if (store.kind != StmtKind::kStore || kernel_.buffers[store.buffer].dtype != ScalarType::kF32 ||
            ClassifyIndex(store.index, loop.name) != Access::kContiguous) {
          continue;
        }
        bool stored_before = false, touched_after = false;
        for (size_t k = 0; k < i; ++k) stored_before |= StoresTo(body[k], store.buffer);
        for (size_t k = 0; k < s; ++k) stored_before |= StoresTo(loop.body[k], store.buffer);
        for (size_t k = s + 1; k < loop.body.size(); ++k) touched_after |= Touches(loop.body[k], store.buffer);
        for (size_t k = i + 1; k < body.size(); ++k) touched_after |= Touches(body[k], store.buffer);
        if (!stored_before && !touched_after) plan_.streamable.insert(&store);
      }
    }
    return std::move(plan_);
  }

 private:
  bool DependsOnDimsOnly(SymExpr e) const {
    for (const std::string& name : e.Symbols()) {
      if (std::find(kernel_.dims.begin(), kernel_.dims.end(), name) == kernel_.dims.end()) return false;
    }
    return true;
  }

  // A top-level vectorizable loop with dims-only bounds.
  bool IsStreamingLoop(const Stmt& loop) const {
    absl::btree_map<std::string, ReduceOp> reduced;
    return loop.kind == StmtKind::kLoop && DependsOnDimsOnly(loop.begin) && DependsOnDimsOnly(loop.end) &&
           CanVectorize(loop, &reduced);
  }

  void StageRow(int buffer) {
    const BufferParam& param = kernel_.buffers[buffer];
    if (param.role != BufferRole::kOutput || param.dtype != ScalarType::kF32) return;
    const Stmt* first_loop = nullptr;
    const Stmt* final_store = nullptr;
    std::optional<SymExpr> row_start;
    bool last_is_store = false;
    int stores = 0;
    auto same_row = [&](SymExpr index, const std::string& var) {
      if (ClassifyIndex(index, var) != Access::kContiguous) return false;
      SymExpr start = index.Substitute({{var, SymExpr(int64_t{0})}});
      if (!row_start) row_start = start;
      return *row_start == start;
    };
    for (const Stmt& loop : kernel_.body) {
      if (!Touches(loop, buffer)) continue;
      if (!IsStreamingLoop(loop) ||
          (first_loop != nullptr && (loop.begin != first_loop->begin || loop.end != first_loop->end))) {
        return;
      }
      if (first_loop == nullptr) first_loop = &loop;
      for (const Stmt& s : loop.body) {
        std::vector<SymExpr> loads;
        CollectLoads(s.value, buffer, &loads);
        for (SymExpr index : loads) {
          if (!same_row(index, loop.name)) return;
        }
        if (!loads.empty()) last_is_store = false;
        if (s.kind == StmtKind::kStoreAt && s.buffer == buffer) return;  // no known row
        if (s.kind == StmtKind::kStore && s.buffer == buffer) {
          if (!same_row(s.index, loop.name)) return;
          final_store = &s;
          last_is_store = true;
          ++stores;
        }
      }
    }
    if (stores >= 2 && last_is_store) plan_.staged[buffer] = StagedRow{first_loop->begin, first_loop->end, final_store};
  }

  const Kernel& kernel_;
  StreamingPlan plan_;
};

}  // namespace

Access ClassifyIndex(SymExpr index, const std::string& loop_var) {
  SymExpr var = SymExpr::Symbol(loop_var);
  SymExpr base = index.Substitute({{loop_var, SymExpr(int64_t{0})}});
  SymExpr stride = index.Substitute({{loop_var, SymExpr(int64_t{1})}}) - base;
  if (base + stride * var != index) return Access::kGather;
  if (stride == SymExpr(int64_t{0})) return Access::kUniform;
  if (stride == SymExpr(int64_t{1})) return Access::kContiguous;
  return Access::kGather;
}

bool CanVectorize(const Stmt& loop, absl::btree_map<std::string, ReduceOp>* reduced) {
  for (const Stmt& s : loop.body) {
    if (s.kind == StmtKind::kLoop || s.kind == StmtKind::kAccumulator) return false;
    if (s.kind == StmtKind::kAccumulate) {
      auto [it, inserted] = reduced->try_emplace(s.name, s.reduce);
      if (!inserted && it->second != s.reduce) return false;
    }
  }
  for (const Stmt& s : loop.body) {
    if (ReadsAny(s.value, *reduced) || ReadsAny(s.at, *reduced)) return false;
  }
  return true;
}

StreamingPlan PlanStreamingStores(const Kernel& kernel) { return Planner(kernel).Run(); }

}  // namespace shapeshift::codegen::cpu
