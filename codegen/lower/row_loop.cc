#include "codegen/lower/row_loop.h"

#include <algorithm>

namespace shapeshift::codegen::lower {
namespace {

// Splits `flat` into indices over `dims` (row-major); the first index needs
// no Mod because `flat` < product(dims).
std::vector<SymExpr> Delinearize(SymExpr flat, const std::vector<SymExpr>& dims) {
  std::vector<SymExpr> idx(dims.size());
  SymExpr stride = 1;
  for (int k = static_cast<int>(dims.size()) - 1; k >= 0; --k) {
    SymExpr q = stride == SymExpr(1) ? flat : FloorDiv(flat, stride);
    idx[k] = k == 0 ? q : Mod(q, dims[k]);
    stride = stride * dims[k];
  }
  return idx;
}

}  // namespace

RowLoop MakeRowLoop(Kernel* k, ElementEmitter* em, const std::vector<SymExpr>& domain, int inner_axes) {
  std::vector<SymExpr> dims = em->dims().Bind(domain);
  int rank = static_cast<int>(dims.size());
  int inner = std::min(inner_axes, rank);
  std::vector<SymExpr> outer_dims(dims.begin(), dims.end() - inner);
  std::vector<SymExpr> inner_dims(dims.end() - inner, dims.end());
  RowLoop loop;
  loop.rows = 1;
  for (SymExpr d : outer_dims) loop.rows = loop.rows * d;
  loop.n = 1;
  for (SymExpr d : inner_dims) loop.n = loop.n * d;
  SymExpr p = k->ParallelVar();
  SymExpr j = SymExpr::Symbol(kInnerVar);
  loop.outer = Delinearize(p, outer_dims);
  loop.idx = loop.outer;
  for (SymExpr e : Delinearize(j, inner_dims)) loop.idx.push_back(e);
  loop.linear = p * loop.n + j;
  k->parallel_extent = loop.rows;
  em->SetDomain(domain, loop.idx, loop.linear);
  return loop;
}

}  // namespace shapeshift::codegen::lower
