// Grouping: the fusion planner's working state — which group each node is
// in, and the one check every absorption must pass (adding a node to a
// group must not create a cycle between groups, or no kernel order could
// run them). Internal to passes/fusion*.cc.
#ifndef SHAPESHIFT_PASSES_INTERNAL_GROUPING_H_
#define SHAPESHIFT_PASSES_INTERNAL_GROUPING_H_

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "passes/fusion_plan.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes::internal {

class Grouping {
 public:
  Grouping(const Graph& graph, ShapeEnv& env);

  const Graph& graph() const { return graph_; }
  ShapeEnv& env() { return env_; }
  bool IsCompileTime(const Node* n) const { return compile_time_.contains(n); }
  bool IsAssigned(const Node* n) const { return group_of_node_.contains(n); }
  int GroupOfNode(const Node* n) const;  // -1 when unassigned

  // A new group holding `anchor` (which must be unassigned).
  int NewGroup(GroupKind kind, Node* anchor);
  Group& group(int gid) { return groups_[gid]; }

  // True when `n` is unassigned, not compile-time, `gid` has room
  // (kMaxGroupNodes), and adding `n` keeps the group graph acyclic.
  bool CanAdd(const Node* n, int gid) const;
  void Add(Node* n, int gid);  // requires CanAdd
  void Remove(Node* n);         // undoes Add (n must not be a group's anchor)
  // Moves every node of group `from` into group `into` (kept in topological
  // order); `from` is left empty and Finish() drops it. The caller has
  // checked that the merged group is acyclic with the rest (the values
  // between the two are read by nothing else).
  void MergeInto(int from, int into);
  int num_groups() const { return static_cast<int>(groups_.size()); }

  // True when every runtime read of `v` is by a node of `gid` or by `extra`.
  bool ReadOnlyBy(const Value* v, int gid, const Node* extra = nullptr) const;

  // Orders the groups topologically, fills inputs, outputs and ids. Fails if
  // a runtime node has no group.
  absl::StatusOr<FusionPlan> Finish();

 private:
  // A unit of the group graph: a group id, or kUnassignedBase + position.
  using Unit = int64_t;
  static constexpr Unit kUnassignedBase = int64_t{1} << 32;
  Unit UnitOf(const Node* n) const;
  std::vector<const Node*> NodesOf(Unit u) const;
  // The first and last topological position of a unit's nodes.
  int FirstPosition(Unit u) const;
  int LastPosition(Unit u) const;
  // True when `target` is reachable from any of `starts` along data edges
  // (backward: producers; forward: consumers). Units entirely before
  // (backward) or after (forward) the target cannot be on such a path and
  // are not explored, so on a long chain this is O(1), not O(chain).
  bool Reaches(const std::vector<Unit>& starts, Unit target, bool backward) const;

  const Graph& graph_;
  ShapeEnv& env_;
  std::vector<Node*> order_;
  absl::flat_hash_map<const Node*, int> position_;
  absl::flat_hash_set<const Node*> compile_time_;
  absl::flat_hash_map<const Node*, int> group_of_node_;
  std::vector<Group> groups_;
};

}  // namespace shapeshift::passes::internal

#endif  // SHAPESHIFT_PASSES_INTERNAL_GROUPING_H_
