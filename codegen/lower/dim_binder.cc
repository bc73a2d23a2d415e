#include "codegen/lower/dim_binder.h"

#include "absl/strings/str_cat.h"

namespace shapeshift::codegen::lower {

SymExpr DimBinder::Bind(SymExpr model_expr) {
  if (model_expr.IsConst()) return model_expr;
  for (const std::string& name : model_expr.Symbols()) {
    if (renaming_.contains(name)) continue;
    SymExpr dim = kernel_->AddDim(absl::StrCat("d", kernel_->dims.size()));
    renaming_[name] = dim;
    dim_values_.push_back(SymExpr::Symbol(name));
  }
  return model_expr.Substitute(renaming_);
}

SymExpr DimBinder::BindOpaque(SymExpr model_expr) {
  SymExpr dim = kernel_->AddDim(absl::StrCat("d", kernel_->dims.size()));
  dim_values_.push_back(model_expr);
  return dim;
}

std::vector<SymExpr> DimBinder::Bind(const std::vector<SymExpr>& model_exprs) {
  std::vector<SymExpr> out;
  out.reserve(model_exprs.size());
  for (SymExpr e : model_exprs) out.push_back(Bind(e));
  return out;
}

}  // namespace shapeshift::codegen::lower
