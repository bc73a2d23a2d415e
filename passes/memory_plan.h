// Symbolic memory planning: where every intermediate buffer of a FusionPlan
// lives in one arena, with offsets and the arena size as SymExprs.
//
// Why symbolic: one compiled program serves every shape in the declared
// domain, so buffer sizes are expressions of the input dims (`4*batch*seq*256`
// bytes). The runtime evaluates the arena size once per request (a few
// multiplies) and allocates nothing per request in steady state; the plan is
// computed once at compile time.
//
// The scheme is deliberately simple and provably correct: groups run in plan
// order; a buffer is live from the group that defines it to the last group
// that reads it (following view aliases). When a buffer is defined it may
// take over the slot of a buffer that is already dead, but only when the
// ShapeEnv proves the new size <= the slot's size for every shape in the
// domain (`env.Query(new <= old, {"memory-plan", node, ...})`); otherwise it
// gets a new slot at the end. Slot offsets are sums of earlier slot sizes
// (each rounded up to `kAlignment`), so no two simultaneously live buffers
// can overlap under any assignment in the domain.
#ifndef SHAPESHIFT_PASSES_MEMORY_PLAN_H_
#define SHAPESHIFT_PASSES_MEMORY_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "passes/fusion_plan.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

enum class BufferStorage {
  kArena,        // [offset, offset + size_bytes) inside the arena
  kGraphInput,   // the caller's input tensor
  kConstant,     // the constant's own data
  kGraphOutput,  // the output tensor the runtime hands back
  kAlias,        // shares the storage of `alias_of` (a kView output)
};
const char* BufferStorageName(BufferStorage storage);

struct BufferAssignment {
  BufferStorage storage = BufferStorage::kArena;
  SymExpr size_bytes;       // element count * dtype size
  SymExpr offset;           // bytes from the arena start (kArena only)
  int slot = -1;            // arena slot index (kArena only)
  // kArena: live from the start of group `defined_in` to the end of group
  // `last_read` (views of it included); -1 for other storage.
  int defined_in = -1;
  int last_read = -1;
  const Value* alias_of = nullptr;  // kAlias: the root value (never itself kAlias)
};

struct MemoryPlan {
  static constexpr int64_t kAlignment = 64;  // bytes; every offset is a multiple
  // Every Value a group reads or writes (group inputs and outputs).
  absl::flat_hash_map<const Value*, BufferAssignment> buffers;
  // Sizes of the arena's slots (rounded up to kAlignment) in offset order.
  std::vector<SymExpr> slot_sizes;
  SymExpr arena_bytes;  // sum of slot_sizes
  // For each group (by index), the arena values whose last read is that group.
  std::vector<std::vector<const Value*>> frees_after_group;

  const BufferAssignment* Find(const Value* v) const;
  std::string ToString() const;
};

// Plans the buffers of `plan`. A kView output aliases its root, whatever the
// root's storage (arena, graph input, constant or graph output); a view that
// is itself a graph output never reaches here (fusion makes it a kCopy).
// Errors name the value.
absl::StatusOr<MemoryPlan> PlanMemory(const Graph& graph, const FusionPlan& plan,
                                      ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_MEMORY_PLAN_H_
