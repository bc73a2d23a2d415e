// Internal to runtime/: the data of a compiled Program (built by
// program_compile.cc, executed by program_run.cc).
#ifndef SHAPESHIFT_RUNTIME_PROGRAM_IMPL_H_
#define SHAPESHIFT_RUNTIME_PROGRAM_IMPL_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "codegen/cpu/cpu_backend.h"
#include "codegen/cpu/kernel_cache.h"
#include "codegen/cpu/onednn_matmul.h"
#include "codegen/cpu/panel_rows_matmul.h"
#include "codegen/cpu/skinny_matmul.h"
#include "codegen/cpu/small_rows_matmul.h"
#include "graph/constant_spill.h"
#include "graph/dtype.h"
#include "runtime/device/device_program.h"
#include "runtime/input_binder.h"
#include "runtime/output_pool.h"
#include "runtime/program.h"
#include "runtime/sym_tape.h"
#include "shapes/guard_program.h"

namespace shapeshift::runtime {

// Where one storage root lives at run time.
struct BufferSource {
  enum class Kind { kInput, kConstant, kArena, kOutput };
  Kind kind = Kind::kArena;
  int index = -1;                  // kInput / kOutput: position in the graph's list
  const void* constant = nullptr;  // kConstant
  const Tensor* tensor = nullptr;  // kConstant: the graph's, while compiling
  size_t constant_bytes = 0;       // kConstant: its size (a device program uploads it)
  int offset_slot = -1;            // kArena: tape slot of the byte offset
};

struct KernelStep {
  std::shared_ptr<const codegen::cpu::CompiledKernel> kernel;
  std::vector<int> buffers;    // indices into Impl::buffers
  std::vector<int> dim_slots;  // tape slots, one per kernel dim
  int work_slot = -1;          // tape slot: elements the call writes
  // A slab copy of a KV pair's Concat (Impl::kv_pairs): with that pair bound
  // to a caller's buffer, the copy of the past (kv_past) is skipped and the
  // copy of the new positions runs with the buffer's capacity as kernel dim
  // `kv_extent_dim` (the output's extent on the concat axis).
  int kv_pair = -1;
  bool kv_past = false;
  int kv_extent_dim = -1;
  // The copy of the past that the attention reading the present makes
  // instead (AttentionStep::k_past): never run.
  bool past_by_attention = false;
};

// Below this many output elements a kernel runs on the calling thread: an
// OpenMP fork/join costs more than the work (short requests are mostly such
// calls), and on a loaded machine a descheduled worker stalls the barrier.
inline constexpr int64_t kSerialKernelElements = 16384;

struct MatmulStep {
  const codegen::cpu::OnednnMatmul* matmul = nullptr;
  // Short requests' path when B is a constant: m in its range runs there on
  // packed_b instead — shapeshift's own kernel (codegen/cpu/skinny_matmul.h)
  // where the CPU has AVX2 or AVX-512, else oneDNN's static-M primitives
  // (codegen/cpu/small_rows_matmul.h). At most one of the two is set.
  const codegen::cpu::SkinnyMatmul* skinny = nullptr;
  const codegen::cpu::SmallRowsMatmul* small_rows = nullptr;
  // With skinny: the rows past its range read packed_b too, on oneDNN's
  // blocked GEMM (codegen/cpu/panel_rows_matmul.h); null: the plain B.
  const codegen::cpu::PanelRowsMatmul* panel_rows = nullptr;
  codegen::cpu::PackedWeights packed_b;
  int batch = -1, m = -1, k = -1, n = -1;  // tape slots
  int a = -1, b = -1, bias = -1, residual = -1, c = -1;  // buffers; -1 absent
  // B is a KV pair's present (config.b_batch_stride): its batch stride is
  // tape slot b_stride_slot (dense), or the bound buffer's capacity times the
  // pair's position elements when pair b_kv_pair is bound.
  int b_stride_slot = -1;
  int b_kv_pair = -1;
};

struct GatherStep {
  int table = -1, indices = -1, output = -1;  // buffers
  int count_slot = -1;
  int64_t table_rows = 0;
  int64_t row_bytes = 0;
  bool indices_i32 = false;
  std::string node_name;
  // A constant table in a spill file: its rows are read with pread, so none
  // of its pages become resident (graph/constant_spill.h).
  SpilledRange table_file;
};

// Fails the request when an index of `indices` is outside its axis
// (codegen/lower/lowered_step.h, IndexCheckCall): element i addresses an
// axis of size slots[dim_slots[i % n]].
struct IndexCheckStep {
  int indices = -1;  // buffer
  int count_slot = -1;
  std::vector<int> dim_slots;
  std::vector<int64_t> axes;
  bool indices_i32 = false;
  std::string node_name, op_type;
};

// One fused attention (codegen/lower/lowered_step.h AttentionCall): every
// size and stride a tape slot, filled into the core's AttentionArgs per
// request.
struct AttentionStep {
  int q = -1, k = -1, v = -1, mask = -1, out = -1;  // buffers; mask -1 absent
  int batch = -1, heads = -1, kv_heads = -1, q_len = -1, kv_len = -1;  // tape slots
  std::array<int, 3> q_strides{}, k_strides{}, v_strides{}, out_strides{}, mask_strides{};  // tape slots
  int q_offset = -1, k_offset = -1, v_offset = -1;  // tape slots: elements into q's, k's and v's buffers
  int64_t head_dim = 0, v_head_dim = 0, mask_col_stride = 1;
  float scale = 1.0f;
  bool causal = false;
  int64_t window = 0;
  float fill = 0.0f;
  bool nan_to_zero = false;
  std::string node_name;
  // K or V is a KV pair's present ([b, kv_heads, T, d]): with the pair bound
  // to a caller's buffer its batch and head strides follow the buffer's
  // capacity instead of T. -1: not a present.
  int k_kv_pair = -1, v_kv_pair = -1;
  // Unbound, that pair's Concat copy of the past is made here, while the
  // attention reads it (cpu::PastCopy; its slab kernel is marked
  // past_by_attention): the past input's buffer, its strides and its rows
  // as tape slots. -1: the Concat copies it (program_compile.cc,
  // DeferPastCopies, says when the attention cannot).
  struct PastSource {
    int buffer = -1;
    std::array<int, 3> strides{};
    int rows = -1;
  };
  PastSource k_past, v_past;
};

using Step = std::variant<KernelStep, MatmulStep, GatherStep, IndexCheckStep, AttentionStep>;

// An input dim the binder does not settle (a constant, a repeated symbol,
// an expression like 2*seq or past+seq): after the size tape it must equal
// the evaluated size in tape slot `slot`.
struct InputDimCheck {
  int input = 0, dim = 0;
  int slot = -1;
  std::string expected;  // the dim's expression, for messages
};

// A Concat of a graph input (the past) and new positions into a graph
// output (the present) on a positions axis that is the second-to-last: the
// pair a caller may bind to one buffer with capacity (runtime/kv_cache.h).
struct KvPair {
  int input = -1, output = -1;  // graph-input / graph-output index
  int input_buffer = -1, output_buffer = -1;  // indices into Impl::buffers
  int64_t axis = 0;
  int position_slot = -1;  // tape slot: elements of one position (the output's dims after axis)
  std::string why_not;     // non-empty: this program cannot bind the pair, and why
  bool past_by_attention = false;  // unbound, the attention reading the present copies the past
};

struct OutputSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int> shape_slots;
  int buffer = -1;            // where the value lives
  bool in_place = false;      // steps write the output tensor directly
};

struct Program::Impl {
  std::unique_ptr<codegen::cpu::CpuBackend> backend;
  std::unique_ptr<codegen::cpu::KernelCache> kernel_cache;
  std::vector<std::unique_ptr<codegen::cpu::OnednnMatmul>> matmuls;
  std::vector<std::unique_ptr<codegen::cpu::SmallRowsMatmul>> small_rows;
  std::vector<std::unique_ptr<codegen::cpu::SkinnyMatmul>> skinny;
  std::vector<std::unique_ptr<codegen::cpu::PanelRowsMatmul>> panel_rows;  // declared after skinny: destroyed first
  std::vector<BufferSource> buffers;
  std::vector<Step> steps;
  std::unique_ptr<SymTape> tape;
  // Binds inputs to symbols: tape slot i is binder.symbols()[i].
  InputBinder binder;
  std::vector<InputDimCheck> input_checks;
  std::vector<OutputSpec> outputs;
  // Guards the compile recorded (specialized answers): the program is valid
  // only where they all hold. Evaluated on the bound symbols (tape slots
  // [0, binder.symbols().size())); absent when no guard was recorded.
  std::optional<GuardProgram> guards;
  std::vector<std::string> guard_texts;  // per atom: predicate and provenance
  // Output storage recycled across requests (output_pool.h); shared so
  // tensors handed out can return their blocks while the Program lives.
  std::shared_ptr<OutputPool> output_pool = std::make_shared<OutputPool>();
  int arena_slot = -1;
  std::vector<KvPair> kv_pairs;
  // Device::kCuda: the steps run here instead (steps above stay empty).
  std::unique_ptr<DeviceProgram> device;
  size_t max_call_buffers = 0;
  size_t max_call_dims = 0;
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_PROGRAM_IMPL_H_
