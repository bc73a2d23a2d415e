// HostTarget: what the CPU backend compiles for on this machine — target
// triple, CPU name, CPU features (LLVM's "+avx512f,-amx-tile,..." string),
// LLVM version and the compiler's identity (object_store.h).
//
// Why: machine code is only valid where these match. The object store keys
// on them per kernel; an AOT bundle records them once, so a process can
// refuse a bundle built for another machine with a message naming the
// difference instead of finding every kernel missing. Computed the way
// CpuBackend::Create sets up its target machine (a test checks that the two
// agree with the key material of a real object).
#ifndef SHAPESHIFT_CODEGEN_CPU_HOST_TARGET_H_
#define SHAPESHIFT_CODEGEN_CPU_HOST_TARGET_H_

#include <string>

namespace shapeshift::codegen::cpu {

struct HostTarget {
  std::string triple;
  std::string cpu;
  std::string features;  // with SHAPESHIFT_MAX_CPU_ISA's limit applied (isa_limit.h)
  std::string llvm_version;
  std::string compiler;  // CompilerIdentity()
};

// Detected once per process.
const HostTarget& DetectHostTarget();

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_HOST_TARGET_H_
