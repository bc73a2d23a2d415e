#include "codegen/cpu/host_target.h"

#include "absl/strings/str_join.h"
#include "codegen/cpu/isa_limit.h"
#include "codegen/cpu/object_store.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/TargetSelect.h"

namespace shapeshift::codegen::cpu {

const HostTarget& DetectHostTarget() {
  static const HostTarget* target = [] {
    llvm::InitializeNativeTarget();
    auto* t = new HostTarget;
    t->llvm_version = LLVM_VERSION_STRING;
    t->compiler = CompilerIdentity();
    t->cpu = llvm::sys::getHostCPUName().str();
    // The same builder CpuBackend::Create starts from: its features are the
    // target machine's, hence the object keys'.
    auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (builder) {
      t->triple = builder->getTargetTriple().str();
      // Under SHAPESHIFT_MAX_CPU_ISA the features the limit forbids are
      // turned off (isa_limit.h): this string is what the JIT compiles for.
      std::vector<std::string> features;
      for (const std::string& f : builder->getFeatures().getFeatures()) {
        const bool on = !f.empty() && f[0] == '+';
        const std::string name = f.empty() ? f : f.substr(1);
        features.push_back(on && !FeatureAllowed(name) ? "-" + name : f);
      }
      t->features = absl::StrJoin(features, ",");
    } else {
      llvm::consumeError(builder.takeError());
      t->triple = llvm::sys::getProcessTriple();
    }
    return t;
  }();
  return *target;
}

}  // namespace shapeshift::codegen::cpu
