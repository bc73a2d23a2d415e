#include "tests/support/cuda/host_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace shapeshift::codegen::cuda::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A per-process scratch directory (tests run in parallel under ctest).
const std::string& ScratchDir() {
  static const std::string* dir = [] {
    std::string pattern = absl::StrCat(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp", "/ss_cuda_emu_XXXXXX");
    char* made = mkdtemp(pattern.data());
    return new std::string(made ? made : "/tmp");
  }();
  return *dir;
}

}  // namespace

HostModule::~HostModule() {
  if (handle_ != nullptr) dlclose(handle_);
}

absl::StatusOr<std::shared_ptr<const HostModule>> HostModule::Compile(const std::string& source) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* cache = new absl::flat_hash_map<std::string, std::shared_ptr<const HostModule>>();
  absl::MutexLock lock(&mu);
  if (auto it = cache->find(source); it != cache->end()) return it->second;
  std::string base = absl::StrCat(ScratchDir(), "/m", cache->size(), "_", absl::Hash<std::string>()(source) % 1000000);
  {
    std::ofstream out(base + ".cu");
    out << source;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", base, ".cu"));
  }
  std::string command = absl::StrCat(SHAPESHIFT_HOST_CXX,
                                     " -x c++ -std=c++17 -O1 -fPIC -shared -w -include ", SHAPESHIFT_SOURCE_DIR,
                                     "/codegen/cuda/cuda_emulation.h -o ", base, ".so ", base, ".cu > ", base,
                                     ".log 2>&1");
  if (std::system(command.c_str()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("the host compiler rejected the emulated module ", base,
                                                   ".cu:\n", ReadFile(base + ".log")));
  }
  void* handle = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return absl::InternalError(absl::StrCat("dlopen ", base, ".so: ", dlerror()));
  std::shared_ptr<HostModule> module(new HostModule(handle));
  module->launch_ = reinterpret_cast<LaunchFn>(dlsym(handle, "ss_emu_launch"));
  if (module->launch_ == nullptr) return absl::InternalError("the emulated module has no ss_emu_launch");
  (*cache)[source] = module;
  return std::shared_ptr<const HostModule>(module);
}

absl::StatusOr<void*> HostModule::Entry(const std::string& name) const {
  void* fn = dlsym(handle_, name.c_str());
  if (fn == nullptr) return absl::NotFoundError(absl::StrCat("the emulated module has no kernel '", name, "'"));
  return fn;
}

absl::Status HostModule::Launch(void* entry, LaunchShape shape, bool reverse, void* const* buffers,
                                const long long* dims) const {
  int r = launch_(reinterpret_cast<void (*)(void* const*, const long long*)>(entry), shape.grid, shape.block,
                  reverse ? 1 : 0, buffers, dims);
  if (r != 0) {
    return absl::InvalidArgumentError(absl::StrCat("emulated launch of ", shape.grid, " x ", shape.block,
                                                   " threads refused (block must be 1..", kMaxBlockThreads, ")"));
  }
  return absl::OkStatus();
}

}  // namespace shapeshift::codegen::cuda::testing
