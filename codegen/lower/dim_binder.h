// DimBinder: renames a kernel's model symbols (batch, seq, ...) to the
// kernel's own dims d0, d1, ... in order of first use, and remembers which
// model expression feeds each dim.
//
// Why: structurally identical kernels must be byte-for-byte identical IR to
// be compiled once (KernelCache), even when two models, or two call sites,
// name their symbols differently. Constant dims stay constants in the
// kernel, so static sizes (hidden = 768) are compiled in.
#ifndef SHAPESHIFT_CODEGEN_LOWER_DIM_BINDER_H_
#define SHAPESHIFT_CODEGEN_LOWER_DIM_BINDER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "codegen/kernel_ir.h"
#include "shapes/sym_expr.h"

namespace shapeshift::codegen::lower {

class DimBinder {
 public:
  explicit DimBinder(Kernel* kernel) : kernel_(kernel) {}

  // `model_expr` with every model symbol replaced by a kernel dim.
  SymExpr Bind(SymExpr model_expr);
  std::vector<SymExpr> Bind(const std::vector<SymExpr>& model_exprs);
  // A kernel dim holding `model_expr`'s value, even when it is a constant or
  // a compound expression: call sites that differ only in such a value (the
  // slab offsets of a concat) then share one kernel.
  SymExpr BindOpaque(SymExpr model_expr);

  // One model expression per Kernel::dims entry (the call site's recipe).
  const std::vector<SymExpr>& dim_values() const { return dim_values_; }

 private:
  Kernel* kernel_;
  absl::flat_hash_map<std::string, SymExpr> renaming_;
  std::vector<SymExpr> dim_values_;
};

}  // namespace shapeshift::codegen::lower

#endif  // SHAPESHIFT_CODEGEN_LOWER_DIM_BINDER_H_
