// Causal-mask recognition: folds a decoder's index-computed attention mask
// into the softmax, so no [seq, past + seq] mask tensor is built or read.
//
//   kv = Range(a, a + T)  viewed as [.., 1, T]     (key positions)
//   q  = Range(b, b + S) (+ c)  viewed as [.., S, 1]  (query positions)
//   allowed = LessOrEqual(kv, q) [∧ Greater(kv, q - W)] [∧ padding ∧ true]
//   y = Softmax(x + Where(allowed, 0, fill))       (x: [.., S, T] scores)
// →
//   y = CausalSoftmax(x, Where(padding, 0, fill)) {window = W, fill}
//
// and masked_fill's form (MPT: the scores replaced where the mask is off,
// `not allowed` spelled Cast-to-bool of Where(allowed, 0, min))
//
//   y = Softmax(Where(allowed, x, fill))  or  Softmax(Where(not allowed, fill, x))
// →
//   y = CausalSoftmax(x, And(padding...) or true) {window = W, fill}
//
// A bound may also be a slice of a constant bool table (GPT-Neo's `bias`
// buffer, bias[:, :, T-S:T, :T]): the table must be constant along every
// diagonal and true on one run of them (tril: c - r <= 0; GPT-Neo's local
// layers' bias ^ tril(bias, -W): -W < c - r <= 0), which the pass checks
// element by element over the whole table; the slices' starts (proven within
// their axes) give the rows and columns read, and the bound they imply must
// be T - S like any other. And the scores may themselves be
//
//   x = Where(keep, scores, keep_fill)   (keep: such a causal bound alone)
// →
//   CausalSoftmax(scores, ...) {..., keep_window, keep_fill}
//
// (GPT-Neo's Where(bias slice, scores, min) before its additive mask): the
// keep stage selects each score or keep_fill by the index predicate before
// the mask is added, so the Where's [batch, heads, S, T] output and the
// [S, T] slice go too.
//
// CausalSoftmax (graph/op_table.h; shapeshift's op, not ONNX's) adds
// `allowed(i, j) ? M : fill` to x and takes the softmax over the last axis,
// where allowed(i, j) is j <= i + (T - S) [and j > i + (T - S) - W]. Every
// export of GPT-2, Llama, Qwen2, OPT and GPT-Neo by either torch exporter
// spells the causal part this way (transformers' `kv_idx <= q_idx` with the
// query positions shifted by the past length); the padding part (the
// `attention_mask` input, [batch, 1, 1, T]) stays a tensor operand.
//
// With a bool M it selects instead: (allowed ∧ M) ? x : fill.
//
// Exact: Where(c ∧ p, 0, fill) = c ? Where(p, 0, fill) : fill element for
// element, so the new op adds the same f32 value to each score the graph's
// Add did; Where(c ∧ p, x, fill) = c ? Where(p, x, fill) : fill selects
// the same values, NaN and infinite scores included; the keep stage is the
// Where it replaces. Each comparison's form is matched structurally (a Range of step
// 1 seen through views, shifted by known scalars); the conditions the match
// needs (the comparison's bound is T - S, the ranges span S and T) are
// ShapeEnv questions with provenance, so a wrong offset or a non-causal
// comparison is never rewritten. Only the Add and Softmax are removed; the
// mask, shared by every layer, dies in `dce` once no layer reads it.
#ifndef SHAPESHIFT_PASSES_CAUSAL_MASK_RECOGNITION_H_
#define SHAPESHIFT_PASSES_CAUSAL_MASK_RECOGNITION_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// True when some softmax was rewritten.
absl::StatusOr<bool> RecognizeCausalMask(Graph& graph, ShapeEnv& env);

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_CAUSAL_MASK_RECOGNITION_H_
