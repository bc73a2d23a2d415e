// `--device cpu|cuda` and the CUDA graph flags, shared by run, prove, fuzz
// and demo: one parser, one meaning (runtime::CompileOptions::device and
// CudaOptions). `--device cuda` without a GPU fails at compile time with
// the device's own message; nothing falls back to the CPU.
#ifndef SHAPESHIFT_TOOLS_DEVICE_FLAGS_H_
#define SHAPESHIFT_TOOLS_DEVICE_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/compile_options.h"
#include "tools/args.h"

namespace shapeshift::tools {

// The usage lines of the device flags, a string literal so that each
// command's constexpr kUsage (tools/command.h) can append it as is. The
// explanation names the no-GPU rule: exit 2 with the device's message.
#define SHAPESHIFT_DEVICE_USAGE                                                                        \
  "  device: [--device cpu|cuda] [--no-cuda-graphs] [--cuda-graph-symbol SYM] [--cuda-tf32]\n"       \
  "    --device cuda runs on the GPU (NVRTC kernels, cuBLASLt GEMMs, one CUDA graph per bucket of\n"    \
  "    --cuda-graph-symbol, default the dynamic dim with the widest range); without a usable GPU the\n"  \
  "    command exits 2 naming what is missing, never falling back to the CPU. --cuda-tf32: TF32 GEMMs.\n"

// The flags AddDeviceFlags adds: a command form they do not apply to (prove
// --bundle, prove --guards) refuses them rather than ignore a --device cuda.
const std::vector<std::string>& DeviceFlagNames();
// Adds device, cuda-graph-symbol (valued) and no-cuda-graphs, cuda-tf32 (switches).
void AddDeviceFlags(FlagSpec* spec);
// Sets options->device and options->cuda from the parsed flags; CUDA-only
// flags without --device cuda are errors.
absl::Status ApplyDeviceFlags(const ParsedArgs& args, runtime::CompileOptions* options);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_DEVICE_FLAGS_H_
