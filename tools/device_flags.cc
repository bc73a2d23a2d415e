#include "tools/device_flags.h"

#include "absl/strings/str_cat.h"

namespace shapeshift::tools {

const std::vector<std::string>& DeviceFlagNames() {
  static const std::vector<std::string>* const kNames =
      new std::vector<std::string>{"device", "cuda-graph-symbol", "no-cuda-graphs", "cuda-tf32"};
  return *kNames;
}

void AddDeviceFlags(FlagSpec* spec) {
  spec->valued.insert({"device", "cuda-graph-symbol"});
  spec->switches.insert({"no-cuda-graphs", "cuda-tf32"});
}

absl::Status ApplyDeviceFlags(const ParsedArgs& args, runtime::CompileOptions* options) {
  absl::StatusOr<runtime::Device> device = runtime::ParseDevice(args.Get("device", "cpu"));
  if (!device.ok()) return absl::InvalidArgumentError(absl::StrCat("--device: ", device.status().message()));
  options->device = *device;
  if (*device != runtime::Device::kCuda) {
    for (const char* flag : {"no-cuda-graphs", "cuda-graph-symbol", "cuda-tf32"}) {
      if (args.Has(flag)) return absl::InvalidArgumentError(absl::StrCat("--", flag, " needs --device cuda"));
    }
    return absl::OkStatus();
  }
  options->cuda.graphs = !args.Has("no-cuda-graphs");
  options->cuda.graph_symbol = args.Get("cuda-graph-symbol");
  options->cuda.allow_tf32 = args.Has("cuda-tf32");
  return absl::OkStatus();
}

}  // namespace shapeshift::tools
