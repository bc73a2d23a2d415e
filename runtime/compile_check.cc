#include "runtime/compile_check.h"

#include <optional>
#include <variant>

#include "absl/container/btree_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/kernel_ir.h"
#include "codegen/lower/lower_group.h"
#include "graph/op_table.h"
#include "passes/pipeline.h"

namespace shapeshift::runtime {
namespace {

// The op table's answer for a node a kernel would have to run, or nullopt
// when the table promises a lowering (the lowering itself then decides).
std::optional<std::string> TableRefusal(const Node& node, Device device) {
  const OpInfo* op = FindOp(node.op_type());
  if (op == nullptr) return "the op is not in shapeshift's op table";
  switch (device == Device::kCuda ? op->cuda : op->cpu) {
    case Lowering::kCompiled: return std::nullopt;
    case Lowering::kNone:
      return absl::StrCat("op ", op->op_type, " has no compiled ", device == Device::kCuda ? "CUDA" : "CPU",
                          " lowering");
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

// Symbols a request binds: those that are exactly a graph input's dim.
absl::btree_set<std::string> BoundSymbols(const Graph& graph) {
  absl::btree_set<std::string> bound;
  for (const Value* in : graph.inputs()) {
    for (SymExpr d : in->type().shape) {
      if (d.IsSymbol()) bound.insert(d.symbol_name());
    }
  }
  return bound;
}

// Sizes a program evaluates per request must follow from the bound
// symbols: a data-dependent dim (a shape computed from input data) has no
// value before the program runs, so the compile cannot plan it.
std::optional<std::string> UnboundSymbol(const std::vector<SymExpr>& exprs, const absl::btree_set<std::string>& bound) {
  for (SymExpr e : exprs) {
    for (const std::string& name : e.Symbols()) {
      if (!bound.contains(name)) return name;
    }
  }
  return std::nullopt;
}

std::vector<SymExpr> SizesOf(const passes::Group& group, const codegen::lower::LoweredStep& step) {
  std::vector<SymExpr> sizes;
  for (const std::vector<Value*>* values : {&group.inputs, &group.outputs}) {
    for (const Value* v : *values) sizes.insert(sizes.end(), v->type().shape.begin(), v->type().shape.end());
  }
  if (const auto* k = std::get_if<codegen::lower::KernelCall>(&step)) {
    sizes.insert(sizes.end(), k->dim_values.begin(), k->dim_values.end());
  } else if (const auto* mm = std::get_if<codegen::lower::MatmulCall>(&step)) {
    sizes.insert(sizes.end(), {mm->batch, mm->m, mm->k, mm->n});
  } else if (const auto* g = std::get_if<codegen::lower::GatherRowsCall>(&step)) {
    sizes.push_back(g->num_indices);
  } else if (const auto* c = std::get_if<codegen::lower::IndexCheckCall>(&step)) {
    sizes.insert(sizes.end(), c->dims.begin(), c->dims.end());
  } else if (const auto* a = std::get_if<codegen::lower::AttentionCall>(&step)) {
    sizes.insert(sizes.end(), {a->batch, a->heads, a->kv_heads, a->q_len, a->kv_len});
    for (const auto* strides : {&a->q_strides, &a->k_strides, &a->v_strides, &a->out_strides, &a->mask_strides}) {
      sizes.insert(sizes.end(), strides->begin(), strides->end());
    }
    sizes.insert(sizes.end(), {a->q_offset, a->k_offset, a->v_offset});
  }
  return sizes;
}

}  // namespace

ProgramCheck CheckProgram(Graph& graph, ShapeEnv& env, Device device) {
  ProgramCheck check;
  passes::PipelineOptions options;
  options.attention_max_head_dim = AttentionMaxHeadDim(device);  // as Program::Compile plans
  absl::StatusOr<passes::PipelineResult> pipeline = passes::RunPipeline(graph, env, options);
  if (!pipeline.ok()) {
    check.problems.push_back({"", "", std::string(pipeline.status().message())});
    return check;
  }
  check.groups = static_cast<int64_t>(pipeline->fusion.groups.size());
  const absl::btree_set<std::string> bound = BoundSymbols(graph);
  if (std::optional<std::string> dyn = UnboundSymbol({pipeline->memory.arena_bytes}, bound)) {
    check.problems.push_back({"", "", absl::StrCat("the arena size depends on '", *dyn,
                                                   "', a dim computed from input data at run time")});
  }
  for (const Value* out : graph.outputs()) {
    if (std::optional<std::string> dyn = UnboundSymbol(out->type().shape, bound)) {
      const Node* p = out->producer();
      check.problems.push_back({p ? p->name() : "", p ? p->op_type() : "",
                                absl::StrCat("output '", out->name(), "' has a dim computed from input data at run time ('",
                                             *dyn, "'); compiled programs need every output shape to follow from the input dims")});
    }
  }
  for (const passes::Group& group : pipeline->fusion.groups) {
    bool refused = false;
    for (const Node* node : group.nodes) {
      if (std::optional<std::string> why = TableRefusal(*node, device)) {
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
    const Node* first = group.nodes.empty() ? nullptr : group.nodes.front();
    auto problem = [&](std::string why) {
      check.problems.push_back({first ? first->name() : "", first ? first->op_type() : "", std::move(why)});
    };
    for (const codegen::lower::LoweredStep& step : *steps) {
      if (std::optional<std::string> dyn = UnboundSymbol(SizesOf(group, step), bound)) {
        problem(absl::StrCat("a size depends on '", *dyn,
                             "', a dim computed from input data at run time; compiled programs need every size "
                             "to follow from the input dims"));
        break;
      }
      if (const auto* k = std::get_if<codegen::lower::KernelCall>(&step)) {
        // The backend verifies every kernel before compiling it; so does the check.
        if (absl::Status s = codegen::Verify(k->kernel); !s.ok()) {
          problem(absl::StrCat("the lowered kernel is invalid: ", s.message()));
          break;
        }
        // The device program emits every kernel before NVRTC sees it; an
        // emitter refusal (an IR operation without CUDA text) is the node's.
        if (device == Device::kCuda) {
          if (absl::StatusOr<codegen::cuda::CudaKernelSource> emitted = codegen::cuda::EmitCudaKernel(k->kernel, "check");
              !emitted.ok()) {
            problem(absl::StrCat("no CUDA kernel: ", emitted.status().message()));
            break;
          }
        }
        ++check.kernels;
      }
      if (std::holds_alternative<codegen::lower::MatmulCall>(step)) ++check.gemms;
      if (std::holds_alternative<codegen::lower::AttentionCall>(step)) ++check.kernels;  // a library kernel
    }
  }
  return check;
}

}  // namespace shapeshift::runtime
