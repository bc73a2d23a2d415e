#include "runtime/compile_check.h"

#include <optional>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "codegen/lower/lower_group.h"
#include "graph/op_table.h"
#include "passes/pipeline.h"

namespace shapeshift::runtime {
namespace {

// The op table's answer for a node a kernel would have to run, or nullopt
// when the table promises a lowering (the lowering itself then decides).
std::optional<std::string> TableRefusal(const Node& node) {
  const OpInfo* op = FindOp(node.op_type());
  if (op == nullptr) return "the op is not in shapeshift's op table";
  switch (op->cpu) {
    case Lowering::kCompiled: return std::nullopt;
    case Lowering::kNone: return absl::StrCat("op ", op->op_type, " has no compiled CPU lowering");
    case Lowering::kPattern:
      return absl::StrCat("op ", op->op_type, " is compiled only ", op->pattern, "; this use is not");
    case Lowering::kCompileTime:
      return absl::StrCat("op ", op->op_type,
                          " is evaluated while compiling; here its value is needed at run time");
  }
  return std::nullopt;
}

// The node a lowering error is about: the group's only node, or the node
// the message names (lowering messages say "node 'NAME'").
const Node* NodeNamedIn(const passes::Group& group, absl::string_view message) {
  if (group.nodes.size() == 1) return group.nodes.front();
  for (const Node* n : group.nodes) {
    if (absl::StrContains(message, absl::StrCat("node '", n->name(), "'"))) return n;
  }
  return nullptr;
}

}  // namespace

ProgramCheck CheckProgram(Graph& graph, ShapeEnv& env) {
  ProgramCheck check;
  absl::StatusOr<passes::PipelineResult> pipeline = passes::RunPipeline(graph, env);
  if (!pipeline.ok()) {
    check.problems.push_back({"", "", std::string(pipeline.status().message())});
    return check;
  }
  check.groups = static_cast<int64_t>(pipeline->fusion.groups.size());
  for (const passes::Group& group : pipeline->fusion.groups) {
    bool refused = false;
    for (const Node* node : group.nodes) {
      if (std::optional<std::string> why = TableRefusal(*node)) {
        check.problems.push_back({node->name(), node->op_type(), *why});
        refused = true;
      }
    }
    if (refused) continue;
    absl::StatusOr<std::vector<codegen::lower::LoweredStep>> steps = codegen::lower::LowerGroup(group, &env);
    if (!steps.ok()) {
      const Node* at = NodeNamedIn(group, steps.status().message());
      check.problems.push_back({at ? at->name() : "", at ? at->op_type() : "", std::string(steps.status().message())});
      continue;
    }
    for (const codegen::lower::LoweredStep& step : *steps) {
      if (std::holds_alternative<codegen::lower::KernelCall>(step)) ++check.kernels;
      if (std::holds_alternative<codegen::lower::MatmulCall>(step)) ++check.gemms;
    }
  }
  return check;
}

}  // namespace shapeshift::runtime
