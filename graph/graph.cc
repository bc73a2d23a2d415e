#include "graph/graph.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/printer.h"

namespace shapeshift {

Value* Node::input(int i) const {
  if (i < 0 || i >= num_inputs()) return nullptr;
  return inputs_[i];
}

void Node::SetInput(int i, Value* v) {
  Value* old = inputs_.at(i);
  if (old != nullptr) {
    auto& uses = old->uses_;
    uses.erase(std::find(uses.begin(), uses.end(), Use{this, i}));
  }
  inputs_[i] = v;
  if (v != nullptr) v->uses_.push_back(Use{this, i});
}

Graph::Graph(int opset) : opset_(opset) {}
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

std::string Graph::UniqueName(const std::string& base) {
  if (!base.empty() && !values_by_name_.contains(base)) return base;
  std::string stem = base.empty() ? "v" : base;
  for (int n = static_cast<int>(values_.size());; ++n) {
    std::string candidate = absl::StrCat(stem, "_", n);
    if (!values_by_name_.contains(candidate)) return candidate;
  }
}

Value* Graph::NewValue(const std::string& name) {
  auto v = std::make_unique<Value>();
  v->id_ = static_cast<int>(values_.size());
  v->name_ = UniqueName(name);
  Value* raw = v.get();
  values_by_name_[raw->name_] = raw;
  values_.push_back(std::move(v));
  return raw;
}

Value* Graph::AddInput(const std::string& name, TensorType type) {
  Value* v = NewValue(name);
  v->type_ = std::move(type);
  v->is_graph_input_ = true;
  inputs_.push_back(v);
  return v;
}

Value* Graph::AddConstant(const std::string& name, Tensor value) {
  Value* v = NewValue(name);
  std::vector<SymExpr> shape(value.shape().begin(), value.shape().end());
  v->type_ = TensorType(value.dtype(), std::move(shape));
  if ((IsInteger(value.dtype()) || value.dtype() == DType::kBool) &&
      value.num_elements() <= kMaxElementsTracked) {
    std::vector<SymExpr> elements;
    for (int64_t i = 0; i < value.num_elements(); ++i) elements.push_back(value.GetAsInt64(i));
    v->elements_ = std::move(elements);
  }
  v->constant_ = std::move(value);
  return v;
}

Node* Graph::AddNode(const std::string& op_type, std::vector<Value*> inputs, int num_outputs,
                     Attributes attrs, const std::string& name,
                     const std::vector<std::string>& output_names) {
  auto node = std::make_unique<Node>();
  node->id_ = next_node_id_++;
  node->op_type_ = op_type;
  node->name_ = name.empty() ? absl::StrCat(op_type, "_", node->id_) : name;
  node->attrs_ = std::move(attrs);
  node->inputs_.resize(inputs.size(), nullptr);
  Node* raw = node.get();
  for (size_t i = 0; i < inputs.size(); ++i) raw->SetInput(static_cast<int>(i), inputs[i]);
  for (int i = 0; i < num_outputs; ++i) {
    std::string out_name = i < static_cast<int>(output_names.size()) ? output_names[i] : "";
    if (out_name.empty()) out_name = absl::StrCat(raw->name_, ":", i);
    Value* v = NewValue(out_name);
    v->producer_ = raw;
    v->output_index_ = i;
    raw->outputs_.push_back(v);
  }
  nodes_.push_back(std::move(node));
  return raw;
}

void Graph::AddOutput(Value* v) { outputs_.push_back(v); }

std::vector<Value*> Graph::constants() const {
  std::vector<Value*> out;
  for (const auto& v : values_) {
    if (v && v->is_constant()) out.push_back(v.get());
  }
  return out;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

Value* Graph::FindValue(const std::string& name) const {
  auto it = values_by_name_.find(name);
  return it == values_by_name_.end() ? nullptr : it->second;
}

Node* Graph::FindNode(const std::string& name) const {
  for (const auto& n : nodes_) {
    if (n->name() == name) return n.get();
  }
  return nullptr;
}

absl::Status Graph::ReplaceConstant(Value* v, Tensor value) {
  if (v == nullptr || !v->is_constant()) return absl::InvalidArgumentError("ReplaceConstant: not a constant");
  const Tensor& old = *v->constant_;
  if (old.dtype() != value.dtype() || old.shape() != value.shape()) {
    return absl::InvalidArgumentError(absl::StrCat("constant '", v->name(), "': replacement has another type or shape"));
  }
  v->constant_ = std::move(value);
  return absl::OkStatus();
}

std::unique_ptr<Graph> Graph::Clone() const {
  auto copy = std::make_unique<Graph>(opset_);
  absl::flat_hash_map<const Value*, Value*> map;
  auto carry = [&map](const Value* from, Value* to) {
    to->type_ = from->type_;
    to->elements_ = from->elements_;
    map[from] = to;
  };
  for (const Value* in : inputs_) carry(in, copy->AddInput(in->name(), in->type()));
  for (const Value* c : constants()) carry(c, copy->AddConstant(c->name(), *c->constant()));
  for (const auto& n : nodes_) {
    std::vector<Value*> inputs;
    for (const Value* in : n->inputs_) inputs.push_back(in == nullptr ? nullptr : map.at(in));
    std::vector<std::string> names;
    for (const Value* out : n->outputs_) names.push_back(out->name());
    Node* node = copy->AddNode(n->op_type(), std::move(inputs), n->num_outputs(), n->attrs(), n->name(), names);
    for (int i = 0; i < n->num_outputs(); ++i) carry(n->outputs_[i], node->outputs_[i]);
  }
  for (const Value* out : outputs_) copy->AddOutput(map.at(out));
  return copy;
}

void Graph::ReplaceAllUsesWith(Value* from, Value* to) {
  if (from == to) return;
  // Moves the whole use list at once: one SetInput per use would search
  // and erase in `from`'s list each time, O(uses^2) for a widely read value.
  std::vector<Use> uses = std::move(from->uses_);
  from->uses_.clear();
  for (const Use& u : uses) {
    u.user->inputs_[u.input_index] = to;
    if (to != nullptr) to->uses_.push_back(u);
  }
  for (Value*& out : outputs_) {
    if (out == from) out = to;
  }
}

absl::Status Graph::RemoveNode(Node* node) {
  for (Value* out : node->outputs_) {
    if (out->HasUses()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot remove node '", node->name(), "': its output '", out->name(), "' is still used by '",
          out->uses_.front().user->name(), "'"));
    }
    if (std::find(outputs_.begin(), outputs_.end(), out) != outputs_.end()) {
      return absl::FailedPreconditionError(absl::StrCat("cannot remove node '", node->name(),
                                                        "': its output '", out->name(),
                                                        "' is a graph output"));
    }
  }
  for (int i = 0; i < node->num_inputs(); ++i) node->SetInput(i, nullptr);
  for (Value* out : node->outputs_) {
    values_by_name_.erase(out->name_);
    values_[out->id_].reset();
  }
  // From the back: passes remove consumers before producers (DCE walks in
  // reverse), so the node is usually near the end and the erase is cheap.
  auto it = std::find_if(nodes_.rbegin(), nodes_.rend(),
                         [node](const std::unique_ptr<Node>& n) { return n.get() == node; });
  nodes_.erase(std::next(it).base());
  return absl::OkStatus();
}

void Graph::RemoveUnusedConstants() {
  absl::flat_hash_set<Value*> outs(outputs_.begin(), outputs_.end());
  for (auto& v : values_) {
    if (v && v->is_constant() && !v->HasUses() && !outs.contains(v.get())) {
      values_by_name_.erase(v->name_);
      v.reset();
    }
  }
}

absl::Status Graph::TopologicalSort() {
  // Kahn's algorithm, always taking the earliest node (in the current order)
  // whose producers are placed, so independent nodes keep their order. The
  // ready set is a min-heap of current positions: O(n log n), which keeps a
  // rewrite on a 100,000-node graph cheap.
  const size_t n = nodes_.size();
  absl::flat_hash_map<const Node*, size_t> position;
  position.reserve(n);
  for (size_t i = 0; i < n; ++i) position[nodes_[i].get()] = i;
  std::vector<int> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (Value* in : nodes_[i]->inputs_) {
      if (in != nullptr && in->producer_ != nullptr) ++pending[i];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    for (Value* out : nodes_[i]->outputs_) {
      for (const Use& u : out->uses_) {
        auto it = position.find(u.user);
        if (it != position.end() && --pending[it->second] == 0) ready.push(it->second);
      }
    }
    sorted.push_back(std::move(nodes_[i]));
  }
  if (sorted.size() < n) {
    auto stuck = std::find_if(nodes_.begin(), nodes_.end(), [](const std::unique_ptr<Node>& node) { return node != nullptr; });
    std::string name = (*stuck)->name();
    for (auto& node : nodes_) {
      if (node) sorted.push_back(std::move(node));
    }
    nodes_ = std::move(sorted);
    return absl::FailedPreconditionError(absl::StrCat("graph has a cycle through node '", name, "'"));
  }
  nodes_ = std::move(sorted);
  return absl::OkStatus();
}

absl::Status Graph::Verify() const {
  absl::flat_hash_set<const Value*> defined;
  absl::flat_hash_set<std::string> names;
  // Every listed use, for O(1) lookups: a value read by 100,000 nodes must
  // not cost a scan of its use list per reader.
  absl::flat_hash_set<std::pair<const Node*, int>> listed_uses;
  for (const auto& v : values_) {
    if (!v) continue;
    for (const Use& u : v->uses_) listed_uses.insert({u.user, u.input_index});
  }
  auto define = [&](const Value* v, const std::string& where) -> absl::Status {
    if (!names.insert(v->name()).second) {
      return absl::InternalError(absl::StrCat("value name '", v->name(), "' defined twice (", where, ")"));
    }
    defined.insert(v);
    return absl::OkStatus();
  };
  for (const Value* in : inputs_) {
    if (!in->is_graph_input_ || in->producer_ != nullptr) {
      return absl::InternalError(absl::StrCat("graph input '", in->name(), "' is not marked as an input"));
    }
    if (absl::Status s = define(in, "graph input"); !s.ok()) return s;
  }
  for (const auto& v : values_) {
    if (!v || !v->is_constant()) continue;
    const Tensor& t = *v->constant_;
    std::vector<SymExpr> shape(t.shape().begin(), t.shape().end());
    if (v->type_ != TensorType(t.dtype(), shape)) {
      return absl::InternalError(absl::StrCat("constant '", v->name(), "' has type ",
                                              v->type_.ToString(), " but holds ",
                                              t.DebugString(0)));
    }
    if (absl::Status s = define(v.get(), "constant"); !s.ok()) return s;
  }
  for (const auto& n : nodes_) {
    for (int i = 0; i < n->num_inputs(); ++i) {
      const Value* in = n->inputs_[i];
      if (in == nullptr) continue;
      if (!defined.contains(in)) {
        return absl::InternalError(absl::StrCat("node '", n->name(), "' input ", i, " ('",
                                                in->name(), "') is not defined before the node"));
      }
      // (The stale-use check below makes sure the listed use is this value's.)
      if (!listed_uses.contains({n.get(), i})) {
        return absl::InternalError(absl::StrCat("value '", in->name(), "' does not list node '",
                                                n->name(), "' input ", i, " among its uses"));
      }
    }
    for (int i = 0; i < n->num_outputs(); ++i) {
      const Value* out = n->outputs_[i];
      if (out->producer_ != n.get() || out->output_index_ != i) {
        return absl::InternalError(absl::StrCat("output ", i, " of node '", n->name(),
                                                "' does not name the node as its producer"));
      }
      if (absl::Status s = define(out, "node output"); !s.ok()) return s;
    }
  }
  for (const auto& v : values_) {
    if (!v) continue;
    for (const Use& u : v->uses_) {
      if (u.user->input(u.input_index) != v.get()) {
        return absl::InternalError(absl::StrCat("value '", v->name(), "' lists a stale use by node '",
                                                u.user->name(), "'"));
      }
    }
    if (v->elements_ && static_cast<int64_t>(v->elements_->size()) !=
                            v->type_.NumElements().AsConst().value_or(-1)) {
      return absl::InternalError(absl::StrCat("value '", v->name(), "' carries ",
                                              v->elements_->size(), " elements but has type ",
                                              v->type_.ToString()));
    }
  }
  for (const Value* out : outputs_) {
    if (!defined.contains(out)) {
      return absl::InternalError(absl::StrCat("graph output '", out->name(), "' is not defined"));
    }
  }
  return absl::OkStatus();
}

std::string Graph::ToString() const { return PrintGraph(*this); }

}  // namespace shapeshift
