// The dispatcher: op type → kernel, with every error prefixed by the node
// and op so a failure deep in a BERT graph names where it happened.
#include "graph/reference/kernel.h"

#include "graph/reference/kernel_util.h"

namespace shapeshift {
namespace {

const reference::KernelRegistry& Registry() {
  static const reference::KernelRegistry* registry = [] {
    auto* r = new reference::KernelRegistry;
    reference::RegisterElementwiseUnaryKernels(*r);
    reference::RegisterElementwiseBinaryKernels(*r);
    reference::RegisterReduceKernels(*r);
    reference::RegisterMatMulKernels(*r);
    reference::RegisterShapeKernels(*r);
    reference::RegisterIndexingKernels(*r);
    reference::RegisterGeneratorKernels(*r);
    reference::RegisterCastKernels(*r);
    reference::RegisterNormalizationKernels(*r);
    return r;
  }();
  return *registry;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> RunReferenceKernel(const KernelArgs& args) {
  const std::string where = absl::StrCat("node '", args.node_name, "' (", args.op_type, "): ");
  auto it = Registry().all().find(args.op_type);
  if (it == Registry().all().end()) {
    return absl::UnimplementedError(
        absl::StrCat(where, "unsupported op ", args.op_type, " (no reference kernel)"));
  }
  static const Attributes kNoAttributes;
  KernelArgs checked = args;
  if (checked.attrs == nullptr) checked.attrs = &kNoAttributes;
  absl::StatusOr<std::vector<Tensor>> result = it->second(checked);
  if (!result.ok()) {
    return absl::Status(result.status().code(), absl::StrCat(where, result.status().message()));
  }
  if (static_cast<int>(result->size()) < args.num_outputs) {
    return absl::InternalError(absl::StrCat(where, "kernel produced ", result->size(),
                                            " outputs, node expects ", args.num_outputs));
  }
  result->resize(args.num_outputs);
  return result;
}

bool HasReferenceKernel(absl::string_view op_type) {
  return Registry().all().count(std::string(op_type)) > 0;
}

std::vector<std::string> ReferenceKernelOps() {
  std::vector<std::string> ops;
  for (const auto& [name, fn] : Registry().all()) ops.push_back(name);
  return ops;
}

}  // namespace shapeshift
