#include "codegen/cpu/host_target.h"

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
      t->features = builder->getFeatures().getString();
    } else {
      llvm::consumeError(builder.takeError());
      t->triple = llvm::sys::getProcessTriple();
    }
    return t;
  }();
  return *target;
}

}  // namespace shapeshift::codegen::cpu
