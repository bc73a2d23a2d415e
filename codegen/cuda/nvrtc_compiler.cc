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
using Program = std::unique_ptr<nvrtcProgram, ProgramDeleter>;

absl::Status NvrtcError(const std::string& name, const char* step, nvrtcResult result) {
  return absl::InternalError(absl::StrCat("NVRTC ", step, " of '", name, "' failed: ", nvrtcGetErrorString(result)));
}

std::string Log(nvrtcProgram program) {
  size_t size = 0;
  nvrtcGetProgramLogSize(program, &size);
  std::string log(size, '\0');
  if (size > 0) nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// Creates and compiles; the log is returned for success and failure alike.
absl::StatusOr<Program> Compile(const std::string& source, const std::string& name, const std::string& arch_flag,
                                bool verbose_ptxas, std::string* log) {
  Program program(new nvrtcProgram(nullptr));
  nvrtcResult result = nvrtcCreateProgram(program.get(), source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS) {
    delete program.release();  // nothing to destroy
    return NvrtcError(name, "program creation", result);
  }
  std::vector<const char*> flags = {arch_flag.c_str(), "--std=c++17", "-default-device"};
  if (verbose_ptxas) {
    flags.push_back("-Xptxas");
    flags.push_back("-v");
  }
  result = nvrtcCompileProgram(*program, static_cast<int>(flags.size()), flags.data());
  *log = Log(*program);
  if (result != NVRTC_SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat("NVRTC could not compile '", name, "' (", arch_flag, "): ", *log));
  }
  return program;
}

}  // namespace

absl::StatusOr<std::string> CompileToPtx(const std::string& source, const std::string& name,
                                         const NvrtcOptions& options) {
  std::string log;
  absl::StatusOr<Program> program =
      Compile(source, name, "--gpu-architecture=" + options.architecture, /*verbose_ptxas=*/false, &log);
  if (!program.ok()) return program.status();
  size_t size = 0;
  nvrtcResult result = nvrtcGetPTXSize(**program, &size);
  if (result != NVRTC_SUCCESS) return NvrtcError(name, "PTX size", result);
  std::string ptx(size, '\0');
  if ((result = nvrtcGetPTX(**program, ptx.data())) != NVRTC_SUCCESS) return NvrtcError(name, "PTX read", result);
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

absl::StatusOr<Cubin> CompileToCubin(const std::string& source, const std::string& name, const std::string& arch) {
  Cubin cubin;
  absl::StatusOr<Program> program = Compile(source, name, "--gpu-architecture=" + arch, /*verbose_ptxas=*/true,
                                            &cubin.log);
  if (!program.ok()) return program.status();
  size_t size = 0;
  nvrtcResult result = nvrtcGetCUBINSize(**program, &size);
  if (result != NVRTC_SUCCESS) return NvrtcError(name, "cubin size", result);
  if (size == 0) return absl::InvalidArgumentError(absl::StrCat("NVRTC made no cubin for '", name, "' (", arch, ")"));
  cubin.image.resize(size);
  if ((result = nvrtcGetCUBIN(**program, cubin.image.data())) != NVRTC_SUCCESS) {
    return NvrtcError(name, "cubin read", result);
  }
  cubin.arch = arch;
  cubin.reports = ParsePtxasInfo(cubin.log);
  return cubin;
}

std::vector<std::string> NvrtcRealArchitectures() {
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) return {};
  std::vector<int> archs(count);
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return {};
  std::vector<std::string> names;
  for (int a : archs) names.push_back(absl::StrCat("sm_", a));
  return names;
}

std::string NvrtcVersion() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return absl::StrCat(major, ".", minor);
}

}  // namespace shapeshift::codegen::cuda
