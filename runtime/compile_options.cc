#include "runtime/compile_options.h"

#include "absl/strings/str_cat.h"
#include "codegen/cuda/attention_kernel.h"

namespace shapeshift::runtime {

const char* DeviceName(Device device) { return device == Device::kCuda ? "cuda" : "cpu"; }

int64_t AttentionMaxHeadDim(Device device) {
  return device == Device::kCuda ? codegen::cuda::kAttentionMaxHeadDim : 0;
}

absl::StatusOr<Device> ParseDevice(absl::string_view text) {
  if (text == "cpu") return Device::kCpu;
  if (text == "cuda" || text == "gpu") return Device::kCuda;
  return absl::InvalidArgumentError(absl::StrCat("unknown device '", text, "' (expected cpu or cuda)"));
}

}  // namespace shapeshift::runtime
