// The dispatcher: op type → kernel, with every error prefixed by the node
// and op so a failure deep in a BERT graph names where it happened, and the
// f16/bf16 widening for kernels registered HalfPrecision::kViaF32.
#include "graph/reference/kernel.h"

#include <optional>

#include "graph/op_table.h"
#include "graph/reference/float16.h"
#include "graph/reference/kernel_util.h"

namespace shapeshift {
namespace {

using reference::HalfPrecision;
using reference::KernelEntry;

const reference::KernelRegistry& Registry() {
  static const reference::KernelRegistry* registry = [] {
    auto* r = new reference::KernelRegistry;
    reference::RegisterElementwiseUnaryKernels(*r);
    reference::RegisterElementwiseBinaryKernels(*r);
    reference::RegisterReduceKernels(*r);
    reference::RegisterMatMulKernels(*r);
    reference::RegisterShapeKernels(*r);
    reference::RegisterIndexingKernels(*r);
    reference::RegisterGatherNDKernel(*r);
    reference::RegisterScatterNDKernel(*r);
    reference::RegisterGeneratorKernels(*r);
    reference::RegisterCastKernels(*r);
    reference::RegisterNormalizationKernels(*r);
    reference::RegisterRotaryKernels(*r);
    return r;
  }();
  return *registry;
}

bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }

// The 16-bit type to widen from: set when some input is f16/bf16 and every
// floating-point input has that same type. Mixed float types are left to the
// kernel, which reports them as it would for f32 + f64.
std::optional<DType> UniformHalfType(const KernelArgs& args) {
  std::optional<DType> half;
  for (const Tensor* t : args.inputs) {
    if (t == nullptr || !IsFloat(t->dtype())) continue;
    if (!IsHalf(t->dtype()) || (half && *half != t->dtype())) return std::nullopt;
    half = t->dtype();
  }
  return half;
}

Tensor ConvertFloat(const Tensor& t, DType to) {
  Tensor out = Tensor::Zeros(to, t.shape()).value();  // same element count as t
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const double v = t.GetAsDouble(i);
    switch (to) {
      case DType::kF32: out.mutable_data<float>()[i] = static_cast<float>(v); break;
      case DType::kF16: out.mutable_data<uint16_t>()[i] = DoubleToHalfBits(v); break;
      default: out.mutable_data<uint16_t>()[i] = FloatToBFloat16Bits(static_cast<float>(v)); break;
    }
  }
  return out;
}

// Runs `entry` with 16-bit inputs widened to f32, then rounds every f32
// output back to `half` (non-float outputs, e.g. Equal's bool, pass through).
absl::StatusOr<std::vector<Tensor>> RunViaF32(const KernelEntry& entry, const KernelArgs& args,
                                              DType half) {
  std::vector<Tensor> widened;
  widened.reserve(args.inputs.size());
  KernelArgs wide = args;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const Tensor* t = args.inputs[i];
    if (t == nullptr || t->dtype() != half) continue;
    widened.push_back(ConvertFloat(*t, DType::kF32));
    wide.inputs[i] = &widened.back();
  }
  absl::StatusOr<std::vector<Tensor>> result = entry.fn(wide);
  if (!result.ok()) return result;
  for (Tensor& out : *result) {
    if (out.dtype() == DType::kF32) out = ConvertFloat(out, half);
  }
  return result;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> RunReferenceKernel(const KernelArgs& args) {
  const std::string where = absl::StrCat("node '", args.node_name, "' (", args.op_type, "): ");
  const OpInfo* op = FindOp(args.op_type);
  if (op == nullptr || op->reference == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat(where, "unsupported op ", args.op_type, " (no reference kernel)"));
  }
  const KernelEntry& entry = *op->reference;
  static const Attributes kNoAttributes;
  KernelArgs checked = args;
  if (checked.attrs == nullptr) checked.attrs = &kNoAttributes;
  const std::optional<DType> half =
      entry.halves == HalfPrecision::kViaF32 ? UniformHalfType(checked) : std::nullopt;
  absl::StatusOr<std::vector<Tensor>> result =
      half ? RunViaF32(entry, checked, *half) : entry.fn(checked);
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

namespace reference {

const KernelEntry* FindKernelEntry(absl::string_view op_type) {
  auto it = Registry().all().find(std::string(op_type));
  return it == Registry().all().end() ? nullptr : &it->second;
}

}  // namespace reference

}  // namespace shapeshift
