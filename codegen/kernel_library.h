// Kernel IR for the fused memory-bound patterns of transformer models.
//
// These are the shapes that passes/ fusion groups lower to (softmax with an
// additive mask, layer norm, bias + GELU, bias + residual, the head
// transpose). They are written here once so the lowering, the tests and the
// benchmarks all exercise the same IR, and so each shows how the IR
// expresses a "row" pattern: accumulators reduced by an inner loop, then an
// elementwise loop over the same row.
//
// Each kernel works on row-major f32 data with symbolic sizes; the dims
// array order is the order of Kernel::dims, documented per function.
#ifndef SHAPESHIFT_CODEGEN_KERNEL_LIBRARY_H_
#define SHAPESHIFT_CODEGEN_KERNEL_LIBRARY_H_

#include "codegen/kernel_ir.h"

namespace shapeshift::codegen {

// y[r, :] = softmax(x[r, :] * scale + mask[r / group, :]) over rows x n.
// Buffers (x, mask, y); dims (rows, n, group). group > 0 rows share a mask
// row (e.g. heads*seq rows per batch element).
Kernel SoftmaxKernel(float scale);

// y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * gamma + beta, with the
// reference's range semantics (the mean never overflows; x - mean and the
// sum of squares overflow as f32 does: variance +inf gives y = beta).
// Buffers (x, gamma, beta, y); dims (rows, n).
Kernel LayerNormKernel(float epsilon);

enum class GeluForm { kErf, kTanh };
// gelu(x): 0.5 x (1 + erf(x / sqrt 2)), or its tanh approximation
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))). `x` should be a Var (it
// is used several times).
Value Gelu(Value x, GeluForm form);

// y[r, j] = gelu(x[r, j] + bias[j]). Buffers (x, bias, y); dims (rows, n).
Kernel BiasGeluKernel(GeluForm form);

// y[r, j] = x[r, j] + bias[j] + residual[r, j].
// Buffers (x, bias, residual, y); dims (rows, n).
Kernel BiasResidualKernel();

// y[a, c, b, d] = x[a, b, c, d] (the attention head split/merge permute).
// Buffers (x, y); dims (a, b, c, d).
Kernel Transpose0213Kernel();

}  // namespace shapeshift::codegen

#endif  // SHAPESHIFT_CODEGEN_KERNEL_LIBRARY_H_
