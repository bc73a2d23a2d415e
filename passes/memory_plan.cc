#include "passes/memory_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {

const char* BufferStorageName(BufferStorage storage) {
  switch (storage) {
    case BufferStorage::kArena: return "arena";
    case BufferStorage::kGraphInput: return "graph_input";
    case BufferStorage::kConstant: return "constant";
    case BufferStorage::kGraphOutput: return "graph_output";
    case BufferStorage::kAlias: return "alias";
  }
  return "?";
}

const BufferAssignment* MemoryPlan::Find(const Value* v) const {
  auto it = buffers.find(v);
  return it == buffers.end() ? nullptr : &it->second;
}

std::string MemoryPlan::ToString() const {
  std::vector<std::pair<const Value*, const BufferAssignment*>> sorted;
  for (const auto& [v, a] : buffers) sorted.push_back({v, &a});
  std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) { return x.first->id() < y.first->id(); });
  std::string out = absl::StrCat("memory plan: arena ", arena_bytes.ToString(), " bytes in ",
                                 slot_sizes.size(), " slots\n");
  for (const auto& [v, a] : sorted) {
    absl::StrAppend(&out, "  %", v->name(), ": ", BufferStorageName(a->storage), " ", a->size_bytes.ToString(), " B");
    if (a->storage == BufferStorage::kArena) {
      absl::StrAppend(&out, " slot ", a->slot, " @ ", a->offset.ToString(), " live #", a->defined_in, "..#",
                      a->last_read);
    }
    if (a->storage == BufferStorage::kAlias) absl::StrAppend(&out, " of %", a->alias_of->name());
    out += "\n";
  }
  return out;
}

namespace {

SymExpr ByteSize(const Value* v) {
  return v->type().NumElements() * static_cast<int64_t>(DTypeSize(v->type().dtype));
}

SymExpr AlignUp(SymExpr bytes) {
  return CeilDiv(bytes, MemoryPlan::kAlignment) * MemoryPlan::kAlignment;
}

struct Slot {
  SymExpr size;
  bool free = false;
};

// The domain's two extreme corners (every symbol at its min; at its max).
std::vector<Assignment> DomainCorners(const ShapeEnv& env) {
  Assignment low, high;
  for (const SymbolInfo& s : env.symbols()) {
    low[s.name] = s.min;
    high[s.name] = s.max;
  }
  return {low, high};
}

// False when some corner of the domain already shows size > capacity: then
// the env could never prove size <= capacity, and asking would only cost a
// solver call. True means "worth asking", not "fits".
bool MayFit(SymExpr size, SymExpr capacity, const std::vector<Assignment>& corners) {
  for (const Assignment& at : corners) {
    absl::StatusOr<int64_t> s = size.Evaluate(at);
    absl::StatusOr<int64_t> c = capacity.Evaluate(at);
    if (s.ok() && c.ok() && *s > *c) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<MemoryPlan> PlanMemory(const Graph& graph, const FusionPlan& plan, ShapeEnv& env) {
  MemoryPlan mp;
  const int count = static_cast<int>(plan.groups.size());
  // 1. Storage of every value a group touches; views alias their root.
  auto root_of = [&](const Value* v) -> const Value* {
    const BufferAssignment* a = mp.Find(v);
    return a && a->storage == BufferStorage::kAlias ? a->alias_of : v;
  };
  auto assign_external = [&](const Value* v) -> absl::Status {
    if (mp.buffers.contains(v)) return absl::OkStatus();
    BufferAssignment a;
    a.size_bytes = ByteSize(v);
    if (v->is_graph_input()) {
      a.storage = BufferStorage::kGraphInput;
    } else if (v->is_constant()) {
      a.storage = BufferStorage::kConstant;
    } else {
      return absl::InternalError(absl::StrCat("memory plan: value '", v->name(),
                                              "' is read before any group defines it"));
    }
    mp.buffers[v] = a;
    return absl::OkStatus();
  };
  for (const Group& g : plan.groups) {
    for (const Value* v : g.inputs) {
      if (absl::Status s = assign_external(v); !s.ok()) return s;
    }
    for (const Value* v : g.outputs) {
      BufferAssignment a;
      a.size_bytes = ByteSize(v);
      if (IsGraphOutput(graph, v)) {
        a.storage = BufferStorage::kGraphOutput;
      } else if (g.kind == GroupKind::kView) {
        a.storage = BufferStorage::kAlias;
        a.alias_of = root_of(g.inputs.front());
      } else {
        a.storage = BufferStorage::kArena;
        a.defined_in = g.id;
        a.last_read = g.id;
      }
      mp.buffers[v] = a;
    }
  }
  // 2. Liveness: a root lives until the last group reading it or a view of it.
  for (const Group& g : plan.groups) {
    for (const Value* v : g.inputs) {
      BufferAssignment& root = mp.buffers[root_of(v)];
      if (root.storage == BufferStorage::kArena) root.last_read = std::max(root.last_read, g.id);
    }
  }
  // 3. Slots in group order; a dead slot is reused only when provably big enough.
  std::vector<Slot> slots;
  std::vector<std::vector<const Value*>> dies_after(count);
  for (const auto& [v, a] : mp.buffers) {
    if (a.storage == BufferStorage::kArena) dies_after[a.last_read].push_back(v);
  }
  for (auto& list : dies_after) {
    std::sort(list.begin(), list.end(), [](const Value* x, const Value* y) { return x->id() < y->id(); });
  }
  SymExpr end = 0;
  const std::vector<Assignment> corners = DomainCorners(env);
  for (const Group& g : plan.groups) {
    if (g.id > 0) {
      for (const Value* v : dies_after[g.id - 1]) slots[mp.buffers[v].slot].free = true;
    }
    for (const Value* v : g.outputs) {
      BufferAssignment& a = mp.buffers[v];
      if (a.storage != BufferStorage::kArena) continue;
      int chosen = -1;
      for (size_t s = 0; s < slots.size() && chosen < 0; ++s) {
        if (!slots[s].free || !MayFit(a.size_bytes, slots[s].size, corners)) continue;
        Answer fits = env.Query(Predicate::Le(a.size_bytes, slots[s].size),
                                Provenance{"memory-plan", v->name(), "reuse a dead buffer's slot"});
        if (IsTrue(fits)) chosen = static_cast<int>(s);
      }
      if (chosen < 0) {
        chosen = static_cast<int>(slots.size());
        slots.push_back({AlignUp(a.size_bytes), false});
        mp.slot_sizes.push_back(slots.back().size);
      }
      slots[chosen].free = false;
      a.slot = chosen;
    }
  }
  std::vector<SymExpr> offsets;
  for (const SymExpr& size : mp.slot_sizes) {
    offsets.push_back(end);
    end = end + size;
  }
  for (auto& [v, a] : mp.buffers) {
    if (a.storage == BufferStorage::kArena) a.offset = offsets[a.slot];
  }
  mp.arena_bytes = end;
  mp.frees_after_group = std::move(dies_after);
  return mp;
}

}  // namespace shapeshift::passes
