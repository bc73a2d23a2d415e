// Graph / Node / Value: the SSA dataflow IR every later stage reads.
//
// A Value is defined exactly once — by a graph input, a constant (an
// initializer, holding a Tensor) or one output of one Node — and knows its
// producer and every use, so passes (constant folding, CSE, DCE, fusion,
// memory planning) can walk def-use chains in both directions without a side
// table. A Node is an ONNX op in the default domain: op type, attributes,
// input Values (nullptr marks an absent optional input) and output Values.
//
// Values also carry what shape inference learned: their TensorType (dtype +
// symbolic shape) and, for small integer tensors, their elements as SymExprs
// ("shape values": `Shape(x)` of an `f32[batch, seq, 64]` is the i64 vector
// {batch, seq, 64}). That is how a Reshape target computed by a
// Shape→Gather→Concat chain stays symbolic instead of becoming "unknown".
//
// The Graph owns nodes and values. Nodes are kept in a topological order
// that is stable (insertion order among independent nodes); AddNode appends,
// which keeps the order valid because inputs must already exist. A pass that
// rewires inputs to later values calls TopologicalSort(). Verify() checks the
// SSA and type invariants; run it after every pass in tests.
#ifndef SHAPESHIFT_GRAPH_GRAPH_H_
#define SHAPESHIFT_GRAPH_GRAPH_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/attributes.h"
#include "graph/tensor.h"
#include "graph/tensor_type.h"
#include "shapes/sym_expr.h"

namespace shapeshift {

class Graph;
class Node;

// One read of a Value: input number `input_index` of `user`.
struct Use {
  Node* user = nullptr;
  int input_index = 0;
  friend bool operator==(const Use& a, const Use& b) {
    return a.user == b.user && a.input_index == b.input_index;
  }
};

class Value {
 public:
  // Dense id, unique within its graph and never reused (index side tables by it).
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const TensorType& type() const { return type_; }
  void set_type(TensorType type) { type_ = std::move(type); }

  // The defining node; nullptr for graph inputs and constants.
  Node* producer() const { return producer_; }
  int output_index() const { return output_index_; }
  bool is_graph_input() const { return is_graph_input_; }
  bool is_constant() const { return constant_.has_value(); }
  // The constant's data; nullptr unless is_constant().
  const Tensor* constant() const { return constant_ ? &*constant_ : nullptr; }

  // Shape-value propagation: the elements (row-major) of an integer or bool
  // tensor when every element is known as a SymExpr; nullopt otherwise.
  const std::optional<std::vector<SymExpr>>& elements() const { return elements_; }
  void set_elements(std::optional<std::vector<SymExpr>> e) { elements_ = std::move(e); }

  const std::vector<Use>& uses() const { return uses_; }
  bool HasUses() const { return !uses_.empty(); }

 private:
  friend class Graph;
  friend class Node;
  int id_ = 0;
  std::string name_;
  TensorType type_;
  Node* producer_ = nullptr;
  int output_index_ = 0;
  bool is_graph_input_ = false;
  std::optional<Tensor> constant_;
  std::optional<std::vector<SymExpr>> elements_;
  std::vector<Use> uses_;
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::string& op_type() const { return op_type_; }
  const Attributes& attrs() const { return attrs_; }
  Attributes& mutable_attrs() { return attrs_; }

  const std::vector<Value*>& inputs() const { return inputs_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // Input i, or nullptr when absent (optional input left empty, or i too large).
  Value* input(int i) const;
  const std::vector<Value*>& outputs() const { return outputs_; }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  Value* output(int i) const { return outputs_.at(i); }

  // Rewires input i (keeps both values' use lists right). The new value must
  // be defined before this node, or call Graph::TopologicalSort() afterwards.
  void SetInput(int i, Value* v);

 private:
  friend class Graph;
  int id_ = 0;
  std::string name_;
  std::string op_type_;
  Attributes attrs_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
};

class Graph {
 public:
  // `opset` is the default-domain ONNX opset the node semantics follow.
  explicit Graph(int opset = 17);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;

  int opset() const { return opset_; }

  // --- Building. Names must be unique among values; an empty name gets a
  // generated one. Output types start unset (f32 scalar) until shape
  // inference (graph/shape_inference.h) or the caller fills them in.
  Value* AddInput(const std::string& name, TensorType type);
  // An initializer. Integer/bool tensors of up to kMaxElementsTracked
  // elements also get their elements() as constant SymExprs.
  Value* AddConstant(const std::string& name, Tensor value);
  // Gives constant `v` the storage of `value`, which must hold the same
  // dtype, shape and bytes (the same weights kept elsewhere:
  // graph/constant_spill.h). Readers holding the old storage keep it alive.
  absl::Status ReplaceConstant(Value* v, Tensor value);
  Node* AddNode(const std::string& op_type, std::vector<Value*> inputs, int num_outputs,
                Attributes attrs = {}, const std::string& name = "",
                const std::vector<std::string>& output_names = {});
  void AddOutput(Value* v);

  // --- Reading.
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  std::vector<Value*> constants() const;  // in creation order
  // Nodes in topological order; a copy, so callers may mutate while iterating.
  std::vector<Node*> nodes() const;
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  // Upper bound of Value::id() (for side tables indexed by id).
  int value_id_bound() const { return static_cast<int>(values_.size()); }
  Value* FindValue(const std::string& name) const;  // nullptr if none
  Node* FindNode(const std::string& name) const;    // nullptr if none

  // A deep copy with the same value/node names, types, shape values and
  // order (ids may differ), so a pipeline can rewrite its own copy while the
  // original stays the reference.
  std::unique_ptr<Graph> Clone() const;

  // --- Rewriting.
  // Every use of `from` (node inputs and graph outputs) now reads `to`.
  void ReplaceAllUsesWith(Value* from, Value* to);
  // Removes a node whose outputs have no uses and are not graph outputs.
  absl::Status RemoveNode(Node* node);
  // Removes constants nobody reads.
  void RemoveUnusedConstants();
  // Re-establishes topological order (stable); an error names a cycle.
  absl::Status TopologicalSort();

  // SSA and type invariants: every input is defined before use, use lists
  // match inputs, names unique, outputs defined, constants' types match their
  // data. The error names the first offending node or value.
  absl::Status Verify() const;

  // The whole graph as text (inputs, constants, nodes with their output
  // types, outputs); see graph/printer.h for the format.
  std::string ToString() const;

  static constexpr int64_t kMaxElementsTracked = 64;

 private:
  Value* NewValue(const std::string& name);
  std::string UniqueName(const std::string& base);

  int opset_;
  int next_node_id_ = 0;
  std::vector<std::unique_ptr<Value>> values_;  // indexed by id; null once removed
  std::vector<std::unique_ptr<Node>> nodes_;    // topological order
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  absl::flat_hash_map<std::string, Value*> values_by_name_;
};

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_GRAPH_H_
