// TensorType: the static type of an IR value — an element type and a shape
// whose dimensions are symbolic integer expressions (`f32[batch, seq, 768]`).
//
// Dimensions are SymExprs rather than ints so one graph describes every input
// shape in the declared domain: a dimension is a constant (768), a symbol
// (`seq`) or an expression of symbols (`seq // 2`, `batch*seq`). Whether two
// dimensions are equal is a question for the ShapeEnv, never a guess.
#ifndef SHAPESHIFT_GRAPH_TENSOR_TYPE_H_
#define SHAPESHIFT_GRAPH_TENSOR_TYPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/dtype.h"
#include "shapes/sym_expr.h"

namespace shapeshift {

struct TensorType {
  DType dtype = DType::kF32;
  std::vector<SymExpr> shape;

  TensorType() = default;
  TensorType(DType dtype, std::vector<SymExpr> shape) : dtype(dtype), shape(std::move(shape)) {}

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  // Product of the dimensions (1 for a scalar).
  SymExpr NumElements() const;
  // True when every dimension is a constant.
  bool IsStatic() const;
  // The concrete shape under `values`; an error names an unbound symbol.
  absl::StatusOr<std::vector<int64_t>> Evaluate(const Assignment& values) const;
  // `f32[batch, seq, 768]`; a scalar prints as `f32[]`.
  std::string ToString() const;

  friend bool operator==(const TensorType& a, const TensorType& b) {
    return a.dtype == b.dtype && a.shape == b.shape;
  }
  friend bool operator!=(const TensorType& a, const TensorType& b) { return !(a == b); }
};

// `[batch, seq, 768]`.
std::string ShapeToString(const std::vector<SymExpr>& shape);

}  // namespace shapeshift

#endif  // SHAPESHIFT_GRAPH_TENSOR_TYPE_H_
