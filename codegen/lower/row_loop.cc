#include "codegen/lower/row_loop.h"

#include <algorithm>

namespace shapeshift::codegen::lower {

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

RowLoop MakeLineLoop(Kernel* k, ElementEmitter* em, const std::vector<SymExpr>& domain,
                     const std::vector<int64_t>& line_axes) {
  const int64_t rank = static_cast<int64_t>(domain.size());
  const int64_t count = static_cast<int64_t>(line_axes.size());
  bool trailing = true;
  for (int64_t i = 0; i < count; ++i) trailing = trailing && line_axes[i] == rank - count + i;
  if (trailing) return MakeRowLoop(k, em, domain, static_cast<int>(count));
  std::vector<SymExpr> dims = em->dims().Bind(domain);
  std::vector<bool> in_line(rank, false);
  for (int64_t a : line_axes) in_line[a] = true;
  std::vector<SymExpr> outer_dims, inner_dims;
  for (int64_t d = 0; d < rank; ++d) (in_line[d] ? inner_dims : outer_dims).push_back(dims[d]);
  RowLoop loop;
  loop.rows = 1;
  for (SymExpr d : outer_dims) loop.rows = loop.rows * d;
  loop.n = 1;
  for (SymExpr d : inner_dims) loop.n = loop.n * d;
  loop.outer = Delinearize(k->ParallelVar(), outer_dims);
  std::vector<SymExpr> inner = Delinearize(SymExpr::Symbol(kInnerVar), inner_dims);
  size_t next_outer = 0, next_inner = 0;
  loop.linear = 0;
  for (int64_t d = 0; d < rank; ++d) {
    loop.idx.push_back(in_line[d] ? inner[next_inner++] : loop.outer[next_outer++]);
    loop.linear = loop.linear * dims[d] + loop.idx.back();
  }
  k->parallel_extent = loop.rows;
  em->SetDomain(domain, loop.idx, loop.linear);
  return loop;
}

}  // namespace shapeshift::codegen::lower
