#include "passes/gelu_recognition.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "graph/shape_inference.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

enum class GeluApproximation { kErf, kTanh };

// `output` = gelu(`input`), computed by `nodes` (every value they define
// except `output` is used only by `nodes`).
struct GeluMatch {
  Value* input = nullptr;
  Value* output = nullptr;
  GeluApproximation form = GeluApproximation::kErf;
  std::vector<Node*> nodes;
};

constexpr char kPass[] = "gelu-recognition";
constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubicCoefficient = 0.044715;

// The factors of the product rooted at `root` (a Mul output): Mul operands
// that are themselves single-use Mul outputs are expanded. The Mul nodes
// visited are appended to `nodes`.
std::vector<Value*> ProductFactors(Value* root, std::vector<Node*>* nodes) {
  std::vector<Value*> factors;
  std::vector<Value*> stack = {root};
  while (!stack.empty()) {
    Value* v = stack.back();
    stack.pop_back();
    Node* mul = ProducerIs(v, "Mul");
    if (mul != nullptr && (v == root || (SingleUser(v) != nullptr && v->uses().size() == 1))) {
      nodes->push_back(mul);
      stack.push_back(mul->input(0));
      stack.push_back(mul->input(1));
    } else {
      factors.push_back(v);
    }
  }
  return factors;
}

// True when `factors` is {x, t, c} for a constant scalar c ≈ `constant`
// (in any order).
bool FactorsAre(const std::vector<Value*>& factors, const Value* x, const Value* t, double constant) {
  if (factors.size() != 3) return false;
  int xs = 0, ts = 0, cs = 0;
  for (const Value* f : factors) {
    if (f == x) {
      ++xs;
    } else if (f == t) {
      ++ts;
    } else if (std::optional<double> c = ConstantScalar(f); c && NearlyEqual(*c, constant)) {
      ++cs;
    }
  }
  return xs == 1 && ts == 1 && cs == 1;
}

// From t = 1 + erf(...) or 1 + tanh(...) (the Add node `one_plus`), climbs
// the products using t to the one equal to x * 0.5 * t.
bool MatchOuterProduct(Node* one_plus, Value* x, GeluMatch* match) {
  Value* t = one_plus->output(0);
  if (one_plus->op_type() != "Add" || SingleUser(t) == nullptr || t->uses().size() != 1) return false;
  bool one_first = IsConstantFilledWith(one_plus->input(0), 1) && one_plus->input(0)->type().rank() == 0;
  Value* inner = one_first ? one_plus->input(1) : one_plus->input(0);
  Value* one = one_first ? one_plus->input(0) : one_plus->input(1);
  if (ConstantScalar(one) != 1.0 || inner->producer() == nullptr) return false;
  match->nodes.push_back(one_plus);
  Value* current = t;
  for (int depth = 0; depth < 3; ++depth) {
    Node* user = SingleUser(current);
    if (user == nullptr || user->op_type() != "Mul" || current->uses().size() != 1) return false;
    std::vector<Node*> muls;
    std::vector<Value*> factors = ProductFactors(user->output(0), &muls);
    if (FactorsAre(factors, x, t, 0.5)) {
      match->nodes.insert(match->nodes.end(), muls.begin(), muls.end());
      match->output = user->output(0);
      return true;
    }
    if (factors.size() > 3) return false;
    current = user->output(0);
  }
  return false;
}

// x from x / √2 or x * (1/√2) (the Erf input `u`, single-use).
Value* ErfArgumentSource(Value* u, std::vector<Node*>* nodes) {
  if (Node* div = ProducerIs(u, "Div")) {
    if (std::optional<double> c = ConstantScalar(div->input(1)); c && NearlyEqual(*c, kSqrt2)) {
      nodes->push_back(div);
      return div->input(0);
    }
  }
  if (Node* mul = ProducerIs(u, "Mul")) {
    for (int i = 0; i < 2; ++i) {
      if (std::optional<double> c = ConstantScalar(mul->input(1 - i)); c && NearlyEqual(*c, 1 / kSqrt2)) {
        nodes->push_back(mul);
        return mul->input(i);
      }
    }
  }
  return nullptr;
}

std::optional<GeluMatch> MatchErf(Node* erf) {
  Value* u = erf->input(0);
  if (SingleUser(u) != erf || u->uses().size() != 1) return std::nullopt;
  GeluMatch m;
  m.form = GeluApproximation::kErf;
  Value* x = ErfArgumentSource(u, &m.nodes);
  if (x == nullptr) return std::nullopt;
  m.nodes.push_back(erf);
  Node* one_plus = SingleUser(erf->output(0));
  if (one_plus == nullptr || erf->output(0)->uses().size() != 1 || !MatchOuterProduct(one_plus, x, &m)) {
    return std::nullopt;
  }
  m.input = x;
  return m;
}

// True when the product `factors` is 0.044715 * x³, with x³ a single-use
// Pow(x, 3) or spelled out as x*x*x (already flattened into `factors`).
bool IsScaledCube(const std::vector<Value*>& factors, const Value* x, std::vector<Node*>* nodes) {
  int coefficients = 0, xs = 0;
  Node* pow = nullptr;
  for (Value* f : factors) {
    if (f == x) {
      ++xs;
    } else if (std::optional<double> c = ConstantScalar(f); c && NearlyEqual(*c, kCubicCoefficient)) {
      ++coefficients;
    } else if (Node* p = ProducerIs(f, "Pow");
               p && p->input(0) == x && ConstantScalar(p->input(1)) == 3.0 && f->uses().size() == 1) {
      pow = p;
    } else {
      return false;
    }
  }
  if (coefficients != 1 || !((pow != nullptr && xs == 0) || (pow == nullptr && xs == 3))) return false;
  if (pow != nullptr) nodes->push_back(pow);
  return true;
}

std::optional<GeluMatch> MatchTanh(Node* tanh) {
  Value* w = tanh->input(0);
  if (SingleUser(w) != tanh || w->uses().size() != 1 || ProducerIs(w, "Mul") == nullptr) return std::nullopt;
  GeluMatch m;
  m.form = GeluApproximation::kTanh;
  std::vector<Value*> outer = ProductFactors(w, &m.nodes);
  if (outer.size() != 2) return std::nullopt;
  for (int i = 0; i < 2 && m.input == nullptr; ++i) {
    std::optional<double> c = ConstantScalar(outer[1 - i]);
    Node* add = ProducerIs(outer[i], "Add");
    if (!c || !NearlyEqual(*c, kSqrt2OverPi) || add == nullptr || outer[i]->uses().size() != 1) continue;
    for (int j = 0; j < 2 && m.input == nullptr; ++j) {
      Value* x = add->input(j);
      Value* v = add->input(1 - j);
      if (ProducerIs(v, "Mul") == nullptr || v->uses().size() != 1) continue;
      std::vector<Node*> inner_nodes = {add};
      std::vector<Value*> factors = ProductFactors(v, &inner_nodes);
      if (IsScaledCube(factors, x, &inner_nodes)) {
        m.input = x;
        m.nodes.insert(m.nodes.end(), inner_nodes.begin(), inner_nodes.end());
      }
    }
  }
  if (m.input == nullptr) return std::nullopt;
  m.nodes.push_back(tanh);
  Node* one_plus = SingleUser(tanh->output(0));
  if (one_plus == nullptr || tanh->output(0)->uses().size() != 1 ||
      !MatchOuterProduct(one_plus, m.input, &m)) {
    return std::nullopt;
  }
  return m;
}

// Every GELU in `graph`, disjoint, in topological order of their outputs.
std::vector<GeluMatch> FindGelus(const Graph& graph) {
  std::vector<Node*> order = graph.nodes();
  absl::flat_hash_map<const Node*, int> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  std::vector<GeluMatch> matches;
  absl::flat_hash_set<const Node*> claimed;
  for (Node* node : order) {
    std::optional<GeluMatch> m;
    if (node->op_type() == "Erf") m = MatchErf(node);
    if (node->op_type() == "Tanh") m = MatchTanh(node);
    if (!m || m->input->type().dtype != DType::kF32) continue;
    std::sort(m->nodes.begin(), m->nodes.end(),
              [&](const Node* a, const Node* b) { return position[a] < position[b]; });
    m->nodes.erase(std::unique(m->nodes.begin(), m->nodes.end()), m->nodes.end());
    if (std::any_of(m->nodes.begin(), m->nodes.end(), [&](const Node* n) { return claimed.contains(n); })) {
      continue;
    }
    claimed.insert(m->nodes.begin(), m->nodes.end());
    matches.push_back(*std::move(m));
  }
  std::sort(matches.begin(), matches.end(), [&](const GeluMatch& a, const GeluMatch& b) {
    return position[a.output->producer()] < position[b.output->producer()];
  });
  return matches;
}

// Gelu(Reshape(m)) with m a MatMul's or Gemm's output and the reshape read
// by the Gelu alone → Reshape(Gelu(m)). GELU is elementwise, so the result
// is the same; next to the matmul it becomes the GEMM's epilogue
// (fusion_anchors.cc) instead of a kernel of its own.
absl::StatusOr<bool> SinkGeluBelowReshape(Graph& graph, ShapeEnv& env, Node* gelu) {
  Node* reshape = ProducerIs(gelu->input(0), "Reshape");
  if (reshape == nullptr || SingleUser(reshape->output(0)) != gelu || IsGraphOutput(graph, reshape->output(0))) {
    return false;
  }
  Value* m = reshape->input(0);
  if (ProducerIs(m, "MatMul") == nullptr && ProducerIs(m, "Gemm") == nullptr) return false;
  if (m->type().dtype != DType::kF32 || gelu->output(0)->type().dtype != DType::kF32) return false;
  Node* early = graph.AddNode("Gelu", {m}, 1, gelu->attrs());
  if (absl::Status s = InferNode(*early, env, graph.opset()); !s.ok()) return s;
  absl::StatusOr<Node*> moved = ReplaceWithNewNode(graph, env, gelu->output(0), {reshape, gelu}, "Reshape",
                                                   {early->output(0), reshape->input(1)}, reshape->attrs(), kPass);
  if (!moved.ok()) return moved.status();
  return true;
}

}  // namespace

absl::StatusOr<bool> RecognizeGelu(Graph& graph, ShapeEnv& env) {
  // Matches are disjoint, so a rewrite leaves the others' nodes alone; but a
  // match may read an earlier match's output (gelu(gelu(x))), whose Value a
  // rewrite replaces: such inputs are looked up by their old address (only
  // compared, never dereferenced) in `replaced`.
  std::vector<GeluMatch> matches = FindGelus(graph);
  absl::flat_hash_map<const Value*, Value*> replaced;
  for (const GeluMatch& m : matches) {
    auto it = replaced.find(m.input);
    Value* input = it == replaced.end() ? m.input : it->second;
    Attributes attrs;
    attrs.Set("approximate", std::string(m.form == GeluApproximation::kTanh ? "tanh" : "none"));
    absl::StatusOr<Node*> gelu = ReplaceWithNewNode(graph, env, m.output, m.nodes, "Gelu", {input}, attrs, kPass);
    if (!gelu.ok()) return gelu.status();
    replaced[m.output] = (*gelu)->output(0);
  }
  bool sunk = false;
  for (Node* node : graph.nodes()) {
    if (node->op_type() != "Gelu") continue;
    absl::StatusOr<bool> s = SinkGeluBelowReshape(graph, env, node);
    if (!s.ok()) return s.status();
    sunk = *s || sunk;
  }
  return !matches.empty() || sunk;
}

}  // namespace shapeshift::passes
