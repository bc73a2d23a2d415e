// LoweredStep: what one fusion group becomes — the backend-ready description
// the runtime turns into a Program step.
//
// Why model-space SymExprs next to the kernel IR: a compiled kernel is
// parameterized only by its own dims (d0, d1, ...), so the same layer norm of
// 12 layers is one kernel; each call site says how to compute those dims from
// the model's symbols (`dim_values`), and the runtime evaluates them per
// request. Buffers are named by graph Values; the runtime decides where each
// Value lives (an input, a constant, or an arena offset).
#ifndef SHAPESHIFT_CODEGEN_LOWER_LOWERED_STEP_H_
#define SHAPESHIFT_CODEGEN_LOWER_LOWERED_STEP_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "codegen/cpu/onednn_matmul.h"
#include "codegen/kernel_ir.h"
#include "graph/graph.h"
#include "shapes/sym_expr.h"

namespace shapeshift::codegen::lower {

// Inside codegen, `Value` is a kernel IR expression; graph values are these.
using GraphValue = ::shapeshift::Value;

// Run `kernel` with buffers[i] = storage of `buffers[i]` and
// dims[i] = value of `dim_values[i]` (model symbols).
struct KernelCall {
  Kernel kernel;
  std::vector<SymExpr> dim_values;
  std::vector<const GraphValue*> buffers;
  // A Concat's copy of one input into its slab of the output (LowerConcat):
  // which input (0 = the first), and which kernel dims hold the output's
  // extent on the concat axis and the slab's offset there. A caller-owned
  // KV cache (runtime/kv_cache.h) runs the copy of the new positions with
  // the buffer's capacity as the extent, and the copy of the past not at all.
  struct ConcatSlab {
    int input = -1;
    int extent_dim = -1;
    int offset_dim = -1;
    int64_t axis = 0;
  };
  std::optional<ConcatSlab> concat_slab;
};

// One oneDNN matmul; sizes in model symbols (batch is 1 for 2-D configs).
struct MatmulCall {
  cpu::MatmulConfig config;
  SymExpr batch = 1, m, k, n;
  const GraphValue* a = nullptr;
  const GraphValue* b = nullptr;
  const GraphValue* bias = nullptr;
  const GraphValue* residual = nullptr;
  const GraphValue* c = nullptr;
};

// output[r, :] = table[indices[r], :] — an embedding lookup. Kept native
// (not kernel IR) because the IR has no data-dependent addressing; indices
// are validated against the table at run time (bad ids are an error).
struct GatherRowsCall {
  const GraphValue* table = nullptr;    // [rows_in_table, row_elements...]
  const GraphValue* indices = nullptr;  // i64 or i32, any shape
  const GraphValue* output = nullptr;
  int64_t table_rows = 0;
  int64_t row_bytes = 0;
  SymExpr num_indices;
  std::string node_name;  // for the out-of-range error
};

// Before a kernel reads data at indices taken from `indices` (Gather on any
// axis, GatherElements, GatherND): every index must lie in [-dim, dim) of
// the axis it addresses, else the request fails naming the node and the
// index, as the interpreter and ONNX Runtime do. Element i of `indices`
// addresses axis `axes[i % axes.size()]` of size `dims[i % dims.size()]`
// (model symbols; GatherND's index tuples cycle through several axes).
// The kernel clamps too, so no index can read outside the buffer.
struct IndexCheckCall {
  const GraphValue* indices = nullptr;  // i64 or i32
  std::vector<SymExpr> dims;
  std::vector<int64_t> axes;            // for the message
  std::string node_name;
  std::string op_type;
};

// `alias` is the same bytes as `source` (a row-major Reshape and friends).
struct AliasCall {
  const GraphValue* source = nullptr;
  const GraphValue* alias = nullptr;
};

// One fused attention (passes/fusion_plan.h AttentionGroup; the CPU core is
// codegen/cpu/fused_attention.h, whose AttentionArgs this fills per
// request): sizes and strides in model symbols, strides in elements as
// {batch, head, row}; a mask stride is 0 on a broadcast dim.
struct AttentionCall {
  const GraphValue* q = nullptr;
  const GraphValue* k = nullptr;
  const GraphValue* v = nullptr;
  const GraphValue* mask = nullptr;  // or null
  const GraphValue* out = nullptr;
  SymExpr batch = 1, heads = 1, kv_heads = 1, q_len = 1, kv_len = 1;
  int64_t head_dim = 0, v_head_dim = 0;
  std::array<SymExpr, 3> q_strides, k_strides, v_strides, out_strides, mask_strides;
  // Elements from the start of q's, k's and v's buffers to their first
  // element (nonzero where an operand is read in place from a wider tensor:
  // passes/fusion_plan.h AttentionGroup::Source).
  SymExpr q_offset, k_offset, v_offset;
  bool k_seq_major = false, v_seq_major = false;  // K, V stored [b, T, h, d] (else [b, h, T, d])
  int64_t mask_col_stride = 1;
  float scale = 1.0f;
  bool causal = false;
  int64_t window = 0;
  float fill = 0.0f;
  bool nan_to_zero = false;
  std::string node_name;  // the softmax's, for messages
};

using LoweredStep = std::variant<KernelCall, MatmulCall, GatherRowsCall, IndexCheckCall, AliasCall, AttentionCall>;

}  // namespace shapeshift::codegen::lower

#endif  // SHAPESHIFT_CODEGEN_LOWER_LOWERED_STEP_H_
