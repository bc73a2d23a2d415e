#include "graph/tensor_type.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shapeshift {

SymExpr TensorType::NumElements() const {
  SymExpr n = 1;
  for (SymExpr d : shape) n *= d;
  return n;
}

bool TensorType::IsStatic() const {
  for (SymExpr d : shape) {
    if (!d.IsConst()) return false;
  }
  return true;
}

absl::StatusOr<std::vector<int64_t>> TensorType::Evaluate(const Assignment& values) const {
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (SymExpr d : shape) {
    absl::StatusOr<int64_t> v = d.Evaluate(values);
    if (!v.ok()) return v.status();
    out.push_back(*v);
  }
  return out;
}

std::string ShapeToString(const std::vector<SymExpr>& shape) {
  return absl::StrCat(
      "[", absl::StrJoin(shape, ", ", [](std::string* out, SymExpr d) { out->append(d.ToString()); }),
      "]");
}

std::string TensorType::ToString() const {
  return absl::StrCat(DTypeName(dtype), ShapeToString(shape));
}

}  // namespace shapeshift
