#include "passes/internal/grouping.h"

#include <algorithm>
#include <deque>
#include <queue>

#include "absl/strings/str_cat.h"
#include "passes/graph_rewrite.h"
#include "passes/op_classes.h"

namespace shapeshift::passes::internal {

Grouping::Grouping(const Graph& graph, ShapeEnv& env)
    : graph_(graph), env_(env), order_(graph.nodes()), compile_time_(CompileTimeNodes(graph)) {
  for (size_t i = 0; i < order_.size(); ++i) position_[order_[i]] = static_cast<int>(i);
}

int Grouping::GroupOfNode(const Node* n) const {
  auto it = group_of_node_.find(n);
  return it == group_of_node_.end() ? -1 : it->second;
}

int Grouping::NewGroup(GroupKind kind, Node* anchor) {
  int gid = static_cast<int>(groups_.size());
  groups_.emplace_back();
  groups_.back().kind = kind;
  groups_.back().nodes.push_back(anchor);
  group_of_node_[anchor] = gid;
  return gid;
}

Grouping::Unit Grouping::UnitOf(const Node* n) const {
  int gid = GroupOfNode(n);
  return gid >= 0 ? gid : kUnassignedBase + position_.at(n);
}

std::vector<const Node*> Grouping::NodesOf(Unit u) const {
  if (u >= kUnassignedBase) return {order_[u - kUnassignedBase]};
  const auto& nodes = groups_[u].nodes;
  return {nodes.begin(), nodes.end()};
}

int Grouping::FirstPosition(Unit u) const {
  if (u >= kUnassignedBase) return static_cast<int>(u - kUnassignedBase);
  return position_.at(groups_[u].nodes.front());  // nodes are kept in topological order
}

int Grouping::LastPosition(Unit u) const {
  if (u >= kUnassignedBase) return static_cast<int>(u - kUnassignedBase);
  return position_.at(groups_[u].nodes.back());
}

bool Grouping::Reaches(const std::vector<Unit>& starts, Unit target, bool backward) const {
  // Every node on a data path from the target's nodes lies after the
  // target's first node (and before its last node, for a path into it), so
  // a unit wholly on the wrong side of the target is never on a path.
  const int target_first = FirstPosition(target);
  const int target_last = LastPosition(target);
  auto may_lead_to_target = [&](Unit u) {
    return u == target || (backward ? LastPosition(u) > target_first : FirstPosition(u) < target_last);
  };
  absl::flat_hash_set<Unit> seen;
  std::deque<Unit> work;
  for (Unit u : starts) {
    if (may_lead_to_target(u) && seen.insert(u).second) work.push_back(u);
  }
  while (!work.empty()) {
    Unit u = work.front();
    work.pop_front();
    if (u == target) return true;
    for (const Node* n : NodesOf(u)) {
      std::vector<const Node*> next;
      if (backward) {
        for (int i = 0; i < n->num_inputs(); ++i) {
          const Value* v = n->input(i);
          if (v && v->producer() && !IsShapeOperand(*n, i)) next.push_back(v->producer());
        }
      } else {
        for (const Value* v : n->outputs()) {
          for (const Use& use : v->uses()) {
            if (!IsShapeOperand(*use.user, use.input_index)) next.push_back(use.user);
          }
        }
      }
      for (const Node* m : next) {
        if (IsCompileTime(m)) continue;
        Unit mu = UnitOf(m);
        if (mu != u && may_lead_to_target(mu) && seen.insert(mu).second) work.push_back(mu);
      }
    }
  }
  return false;
}

bool Grouping::CanAdd(const Node* n, int gid) const {
  if (IsAssigned(n) || IsCompileTime(n)) return false;
  if (groups_[gid].nodes.size() >= static_cast<size_t>(kMaxGroupNodes)) return false;
  std::vector<Unit> producers;
  for (int i = 0; i < n->num_inputs(); ++i) {
    const Value* v = n->input(i);
    if (v == nullptr || v->producer() == nullptr || IsShapeOperand(*n, i)) continue;
    if (IsCompileTime(v->producer()) || GroupOfNode(v->producer()) == gid) continue;
    producers.push_back(UnitOf(v->producer()));
  }
  if (Reaches(producers, gid, /*backward=*/true)) return false;
  std::vector<Unit> consumers;
  for (const Value* v : n->outputs()) {
    for (const Use& use : v->uses()) {
      if (IsShapeOperand(*use.user, use.input_index) || IsCompileTime(use.user) ||
          GroupOfNode(use.user) == gid) {
        continue;
      }
      consumers.push_back(UnitOf(use.user));
    }
  }
  return !Reaches(consumers, gid, /*backward=*/false);
}

void Grouping::Add(Node* n, int gid) {
  auto& nodes = groups_[gid].nodes;
  auto at = std::upper_bound(nodes.begin(), nodes.end(), n, [&](const Node* a, const Node* b) {
    return position_.at(a) < position_.at(b);
  });
  nodes.insert(at, n);
  group_of_node_[n] = gid;
}

void Grouping::Remove(Node* n) {
  int gid = GroupOfNode(n);
  if (gid < 0) return;
  auto& nodes = groups_[gid].nodes;
  nodes.erase(std::find(nodes.begin(), nodes.end(), n));
  group_of_node_.erase(n);
}

void Grouping::MergeInto(int from, int into) {
  std::vector<Node*> moved = std::move(groups_[from].nodes);
  groups_[from].nodes.clear();
  for (Node* n : moved) Add(n, into);
}

bool Grouping::ReadOnlyBy(const Value* v, int gid, const Node* extra) const {
  if (IsGraphOutput(graph_, v)) return false;
  for (const Use& u : v->uses()) {
    if (u.user == extra || GroupOfNode(u.user) == gid || IsCompileTime(u.user)) continue;
    return false;
  }
  return true;
}

absl::StatusOr<FusionPlan> Grouping::Finish() {
  for (const Node* n : order_) {
    if (!IsCompileTime(n) && !IsAssigned(n)) {
      return absl::InternalError(absl::StrCat("fusion left node '", n->name(), "' (", n->op_type(),
                                              ") without a group"));
    }
  }
  // Kahn's algorithm over groups, earliest first node first.
  const int count = static_cast<int>(groups_.size());
  std::vector<absl::flat_hash_set<int>> successors(count);
  std::vector<int> pending(count, 0);
  for (int g = 0; g < count; ++g) {
    for (const Node* n : groups_[g].nodes) {
      for (int i = 0; i < n->num_inputs(); ++i) {
        const Value* v = n->input(i);
        if (v == nullptr || v->producer() == nullptr || IsShapeOperand(*n, i)) continue;
        int p = GroupOfNode(v->producer());
        if (p >= 0 && p != g && successors[p].insert(g).second) ++pending[g];
      }
    }
  }
  auto later = [&](int a, int b) {
    return position_.at(groups_[a].nodes.front()) > position_.at(groups_[b].nodes.front());
  };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  int live = 0;  // groups emptied by MergeInto are dropped
  for (int g = 0; g < count; ++g) {
    if (groups_[g].nodes.empty()) continue;
    ++live;
    if (pending[g] == 0) ready.push(g);
  }
  FusionPlan plan;
  plan.group_of_value.assign(graph_.value_id_bound(), -1);
  while (!ready.empty()) {
    int g = ready.top();
    ready.pop();
    Group group = std::move(groups_[g]);
    group.id = static_cast<int>(plan.groups.size());
    absl::flat_hash_set<const Node*> members(group.nodes.begin(), group.nodes.end());
    for (const Node* n : group.nodes) {
      for (int i = 0; i < n->num_inputs(); ++i) {
        Value* v = n->input(i);
        if (v == nullptr || IsShapeOperand(*n, i) || members.contains(v->producer())) continue;
        if (std::find(group.inputs.begin(), group.inputs.end(), v) == group.inputs.end()) {
          group.inputs.push_back(v);
        }
      }
      for (Value* v : n->outputs()) {
        plan.group_of_value[v->id()] = group.id;
        bool read_outside = IsGraphOutput(graph_, v);
        for (const Use& u : v->uses()) {
          if (!members.contains(u.user) && !IsCompileTime(u.user)) read_outside = true;
        }
        if (read_outside) group.outputs.push_back(v);
      }
    }
    plan.groups.push_back(std::move(group));
    for (int s : successors[g]) {
      if (--pending[s] == 0) ready.push(s);
    }
  }
  if (static_cast<int>(plan.groups.size()) != live) {
    return absl::InternalError("fusion produced a cycle between groups");
  }
  return plan;
}

}  // namespace shapeshift::passes::internal
