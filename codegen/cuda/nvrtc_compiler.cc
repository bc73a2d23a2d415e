#include "codegen/cuda/nvrtc_compiler.h"

#include <nvrtc.h>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"

namespace shapeshift::codegen::cuda {
namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram* program) const {
    nvrtcDestroyProgram(program);
    delete program;
  }
};

absl::Status NvrtcError(const std::string& name, const char* step, nvrtcResult result) {
  return absl::InternalError(absl::StrCat("NVRTC ", step, " of '", name, "' failed: ", nvrtcGetErrorString(result)));
}

}  // namespace

absl::StatusOr<std::string> CompileToPtx(const std::string& source, const std::string& name,
                                         const NvrtcOptions& options) {
  std::unique_ptr<nvrtcProgram, ProgramDeleter> program(new nvrtcProgram(nullptr));
  nvrtcResult result = nvrtcCreateProgram(program.get(), source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS) {
    // Nothing to destroy: release the holder without calling nvrtcDestroyProgram.
    delete program.release();
    return NvrtcError(name, "program creation", result);
  }
  std::string arch = "--gpu-architecture=" + options.architecture;
  std::vector<const char*> flags = {arch.c_str(), "--std=c++17", "-default-device"};
  result = nvrtcCompileProgram(*program, static_cast<int>(flags.size()), flags.data());
  if (result != NVRTC_SUCCESS) {
    size_t log_size = 0;
    nvrtcGetProgramLogSize(*program, &log_size);
    std::string log(log_size, '\0');
    if (log_size > 0) nvrtcGetProgramLog(*program, log.data());
    return absl::InvalidArgumentError(absl::StrCat("NVRTC could not compile '", name, "': ", log));
  }
  size_t ptx_size = 0;
  if ((result = nvrtcGetPTXSize(*program, &ptx_size)) != NVRTC_SUCCESS) return NvrtcError(name, "PTX size", result);
  std::string ptx(ptx_size, '\0');
  if ((result = nvrtcGetPTX(*program, ptx.data())) != NVRTC_SUCCESS) return NvrtcError(name, "PTX read", result);
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

}  // namespace shapeshift::codegen::cuda
