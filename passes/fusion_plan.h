// FusionPlan: the contract between passes/ and the lowering (codegen/lower).
//
// Why a plan instead of a rewritten graph: the optimized Graph stays the one
// source of truth for semantics (the interpreter can still run it, so tests
// prove the passes preserve meaning), and the plan only says how its nodes
// are *grouped* into kernels. Lowering walks the groups in order and emits
// one kernel (or one oneDNN matmul) per group; it never has to re-discover a
// pattern, and every shape fact the grouping relied on was asked of the
// ShapeEnv (so it is either proven for the whole domain or a recorded guard).
//
// Rules every plan obeys (checked by VerifyFusionPlan):
//  - Groups are in topological order; every node that computes runtime data
//    is in exactly one group. Nodes in no group are compile-time shape
//    computations (e.g. Shape→Gather feeding a Range limit): their outputs
//    are read only as *shape operands* with Value::elements() known, or only
//    measured by a compile-time Shape/Size (op_classes.h CompileTimeNodes).
//  - Shape operands (Reshape/Expand shape, ConstantOfShape input, Slice
//    starts/ends/axes/steps, Range start/limit/delta, Squeeze/Unsqueeze axes,
//    Reduce* axes) are never group inputs: lowering reads them from
//    Value::elements() (SymExprs) or from the typed fields below.
//  - A group's `inputs` are the data Values it reads that are defined outside
//    it (graph inputs, constants, other groups' outputs), deduplicated, in
//    first-use order. Its `outputs` are the Values it defines that are read
//    outside it or are graph outputs; every other value it defines is a
//    temporary that lives only inside the kernel.
//  - No work is duplicated: a value computed inside a group is never also
//    recomputed by another group. A producer is fused into its consumer only
//    when all its uses are inside that consumer's group (or it is a group
//    output as well, then it is stored once and read by the others).
//  - All data is dense, row-major; shapes are the Values' TensorTypes.
//  - A group holds at most kMaxGroupNodes nodes (below).
#ifndef SHAPESHIFT_PASSES_FUSION_PLAN_H_
#define SHAPESHIFT_PASSES_FUSION_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "graph/graph.h"
#include "shapes/sym_expr.h"

namespace shapeshift::passes {

enum class GroupKind {
  kMatmul,       // MatMul/Gemm + epilogue → one oneDNN matmul with post-ops
  kElementwise,  // a DAG of elementwise ops over one iteration domain
  kSoftmax,      // [scale] [+ mask] → Softmax or LogSoftmax (over any axis); CausalSoftmax (index-masked)
  kLayerNorm,    // [residual +] LayerNormalization or RMSNormalization over the last axis
  kReduction,    // [elementwise over the input →] Reduce* over any axes, ArgMax/ArgMin [→ elementwise on the result]
  kTranspose,    // a permutation copy
  kView,         // Reshape/Squeeze/Unsqueeze/Flatten: output aliases input
  kCopy,         // a reshape that cannot alias (see kView): row-major copy
  kGather,       // embedding lookup: Gather axis 0 of a constant table
  kConcat,       // concatenation copy (KV cache)
  kSlice,        // strided slice copy
  kScan,         // CumSum along one axis: a sequential running sum per line
  kRotary,       // RotateHalfMulAdd / RotateEveryTwoMulAdd: x*a + rotate(x)*b, one row kernel over the last axis
  kAttention,    // [head transposes →] Q·Kᵀ → softmax → [NaN→0 →] ·V [→ head transpose]: one fused attention
  kOther,        // one node with no fused lowering; lowering rejects it
};
const char* GroupKindName(GroupKind kind);

// The most nodes one group holds. Lowering turns a group into one kernel
// whose expression tree is as deep as the group's longest node chain, and
// walks it recursively (ElementEmitter, kernel IR printing, hashing and
// verification, LLVM lowering) — so this cap is what bounds that recursion
// (and LLVM's work per kernel) for a graph of any depth. A longer chain
// becomes several kernels; identical ones are compiled once (KernelCache).
// Real models fuse far fewer nodes per group (a decomposed layer norm or
// GELU is about ten).
inline constexpr int kMaxGroupNodes = 128;

// A matmul's activation: none or an absorbed Gelu node (approximate "none"
// is kErf, "tanh" is kTanh), applied as a oneDNN post-op.
enum class GeluForm { kNone, kErf, kTanh };
const char* GeluFormName(GeluForm form);

// output = activation(scale * (a · op(b)) + bias) + residual
// (the order oneDNN applies post-ops in; a scale that follows a bias Add is
// not absorbed).
struct MatmulGroup {
  Value* a = nullptr;         // [..., M, K]
  Value* b = nullptr;         // as stored: [..., K, N], or [..., N, K] if transpose_b
  bool transpose_b = false;   // b is the input of an absorbed Transpose (last two dims)
  // True when b is 2-D (weights): a's leading dims are flattened into M.
  // Otherwise a and b have the same rank and provably equal batch dims,
  // which are flattened into one batch dim.
  bool b_is_2d = false;
  float scale = 1.0f;         // from Mul/Div by a constant scalar
  Value* bias = nullptr;      // constant, N elements ([N] or [1,...,1,N]); or null
  GeluForm activation = GeluForm::kNone;
  Value* residual = nullptr;  // provably the output's shape; or null
};

struct SoftmaxGroup {
  Value* x = nullptr;      // the scores before scale and mask
  float scale = 1.0f;      // softmax(x * scale + mask)
  Value* mask = nullptr;   // additive; broadcasts (numpy rules) to x; or null
  // CausalSoftmax: softmax(x * scale + (allowed(i, j) ? mask : fill)), i and
  // j x's last two indices, allowed: j <= i + (T - S) [and j > i + (T - S) -
  // window when window > 0], S and T x's last two dims; mask is then set.
  // With `select` (a bool mask, masked_fill's form):
  // softmax((allowed(i, j) and mask) ? x * scale : fill).
  bool causal = false;
  bool select = false;
  int64_t window = 0;
  float fill = 0.0f;
  // CausalSoftmax's keep stage (keep_fill set): x * scale is first
  // replaced by keep(i, j) ? x * scale : keep_fill, keep the causal
  // predicate with keep_window (GPT-Neo's Where over its `bias` table).
  bool keep = false;
  int64_t keep_window = 0;
  float keep_fill = 0.0f;
  // An additive operand fused before the scale and mask (ALiBi): x is then
  // computed inside the group, from views of Add(scores, bias), bias
  // broadcasting to the scores; the lowering computes x through the group's
  // nodes, so bias is recorded here for the plan's readers only.
  Value* bias = nullptr;
  // LogSoftmax: (x - max) - log(sum(exp(x - max))) instead of the ratio.
  bool log = false;
  // The line normalized: x's axes [axis, axis_end), -1 for the last axis
  // alone; before opset 13 (Softmax and LogSoftmax flatten x at `axis`)
  // axis_end is x's rank. Scale, mask and bias are fused only on the last
  // axis alone.
  int64_t axis = -1;
  int64_t axis_end = -1;
};

struct LayerNormGroup {
  Value* x = nullptr;         // normalized input is x (+ residual)
  Value* residual = nullptr;  // same shape as x; or null
  Value* gamma = nullptr;     // [N]
  Value* beta = nullptr;      // [N]; or null (zero)
  float epsilon = 1e-5f;
  // When residual is set and the sum x + residual is also read outside the
  // group, it is stored here (a group output); else null.
  Value* sum_output = nullptr;
  // RMSNormalization: y = x / sqrt(mean(x^2) + epsilon) * gamma (no mean is
  // subtracted, no beta); else LayerNormalization.
  bool rms = false;
};

struct ElementwiseGroup {
  // The iteration domain: every group output has exactly this shape; every
  // input and intermediate broadcasts to it (numpy rules, right-aligned).
  // Generator ops (Range, ConstantOfShape, Expand of a constant) compute from
  // the output index and their shape operands' elements().
  std::vector<SymExpr> domain;
};

struct ReductionGroup {
  Node* reduce = nullptr;     // the Reduce*, ArgMax or ArgMin node
  int64_t reduced_axes = 0;   // trailing axes reduced (count), when `axes` is empty
  bool keepdims = true;
  // The reduced axes of the input (sorted, non-negative) when they are not
  // the trailing `reduced_axes` (ONNX's default, every axis, is trailing);
  // an ArgMax/ArgMin reduces its one axis.
  std::vector<int64_t> axes;
  // noop_with_empty_axes with no axes: the node is the identity (the
  // reference interpreter's reading, for every Reduce* op).
  bool noop = false;
  // Nodes before `reduce` are elementwise over its input's shape (a
  // prologue computed per element, e.g. the x * mask of mean pooling); nodes
  // after it are elementwise over the reduced shape (the epilogue).
};
// The reduced axes of `r` over an input of rank `rank` (sorted).
std::vector<int64_t> ReducedAxes(const ReductionGroup& r, int64_t rank);

struct TransposeGroup {
  std::vector<int64_t> perm;  // output dim i is input dim perm[i]
};

struct ConcatGroup {
  int64_t axis = 0;  // non-negative
};

struct SliceGroup {
  // Per input axis (full rank): element out[i] reads in[start + i * step].
  // Starts are already clamped/normalized; output sizes are the output type.
  std::vector<SymExpr> starts;
  std::vector<int64_t> steps;
};

// RotateHalfMulAdd or RotateEveryTwoMulAdd (rotary_embedding_recognition.h):
// out = x*a + rotate(x)*b over the first 2*half channels of x's last axis; a
// and b broadcast (numpy rules) to the output (to its first 2*half channels).
// rotate_half: out[..., j] reads x[..., j] and x[..., (j + half) mod 2*half].
// every_two (GPT-J): out[..., j] reads x[..., j] and x[..., j xor 1]. In both,
// x's channels from 2*half (rotary_dim) on pass through.
struct RotaryGroup {
  Value* x = nullptr;
  Value* a = nullptr;  // cos
  Value* b = nullptr;  // sin
  int64_t half = 0;    // half of the rotated channels (a constant)
  bool every_two = false;
};

// softmax(scale · Q·Kᵀ + mask) · V without the scores in memory
// (attention_fusion.h): the groups of an attention's two batched matmuls,
// its softmax (additive mask, or CausalSoftmax's index mask with its fill),
// torch SDPA's Where(IsNaN(p), 0, p) and the head transposes around them,
// merged. q, k, v and out are rank 4; `*_seq_major` says the tensor is
// stored [batch, S, heads, d] (the input of an absorbed Transpose perm
// [0, 2, 1, 3], or the output of one) instead of [batch, heads, S, d].
struct AttentionGroup {
  // Where a seq-major Q, K or V is read when it is a Reshape of a slice of
  // the last axis of a wider tensor (a fused QKV projection's output,
  // [b, S, W], columns [offset, offset + h·d)): in place, positions W apart,
  // with the Slice and the Reshape merged into the attention. `value` null:
  // the operand itself, dense.
  struct Source {
    Value* value = nullptr;  // [b, S, W]
    SymExpr offset;          // elements from the start of `value`
  };

  Value* q = nullptr;     // [b, h, S, d] or [b, S, h, d]
  Value* k = nullptr;     // [b, h, T, d] or [b, T, h, d] (keys as rows: the Q·Kᵀ matmul's transpose_b)
  Value* v = nullptr;     // [b, h, T, dv] or [b, T, h, dv]
  Value* mask = nullptr;  // additive, broadcasts to [b, h, S, T]; or null
  Value* out = nullptr;   // [b, h, S, dv] or [b, S, h, dv]
  bool q_seq_major = false, k_seq_major = false, v_seq_major = false, out_seq_major = false;
  Source q_source, k_source, v_source;  // seq-major operands only
  float scale = 1.0f;     // the matmul's scale times the softmax's
  bool causal = false;    // CausalSoftmax: not allowed(i, j) adds fill instead of the mask
  int64_t window = 0;
  float fill = 0.0f;
  bool nan_to_zero = false;  // the probabilities went through Where(IsNaN(p), 0, p)
};

struct Group {
  int id = 0;                  // position in FusionPlan::groups
  GroupKind kind = GroupKind::kOther;
  std::vector<Node*> nodes;    // topological order
  std::vector<Value*> inputs;  // data inputs defined outside (see top)
  std::vector<Value*> outputs; // values read outside / graph outputs
  // Kind-specific fields; only the one matching `kind` is meaningful
  // (kView/kCopy/kGather/kScan/kOther need none beyond nodes/inputs/outputs;
  // for kGather inputs are {table, indices}).
  MatmulGroup matmul;
  SoftmaxGroup softmax;
  LayerNormGroup layer_norm;
  ElementwiseGroup elementwise;
  ReductionGroup reduction;
  TransposeGroup transpose;
  ConcatGroup concat;
  SliceGroup slice;
  RotaryGroup rotary;
  AttentionGroup attention;

  // A short readable summary, e.g. `#3 matmul[transpose_b, scale=0.125] (MatMul_4, Div_5) -> v12`.
  std::string ToString() const;
};

struct FusionPlan {
  std::vector<Group> groups;
  // Per Value::id(): the group defining it, -1 for graph inputs, constants
  // and compile-time shape values.
  std::vector<int> group_of_value;

  int GroupOf(const Value* v) const;
  std::string ToString() const;
};

// Checks the rules at the top of this file against `graph`; the error names
// the first offending group, node or value.
absl::Status VerifyFusionPlan(const Graph& graph, const FusionPlan& plan);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_FUSION_PLAN_H_
