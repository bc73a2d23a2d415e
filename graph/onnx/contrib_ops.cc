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

// Fresh value names and the f32 scalar constants the expansions use (one
// initializer per value, shared by every expansion of the graph).
class Names {
 public:
  explicit Names(onnx::GraphProto& graph) : graph_(graph) {
    for (const onnx::ValueInfoProto& v : graph.input()) taken_.insert(v.name());
    for (const onnx::TensorProto& t : graph.initializer()) taken_.insert(t.name());
    for (const onnx::NodeProto& node : graph.node()) {
      for (const std::string& o : node.output()) taken_.insert(o);
    }
  }
  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; taken_.contains(name); ++k) name = absl::StrCat(base, "_", k);
    taken_.insert(name);
    return name;
  }
  std::string Scalar(float value) {
    auto [it, added] = scalars_.emplace(value, "");
    if (!added) return it->second;
    it->second = Fresh(absl::StrCat("shapeshift_contrib_constant_", scalars_.size()));
    onnx::TensorProto* t = graph_.add_initializer();
    t->set_name(it->second);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
    return it->second;
  }

 private:
  onnx::GraphProto& graph_;
  absl::flat_hash_set<std::string> taken_;
  std::map<float, std::string> scalars_;
};

// Builds one node's expansion into `out`.
class Expansion {
 public:
  Expansion(const onnx::NodeProto& node, Names& names, google::protobuf::RepeatedPtrField<onnx::NodeProto>& out)
      : node_(node), names_(names), out_(out) {}

  // A new default-domain node; `output` "" for a fresh name.
  std::string Add(const std::string& op, std::vector<std::string> inputs, std::string output = "") {
    onnx::NodeProto* n = out_.Add();
    n->set_op_type(op);
    n->set_name(absl::StrCat(node_.name(), "/", op, "_", count_++));
    for (std::string& i : inputs) n->add_input(std::move(i));
    if (output.empty()) output = names_.Fresh(absl::StrCat(node_.output(0), "/shapeshift_", op));
    n->add_output(output);
    last_ = n;
    return output;
  }
  std::string Scalar(float value) { return names_.Scalar(value); }
  onnx::NodeProto& last() { return *last_; }

 private:
  const onnx::NodeProto& node_;
  Names& names_;
  google::protobuf::RepeatedPtrField<onnx::NodeProto>& out_;
  onnx::NodeProto* last_ = nullptr;
  int count_ = 0;
};

void SetInt(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}
void SetFloat(onnx::NodeProto& node, const std::string& name, float value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

float EpsilonOf(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == "epsilon" && a.type() == onnx::AttributeProto::FLOAT) return a.f();
  }
  return kSkipLayerNormEpsilon;
}

// GELU as the torch exporter writes it (passes/gelu_recognition.h fuses it
// again): erf: x * (1 + erf(x / sqrt 2)) * 0.5; tanh: x * (1 + tanh(sqrt(2/pi)
// * (x + 0.044715 * x^3))) * 0.5. Elementary ops are valid at every opset,
// so the model stays a model of its own opset (bundles export it again).
void Gelu(Expansion& e, const std::string& x, bool tanh, const std::string& output) {
  std::string inner;
  if (tanh) {
    const std::string cube = e.Add("Pow", {x, e.Scalar(3.0f)});
    const std::string sum = e.Add("Add", {x, e.Add("Mul", {cube, e.Scalar(0.044715f)})});
    inner = e.Add("Tanh", {e.Add("Mul", {sum, e.Scalar(0.7978845608028654f)})});
  } else {
    inner = e.Add("Erf", {e.Add("Div", {x, e.Scalar(1.4142135623730951f)})});
  }
  const std::string product = e.Add("Mul", {x, e.Add("Add", {inner, e.Scalar(1.0f)})});
  e.Add("Mul", {product, e.Scalar(0.5f)}, output);
}

// y = LayerNorm(x) over the last axis: LayerNormalization from opset 17, the
// torch exporter's decomposition before it (passes/layer_norm_recognition.h).
void LayerNorm(Expansion& e, int opset, const std::string& x, const std::string& gamma, const std::string& beta,
               float epsilon, const std::string& output) {
  if (opset >= 17) {
    std::vector<std::string> inputs = {x, gamma};
    if (!beta.empty()) inputs.push_back(beta);
    e.Add("LayerNormalization", std::move(inputs), output);
    SetInt(e.last(), "axis", -1);
    SetFloat(e.last(), "epsilon", epsilon);
    return;
  }
  auto mean_of = [&](const std::string& v) {
    const std::string mean = e.Add("ReduceMean", {v});
    onnx::AttributeProto* axes = e.last().add_attribute();
    axes->set_name("axes");
    axes->set_type(onnx::AttributeProto::INTS);
    axes->add_ints(-1);
    SetInt(e.last(), "keepdims", 1);
    return mean;
  };
  const std::string centered = e.Add("Sub", {x, mean_of(x)});
  const std::string variance = mean_of(e.Add("Pow", {centered, e.Scalar(2.0f)}));
  const std::string deviation = e.Add("Sqrt", {e.Add("Add", {variance, e.Scalar(epsilon)})});
  const std::string scaled = e.Add("Mul", {e.Add("Div", {centered, deviation}), gamma}, beta.empty() ? output : "");
  if (!beta.empty()) e.Add("Add", {scaled, beta}, output);
}

void Expand(const onnx::NodeProto& node, int opset, Expansion& e) {
  const std::string& op = node.op_type();
  if (op == "Gelu") {
    Gelu(e, node.input(0), /*tanh=*/false, node.output(0));
  } else if (op == "BiasGelu") {
    Gelu(e, e.Add("Add", {node.input(0), node.input(1)}), /*tanh=*/false, node.output(0));
  } else if (op == "FastGelu") {
    const std::string x = HasInput(node, 1) ? e.Add("Add", {node.input(0), node.input(1)}) : node.input(0);
    Gelu(e, x, /*tanh=*/true, node.output(0));
  } else {  // SkipLayerNormalization
    const bool bias = HasInput(node, 4);
    const std::string sum_output = HasOutput(node, 3) ? node.output(3) : "";
    std::string sum = e.Add("Add", {node.input(0), node.input(1)}, bias ? "" : sum_output);
    if (bias) sum = e.Add("Add", {sum, node.input(4)}, sum_output);
    LayerNorm(e, opset, sum, node.input(2), HasInput(node, 3) ? node.input(3) : "", EpsilonOf(node), node.output(0));
  }
}

}  // namespace

bool IsExpandableContribOp(const onnx::NodeProto& node) {
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

std::map<std::string, int> ExpandContribOps(onnx::GraphProto& graph, int opset) {
  std::map<std::string, int> expanded;
  bool any = false;
  for (const onnx::NodeProto& node : graph.node()) any |= IsExpandableContribOp(node);
  if (!any) return expanded;
  Names names(graph);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (onnx::NodeProto& node : *graph.mutable_node()) {
    if (!IsExpandableContribOp(node)) {
      *nodes.Add() = std::move(node);
      continue;
    }
    Expansion e(node, names, nodes);
    Expand(node, opset, e);
    ++expanded[node.op_type()];
  }
  graph.mutable_node()->Swap(&nodes);
  return expanded;
}

}  // namespace shapeshift
