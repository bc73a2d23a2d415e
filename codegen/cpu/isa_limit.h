// The widest instruction set shapeshift's CPU code may use in this process:
// the host's, or AVX2 when the environment says SHAPESHIFT_MAX_CPU_ISA=avx2.
//
// Why: one machine must be able to run, tune and check the code an
// AVX2-only CPU would get (the tuning issue's "AVX-512 masked off" run), and
// a user must be able to rule out an AVX-512 code path when hunting a bug.
// The limit is read once and applied everywhere the ISA is decided — the
// LLVM target features (host_target.h: the JIT's features, hence the object
// store's keys and a tuning file's machine key), the skinny GEMM's cores
// (skinny_matmul.h) and oneDNN's dispatcher (dnnl_set_max_cpu_isa, before
// its first primitive) — so no layer runs AVX-512 while another believes it
// is masked. ONEDNN_MAX_CPU_ISA alone would mask only oneDNN.
#ifndef SHAPESHIFT_CODEGEN_CPU_ISA_LIMIT_H_
#define SHAPESHIFT_CODEGEN_CPU_ISA_LIMIT_H_

#include <string_view>

#include "absl/status/statusor.h"

namespace shapeshift::codegen::cpu {

enum class IsaLimit { kHost, kAvx2 };

inline constexpr char kIsaLimitVariable[] = "SHAPESHIFT_MAX_CPU_ISA";

// The process's limit, parsed once from kIsaLimitVariable (unset, empty or
// "host": kHost; "avx2": kAvx2); anything else is INVALID_ARGUMENT naming
// the variable and its value (CpuBackend::Create returns it).
absl::StatusOr<IsaLimit> ProcessIsaLimit();

// Whether LLVM target feature `feature` ("avx512f", "amx-tile", ...) may be
// enabled under the process's limit (an invalid limit allows nothing wide).
bool FeatureAllowed(std::string_view feature);

// True when the limit lets code use AVX-512.
bool Avx512Allowed();

// Whether hand-written cores for these instruction sets may run here (the
// skinny GEMM's, the fused attention's): the CPU has AVX-512F + FMA (resp.
// AVX2 + FMA), the OS saves their registers (libgcc's CPU model checks
// XCR0), and for AVX-512 the process's limit allows it.
bool Avx512FmaUsable();
bool Avx2FmaUsable();

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_ISA_LIMIT_H_
