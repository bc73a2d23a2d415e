// What ptxas says about each compiled kernel: registers, spills, stack and
// shared memory — read from the `-Xptxas -v` info log that NVRTC returns
// (nvrtc_compiler.h), so a change that makes a kernel spill or exhaust
// registers shows in tests and in the device program's stats, not only in
// a profile. Parsing is plain text and built everywhere.
#ifndef SHAPESHIFT_CODEGEN_CUDA_PTXAS_REPORT_H_
#define SHAPESHIFT_CODEGEN_CUDA_PTXAS_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace shapeshift::codegen::cuda {

struct PtxasReport {
  std::string entry;  // the kernel's entry name
  std::string arch;   // "sm_90"
  int registers = -1;  // -1: the log had no "Used N registers" line
  int barriers = 0;
  int64_t stack_bytes = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t shared_bytes = 0;
  // "softmax sm_90: 24 registers, 2 barriers, 2048 B smem, 0 B stack, 0/0 B spilled (stores/loads)"
  std::string ToString() const;
};

// One report per "Compiling entry function '...' for 'sm_XX'" in `log`.
std::vector<PtxasReport> ParsePtxasInfo(const std::string& log);

}  // namespace shapeshift::codegen::cuda

#endif  // SHAPESHIFT_CODEGEN_CUDA_PTXAS_REPORT_H_
