// RowLoop: how a kernel walks its iteration domain — the parallel loop over
// "rows" (the leading dims, flattened) and one inner loop over the trailing
// dims, with the multi-index of each element expressed from the two loop
// variables.
//
// Why rows: every fused pattern of a transformer is row-shaped (softmax and
// layer norm reduce a row; elementwise ops stream along it), and the CPU
// backend vectorizes the innermost loop, so the trailing, contiguous dims go
// in the inner loop and the OpenMP threads split the rows.
#ifndef SHAPESHIFT_CODEGEN_LOWER_ROW_LOOP_H_
#define SHAPESHIFT_CODEGEN_LOWER_ROW_LOOP_H_

#include <vector>

#include "codegen/kernel_ir.h"
#include "codegen/lower/element_emitter.h"

namespace shapeshift::codegen::lower {

inline constexpr char kInnerVar[] = "j";

struct RowLoop {
  SymExpr rows;                // parallel extent (kernel space)
  SymExpr n;                   // inner loop extent (kernel space)
  std::vector<SymExpr> outer;  // multi-index of the leading dims, from p
  std::vector<SymExpr> idx;    // full multi-index over the domain, from p and j
  SymExpr linear;              // p * n + j: the row-major position in the domain
};

// `inner_axes` trailing dims of `domain` (model space) form the inner loop;
// a scalar domain is one row of one element. Sets k->parallel_extent.
RowLoop MakeRowLoop(Kernel* k, ElementEmitter* em, const std::vector<SymExpr>& domain, int inner_axes);

// A line that may cross rows (a softmax over axis 1, a reduction over axes
// {0, 2}): the parallel loop over the elements of `domain` outside
// `line_axes` (sorted, distinct; row-major) and the inner loop over the
// elements inside them (row-major), each read at its axes' strides. `outer`
// is the multi-index of the other axes, in order. Trailing `line_axes` are
// MakeRowLoop's contiguous row (the same kernel).
RowLoop MakeLineLoop(Kernel* k, ElementEmitter* em, const std::vector<SymExpr>& domain,
                     const std::vector<int64_t>& line_axes);

// Splits `flat` into indices over `dims` (row-major, kernel space); the
// first index needs no Mod because `flat` < product(dims).
std::vector<SymExpr> Delinearize(SymExpr flat, const std::vector<SymExpr>& dims);

}  // namespace shapeshift::codegen::lower

#endif  // SHAPESHIFT_CODEGEN_LOWER_ROW_LOOP_H_
