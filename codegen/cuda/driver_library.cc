#include "codegen/cuda/driver_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace shapeshift::codegen::cuda::internal {
namespace {

#define SS_STRINGIFY_EXPANDED(x) SS_STRINGIFY(x)
#define SS_STRINGIFY(x) #x

absl::StatusOr<void*> Open(const char* soname, absl::string_view meaning) {
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::UnavailableError(absl::StrCat("cannot load ", soname, " (", why ? why : "unknown error", "): ",
                                               meaning));
  }
  return handle;
}

template <typename Fn>
absl::Status Resolve(void* handle, const char* soname, const char* symbol, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (*out == nullptr) {
    return absl::UnavailableError(absl::StrCat(soname, " has no symbol ", symbol, ": the library is older than the ",
                                               "CUDA ", CUDA_VERSION / 1000, ".", CUDA_VERSION % 1000 / 10,
                                               " headers shapeshift was built with"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DriverFunctions> LoadDriver() {
  constexpr char kSoname[] = "libcuda.so.1";
  absl::StatusOr<void*> handle =
      Open(kSoname, "the NVIDIA driver is not installed; --device cuda needs an NVIDIA GPU and its driver");
  if (!handle.ok()) return handle.status();
  DriverFunctions fns;
#define SS_RESOLVE(name) \
  if (absl::Status s = Resolve(*handle, kSoname, SS_STRINGIFY_EXPANDED(name), &fns.name); !s.ok()) return s;
  SS_CUDA_DRIVER_FUNCTIONS(SS_RESOLVE)
#undef SS_RESOLVE
  return fns;
}

absl::StatusOr<CublasLtFunctions> LoadCublasLt() {
  static const std::string soname = absl::StrCat("libcublasLt.so.", CUBLAS_VER_MAJOR);
  absl::StatusOr<void*> handle =
      Open(soname.c_str(), "cuBLASLt from the CUDA toolkit is needed for GEMMs on the GPU (LD_LIBRARY_PATH?)");
  if (!handle.ok()) return handle.status();
  CublasLtFunctions fns;
#define SS_RESOLVE(name) \
  if (absl::Status s = Resolve(*handle, soname.c_str(), SS_STRINGIFY_EXPANDED(name), &fns.name); !s.ok()) return s;
  SS_CUBLASLT_FUNCTIONS(SS_RESOLVE)
#undef SS_RESOLVE
  return fns;
}

}  // namespace

absl::StatusOr<const DriverFunctions*> Driver() {
  static const absl::StatusOr<DriverFunctions>* loaded = new absl::StatusOr<DriverFunctions>(LoadDriver());
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

absl::StatusOr<const CublasLtFunctions*> CublasLt() {
  static const absl::StatusOr<CublasLtFunctions>* loaded = new absl::StatusOr<CublasLtFunctions>(LoadCublasLt());
  if (!loaded->ok()) return loaded->status();
  return &**loaded;
}

absl::Status CuStatus(const DriverFunctions& driver, CUresult result, const std::string& what) {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  const char* name = nullptr;
  const char* text = nullptr;
  driver.cuGetErrorName(result, &name);
  driver.cuGetErrorString(result, &text);
  std::string message = absl::StrCat(what, " failed: ", name ? name : absl::StrCat("CUresult ", result).c_str(),
                                     text ? absl::StrCat(" (", text, ")") : "");
  if (result == CUDA_ERROR_OUT_OF_MEMORY) return absl::ResourceExhaustedError(message);
  if (result == CUDA_ERROR_NO_DEVICE || result == CUDA_ERROR_INVALID_DEVICE || result == CUDA_ERROR_NOT_INITIALIZED ||
      result == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || result == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE) {
    return absl::UnavailableError(message);
  }
  return absl::InternalError(message);
}

absl::Status CublasStatus(const CublasLtFunctions& lt, cublasStatus_t result, const std::string& what) {
  if (result == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const char* text = lt.cublasLtGetStatusString(result);
  std::string message = absl::StrCat(what, " failed: ", text ? text : absl::StrCat("status ", result).c_str());
  if (result == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(message);
  if (result == CUBLAS_STATUS_NOT_SUPPORTED) return absl::UnimplementedError(message);
  return absl::InternalError(message);
}

}  // namespace shapeshift::codegen::cuda::internal
