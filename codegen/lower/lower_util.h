// What the group lowerings (lower_group.cc, lower_kernels.cc, rotary_kernel.cc,
// lower_indexing.cc, scan_kernel.cc) share: the error that names a group and
// node, the product of a run of dims, and a kernel under construction.
#ifndef SHAPESHIFT_CODEGEN_LOWER_LOWER_UTIL_H_
#define SHAPESHIFT_CODEGEN_LOWER_LOWER_UTIL_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "codegen/lower/element_emitter.h"
#include "codegen/lower/lowered_step.h"
#include "passes/fusion_plan.h"
#include "shapes/sym_expr.h"

namespace shapeshift::codegen::lower {

// "cannot lower group #<id> (node '<name>' <op>): <why>"; `node` may be null
// (then the parenthesis is left out).
absl::Status GroupError(const passes::Group& g, const Node* node, absl::string_view why);

// dims[begin] * ... * dims[end - 1] (1 for an empty run).
SymExpr Product(const std::vector<SymExpr>& dims, size_t begin, size_t end);

// A kernel under construction with its emitter over `nodes` (empty for a
// kernel that computes nothing inline); Take() moves out the call.
struct KernelBuilder {
  KernelBuilder(ShapeEnv* env, const std::vector<Node*>& nodes, std::string name)
      : call(std::make_unique<KernelCall>()), em(&call->kernel, env, nodes) {
    call->kernel.name = std::move(name);
  }
  KernelCall Take() {
    call->dim_values = em.dims().dim_values();
    call->buffers = em.buffer_values();
    return std::move(*call);
  }
  std::unique_ptr<KernelCall> call;  // heap: `em` points into it
  ElementEmitter em;
};

}  // namespace shapeshift::codegen::lower

#endif  // SHAPESHIFT_CODEGEN_LOWER_LOWER_UTIL_H_
