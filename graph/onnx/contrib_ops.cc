#include "graph/onnx/contrib_ops.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "onnx/onnx_pb.h"

namespace shapeshift {
namespace {

constexpr char kDomain[] = "com.microsoft";
// ORT's default for SkipLayerNormalization's epsilon (its contrib op schema).
constexpr float kSkipLayerNormEpsilon = 1e-12f;

bool HasInput(const onnx::NodeProto& node, int i) { return node.input_size() > i && !node.input(i).empty(); }
bool HasOutput(const onnx::NodeProto& node, int i) { return node.output_size() > i && !node.output(i).empty(); }

bool IsExpandable(const onnx::NodeProto& node) {
  if (node.domain() != kDomain) return false;
  const std::string& op = node.op_type();
  if (op == "Gelu") return node.input_size() == 1 && node.output_size() == 1;
  if (op == "BiasGelu") return HasInput(node, 0) && HasInput(node, 1) && node.input_size() == 2 && node.output_size() == 1;
  if (op == "FastGelu") return HasInput(node, 0) && node.input_size() <= 2 && node.output_size() == 1;
  if (op == "SkipLayerNormalization") {
    // mean and inv_std_var (outputs 1, 2) have no default-domain form here.
    return HasInput(node, 0) && HasInput(node, 1) && HasInput(node, 2) && node.input_size() <= 5 &&
           HasOutput(node, 0) && !HasOutput(node, 1) && !HasOutput(node, 2) && node.output_size() <= 4;
  }
  return false;
}

// Builds one node's expansion into `out`, with fresh value names.
class Expansion {
 public:
  Expansion(const onnx::NodeProto& node, absl::flat_hash_set<std::string>& names,
            google::protobuf::RepeatedPtrField<onnx::NodeProto>& out)
      : node_(node), names_(names), out_(out) {}

  // A new node of the default domain; `output` "" for a fresh name.
  std::string Add(const std::string& op, std::vector<std::string> inputs, std::string output = "") {
    onnx::NodeProto* n = out_.Add();
    n->set_op_type(op);
    n->set_name(absl::StrCat(node_.name(), "/", op, "_", count_++));
    for (std::string& i : inputs) n->add_input(std::move(i));
    if (output.empty()) output = Fresh(op);
    n->add_output(output);
    last_ = n;
    return output;
  }
  onnx::NodeProto& last() { return *last_; }

 private:
  std::string Fresh(const std::string& what) {
    std::string base = absl::StrCat(node_.output(0), "/shapeshift_", what);
    std::string name = base;
    for (int k = 1; names_.contains(name); ++k) name = absl::StrCat(base, "_", k);
    names_.insert(name);
    return name;
  }
  const onnx::NodeProto& node_;
  absl::flat_hash_set<std::string>& names_;
  google::protobuf::RepeatedPtrField<onnx::NodeProto>& out_;
  onnx::NodeProto* last_ = nullptr;
  int count_ = 0;
};

void SetString(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

float EpsilonOf(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == "epsilon" && a.type() == onnx::AttributeProto::FLOAT) return a.f();
  }
  return kSkipLayerNormEpsilon;
}

void Expand(const onnx::NodeProto& node, Expansion& e) {
  const std::string& op = node.op_type();
  if (op == "Gelu") {
    e.Add("Gelu", {node.input(0)}, node.output(0));
  } else if (op == "BiasGelu") {
    e.Add("Gelu", {e.Add("Add", {node.input(0), node.input(1)})}, node.output(0));
  } else if (op == "FastGelu") {
    const std::string x = HasInput(node, 1) ? e.Add("Add", {node.input(0), node.input(1)}) : node.input(0);
    e.Add("Gelu", {x}, node.output(0));
    SetString(e.last(), "approximate", "tanh");
  } else {  // SkipLayerNormalization
    const bool bias = HasInput(node, 4);
    const std::string sum_output = HasOutput(node, 3) ? node.output(3) : "";
    std::string sum = e.Add("Add", {node.input(0), node.input(1)}, bias ? "" : sum_output);
    if (bias) sum = e.Add("Add", {sum, node.input(4)}, sum_output);
    std::vector<std::string> inputs = {sum, node.input(2)};
    if (HasInput(node, 3)) inputs.push_back(node.input(3));
    e.Add("LayerNormalization", std::move(inputs), node.output(0));
    onnx::AttributeProto* axis = e.last().add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(-1);
    onnx::AttributeProto* epsilon = e.last().add_attribute();
    epsilon->set_name("epsilon");
    epsilon->set_type(onnx::AttributeProto::FLOAT);
    epsilon->set_f(EpsilonOf(node));
  }
}

}  // namespace

bool IsExpandableContribOp(const onnx::NodeProto& node) { return IsExpandable(node); }

std::map<std::string, int> ExpandContribOps(onnx::GraphProto& graph) {
  std::map<std::string, int> expanded;
  bool any = false;
  for (const onnx::NodeProto& node : graph.node()) any |= IsExpandable(node);
  if (!any) return expanded;
  absl::flat_hash_set<std::string> names;
  for (const onnx::ValueInfoProto& v : graph.input()) names.insert(v.name());
  for (const onnx::TensorProto& t : graph.initializer()) names.insert(t.name());
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string& o : node.output()) names.insert(o);
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (onnx::NodeProto& node : *graph.mutable_node()) {
    if (!IsExpandable(node)) {
      *nodes.Add() = std::move(node);
      continue;
    }
    Expansion e(node, names, nodes);
    Expand(node, e);
    ++expanded[node.op_type()];
  }
  graph.mutable_node()->Swap(&nodes);
  return expanded;
}

}  // namespace shapeshift
