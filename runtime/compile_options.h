// CompileOptions: what a user chooses when compiling a model — the declared
// ranges of its dynamic dims and the debugging hooks.
#ifndef SHAPESHIFT_RUNTIME_COMPILE_OPTIONS_H_
#define SHAPESHIFT_RUNTIME_COMPILE_OPTIONS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/onnx/importer.h"

namespace shapeshift::codegen::cpu {
class ObjectStore;
}  // namespace shapeshift::codegen::cpu
namespace shapeshift::codegen::cuda {
class DeviceApi;
}  // namespace shapeshift::codegen::cuda

namespace shapeshift::runtime {

struct GemmTuning;  // runtime/tuning/gemm_tuning.h

// Where a Program runs. kCuda without a usable GPU is a compile error,
// never a silent CPU run.
enum class Device { kCpu, kCuda };
const char* DeviceName(Device device);                      // "cpu" | "cuda"
absl::StatusOr<Device> ParseDevice(absl::string_view text);  // "cpu" | "cuda" (or "gpu")
// The largest head dims an attention fusion merges for `device` (0: any):
// the CPU's fused core takes any; the CUDA kernel's shared memory holds up
// to codegen/cuda/attention_kernel.h's kAttentionMaxHeadDim, and a larger
// attention stays two GEMMs and a softmax there. Program::Compile and
// CheckProgram both plan with it.
int64_t AttentionMaxHeadDim(Device device);

// The CUDA device program's choices (runtime/device/README.md).
struct CudaOptions {
  // The device; null opens GPU `ordinal` (codegen::cuda::OpenCudaDevice)
  // when the program is compiled. Tests pass the host-emulated device.
  std::shared_ptr<codegen::cuda::DeviceApi> device;
  int ordinal = 0;
  // Replays CUDA graphs captured per bucket of `graph_symbol` (empty: the
  // dynamic symbol with the widest declared range), once a bucket key has
  // been seen `capture_after` times.
  bool graphs = true;
  std::string graph_symbol;
  int capture_after = 2;
  bool learned_buckets = false;  // bucket bounds from traffic quantiles, not powers of two
  // cuBLASLt applies a tanh GELU in its epilogue (else a generated kernel).
  bool gelu_in_gemm = true;
  // TF32 tensor cores in GEMMs: faster, ~1e-3 relative error.
  bool allow_tf32 = false;
};

class PackedWeightCache;  // packed_weight_cache.h

struct CompileOptions {
  // Dim name → declared inclusive range (`--dim seq=1..512`). For ONNX models
  // these are the importer's dim_param ranges; for built models they
  // override the ranges the builder declared. Unknown names are an error.
  std::map<std::string, DimRange> dims;
  // Pass names after which the graph / plan is printed (`--print-after`).
  std::vector<std::string> print_after;
  std::ostream* print_stream = nullptr;  // std::cerr when null
  // f32 lanes of generated vector loops; 0 = the widest the host has.
  int vector_width = 0;
  // Compiled kernels are looked up here before compiling and kept here
  // after (e.g. persist::ArtifactObjectStore for a cache directory); not
  // owned, may be null. ProgramStats say how many kernels came from it.
  codegen::cpu::ObjectStore* object_store = nullptr;
  // Packed short-request weight copies are looked up here before packing and
  // kept here after, so the Programs of one Dispatcher (its polymorphic
  // entry, buckets and static tiers) share one copy per weight
  // (packed_weight_cache.h); not owned, may be null (each Program packs its
  // own). DispatcherStats::packed_weight_bytes says what is held.
  PackedWeightCache* packed_weights = nullptr;
  // GEMMs with constant weights also get a short-request path over a packed
  // copy of the weights: shapeshift's skinny GEMM for 1..32 rows where the
  // CPU has AVX2 or AVX-512 (codegen/cpu/skinny_matmul.h), else oneDNN's
  // static-M primitives for 4..32 (codegen/cpu/small_rows_matmul.h); faster
  // than oneDNN's runtime-M GEMM there, at the memory of a second copy of
  // those weights.
  bool pack_small_row_gemms = true;
  // With the skinny GEMM's packed copy, longer requests read it too (oneDNN's
  // blocked static-M GEMM in chunks, codegen/cpu/panel_rows_matmul.h) where
  // oneDNN has a blocked kernel for it (AVX-512), instead of the runtime-M
  // GEMM over the plain weights. Off by default: measured 0-3% slower on
  // BERT-base (bench/RESULTS.md) and no memory saved until the plain copy
  // can be released (runtime/README.md).
  bool long_rows_on_panels = false;
  // This machine's measured choices for those short requests (`shapeshift
  // tune`, runtime/tuning/gemm_tuning.h): per GEMM class, how many rows the
  // skinny GEMM serves and its prefetch distance, and the instruction set of
  // its core. Null: the built-in defaults (SkinnyOptions). A tuning made on
  // another machine, thread count or build is a compile error.
  std::shared_ptr<const GemmTuning> tuning;
  // Each attention (Q·Kᵀ → softmax → ·V with its head transposes) runs as
  // one fused kernel with no [S, T] scores in memory (passes/internal/
  // attention_groups.h; codegen/cpu/fused_attention.h, on a CUDA device
  // codegen/cuda/attention_kernel.h); off: two batched GEMMs (oneDNN or
  // cuBLASLt), a softmax kernel and the transposes.
  bool fuse_attention = true;
  // OpenMP threads the compile's oneDNN primitives are created and warmed
  // with (oneDNN fixes a primitive's thread count at creation); 0 = the
  // compiling thread's omp_get_max_threads() (OMP_NUM_THREADS). Python's
  // SessionOptions.intra_op_num_threads; requests should run with the same.
  int threads = 0;
  // The device the program runs on (`--device cpu|cuda`); `cuda` below
  // applies to Device::kCuda only.
  Device device = Device::kCpu;
  CudaOptions cuda;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_COMPILE_OPTIONS_H_
