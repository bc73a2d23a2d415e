#include "passes/rms_norm_recognition.h"

#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "passes/graph_rewrite.h"

namespace shapeshift::passes {
namespace {

constexpr char kPass[] = "rms-norm-recognition";

struct RmsNormMatch {
  Value* x = nullptr;
  Value* gamma = nullptr;  // constant; null when absent
  float epsilon = 0;
  Value* output = nullptr;
  std::vector<Node*> nodes;  // topological order
};

bool IsSquareOf(const Node& node, const Value* x) {
  if (node.num_inputs() != 2 || node.input(0) != x) return false;
  if (node.op_type() == "Pow") return ConstantScalar(node.input(1)) == 2.0;
  return node.op_type() == "Mul" && node.input(1) == x;
}

// From Sqrt(ms + eps) to x * rsqrt: the node that yields the normalized x,
// appended to `nodes` with what leads to it; nullptr when none does.
Node* MatchNormalize(Node* sqrt, const Value* x, std::vector<Node*>& nodes) {
  Node* user = SingleUser(sqrt->output(0));
  if (user == nullptr) return nullptr;
  const std::string& op = user->op_type();
  if (op == "Div" && user->input(1) == sqrt->output(0)) {
    if (user->input(0) == x) {  // x / sqrt
      nodes.push_back(user);
      return user;
    }
    if (ConstantScalar(user->input(0)) != 1.0) return nullptr;  // else 1 / sqrt, then * x
  } else if (op != "Reciprocal") {
    return nullptr;
  }
  Node* mul = SingleUser(user->output(0));
  if (mul == nullptr || mul->op_type() != "Mul" || OtherOperand(*mul, user->output(0)) != x) return nullptr;
  nodes.push_back(user);
  nodes.push_back(mul);
  return mul;
}

std::optional<RmsNormMatch> MatchAt(Node* square) {
  if (square->num_inputs() != 2) return std::nullopt;
  RmsNormMatch m;
  m.x = square->input(0);
  if (!IsSquareOf(*square, m.x) || m.x->type().dtype != DType::kF32 || m.x->type().rank() == 0) return std::nullopt;
  std::optional<int64_t> n = m.x->type().shape.back().AsConst();
  if (!n) return std::nullopt;
  Node* mean = SingleUser(square->output(0));
  if (mean == nullptr || mean->op_type() != "ReduceMean" || !ReducesLastAxisKeepDims(*mean)) return std::nullopt;
  Node* add_eps = SingleUser(mean->output(0));
  if (add_eps == nullptr || add_eps->op_type() != "Add") return std::nullopt;
  std::optional<double> eps = ConstantScalar(OtherOperand(*add_eps, mean->output(0)));
  if (!eps || *eps < 0) return std::nullopt;
  m.epsilon = static_cast<float>(*eps);
  Node* sqrt = SingleUser(add_eps->output(0));
  if (sqrt == nullptr || sqrt->op_type() != "Sqrt") return std::nullopt;
  m.nodes = {square, mean, add_eps, sqrt};
  Node* normalized = MatchNormalize(sqrt, m.x, m.nodes);
  if (normalized == nullptr) return std::nullopt;
  m.output = normalized->output(0);
  if (Node* mul = SingleUser(m.output); mul && mul->op_type() == "Mul") {
    Value* gamma = OtherOperand(*mul, m.output);
    if (IsPerChannelConstant(gamma, *n) && gamma->type().dtype == DType::kF32) {
      m.gamma = gamma;
      m.nodes.push_back(mul);
      m.output = mul->output(0);
    }
  }
  return m;
}

}  // namespace

absl::StatusOr<bool> RecognizeRmsNorm(Graph& graph, ShapeEnv& env) {
  bool changed = false;
  absl::flat_hash_set<const Node*> removed;  // by earlier rewrites in this sweep
  for (Node* node : graph.nodes()) {
    if (removed.contains(node)) continue;
    std::optional<RmsNormMatch> m = MatchAt(node);
    if (!m) continue;
    int64_t n = *m->x->type().shape.back().AsConst();
    Attributes attrs;
    attrs.Set("axis", int64_t{-1});
    attrs.Set("epsilon", m->epsilon);
    absl::StatusOr<Node*> rms = ReplaceWithNewNode(graph, env, m->output, m->nodes, "RMSNormalization",
                                                   {m->x, ChannelVector(graph, m->gamma, n, 1.0f)}, attrs, kPass);
    if (!rms.ok()) return rms.status();
    removed.insert(m->nodes.begin(), m->nodes.end());
    changed = true;
  }
  return changed;
}

}  // namespace shapeshift::passes
