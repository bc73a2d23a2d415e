// MatMul (numpy matmul: 1-D operands promoted then squeezed, batch dims
// broadcast) and Gemm (alpha * op(A) * op(B) + beta * C, C broadcast to
// [M, N]). A plain m-k-n loop that streams rows of B, with a double
// accumulator row for floats: clear, exact enough to be the oracle, and fast
// enough for BERT-sized test graphs.
#include <algorithm>
#include <cmath>
#include <limits>

#include "graph/reference/kernel_util.h"

namespace shapeshift::reference {
namespace {

// c[M, N] = a[M, K] * b[K, N] with arbitrary row/column strides for a and b
// (so transposed operands need no copy).
template <typename T>
void MatMulKernel(const T* a, int64_t a_row, int64_t a_col, const T* b, int64_t b_row,
                  int64_t b_col, T* c, int64_t m_size, int64_t k_size, int64_t n_size,
                  double alpha) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  std::vector<Acc> row(n_size);
  for (int64_t m = 0; m < m_size; ++m) {
    std::fill(row.begin(), row.end(), Acc{0});
    for (int64_t k = 0; k < k_size; ++k) {
      const Acc a_mk = static_cast<Acc>(a[m * a_row + k * a_col]);
      const T* b_k = b + k * b_row;
      if (b_col == 1) {  // the common layout; a contiguous loop vectorizes
        for (int64_t n = 0; n < n_size; ++n) row[n] += a_mk * static_cast<Acc>(b_k[n]);
      } else {
        for (int64_t n = 0; n < n_size; ++n) row[n] += a_mk * static_cast<Acc>(b_k[n * b_col]);
      }
    }
    for (int64_t n = 0; n < n_size; ++n) {
      double dot = static_cast<double>(row[n]);
      if constexpr (std::is_floating_point_v<T>) {
        // A dot product beyond T's range is +-inf before alpha scales it, as
        // in every f32 GEMM (ONNX Runtime's and oneDNN's): Gemm(alpha=0.5)
        // of two FLT_MAX terms is inf, not FLT_MAX.
        if (std::abs(dot) > static_cast<double>(std::numeric_limits<T>::max())) {
          dot = std::copysign(std::numeric_limits<double>::infinity(), dot);
        }
      }
      c[m * n_size + n] = static_cast<T>(alpha == 1.0 ? dot : alpha * dot);
    }
  }
}

KernelResult MatMul(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> a = RequiredInput(args, 0);
  if (!a.ok()) return a.status();
  absl::StatusOr<const Tensor*> b = RequiredInput(args, 1);
  if (!b.ok()) return b.status();
  absl::Status same = RequireSameDType(args, {*a, *b});
  if (!same.ok()) return same;
  if ((*a)->rank() == 0 || (*b)->rank() == 0) return Invalid("MatMul operands must not be scalars");

  std::vector<int64_t> a_shape = (*a)->shape();
  std::vector<int64_t> b_shape = (*b)->shape();
  const bool a_vector = a_shape.size() == 1;
  const bool b_vector = b_shape.size() == 1;
  if (a_vector) a_shape.insert(a_shape.begin(), 1);
  if (b_vector) b_shape.push_back(1);
  const int64_t m_size = a_shape[a_shape.size() - 2];
  const int64_t k_size = a_shape.back();
  const int64_t n_size = b_shape.back();
  if (b_shape[b_shape.size() - 2] != k_size) {
    return Invalid("MatMul inner dimensions differ: ", ShapeToString((*a)->shape()), " x ",
                   ShapeToString((*b)->shape()));
  }
  const std::vector<int64_t> a_batch(a_shape.begin(), a_shape.end() - 2);
  const std::vector<int64_t> b_batch(b_shape.begin(), b_shape.end() - 2);
  absl::StatusOr<std::vector<int64_t>> batch = BroadcastShapes({a_batch, b_batch});
  if (!batch.ok()) return batch.status();

  std::vector<int64_t> out_shape = *batch;
  if (!a_vector) out_shape.push_back(m_size);
  if (!b_vector) out_shape.push_back(n_size);
  absl::StatusOr<Tensor> out = NewOutput((*a)->dtype(), out_shape);
  if (!out.ok()) return out.status();

  const int64_t batches = Product(*batch);
  absl::Status st = VisitNumeric(args, (*a)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = (*a)->data<T>();
    const T* pb = (*b)->data<T>();
    T* pc = out->mutable_data<T>();
    IndexWalker walk = IndexWalker::Broadcast(*batch, {a_batch, b_batch});
    for (int64_t i = 0; i < batches; ++i, walk.Next()) {
      MatMulKernel<T>(pa + walk.offset(0) * m_size * k_size, k_size, 1,
                      pb + walk.offset(1) * k_size * n_size, n_size, 1,
                      pc + i * m_size * n_size, m_size, k_size, n_size, 1.0);
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

KernelResult Gemm(const KernelArgs& args) {
  absl::StatusOr<const Tensor*> a = RequiredInput(args, 0);
  if (!a.ok()) return a.status();
  absl::StatusOr<const Tensor*> b = RequiredInput(args, 1);
  if (!b.ok()) return b.status();
  const Tensor* c = OptionalInput(args, 2);
  absl::StatusOr<float> alpha = args.attrs->GetFloat("alpha", 1.f);
  absl::StatusOr<float> beta = args.attrs->GetFloat("beta", 1.f);
  absl::StatusOr<int64_t> trans_a = args.attrs->GetInt("transA", 0);
  absl::StatusOr<int64_t> trans_b = args.attrs->GetInt("transB", 0);
  for (const auto* s : {&alpha, &beta}) {
    if (!s->ok()) return s->status();
  }
  for (const auto* s : {&trans_a, &trans_b}) {
    if (!s->ok()) return s->status();
  }
  std::vector<const Tensor*> operands = {*a, *b};
  if (c != nullptr) operands.push_back(c);
  absl::Status same = RequireSameDType(args, operands);
  if (!same.ok()) return same;
  if ((*a)->rank() != 2 || (*b)->rank() != 2) {
    return Invalid("Gemm needs 2-D A and B, got ", ShapeToString((*a)->shape()), " and ",
                   ShapeToString((*b)->shape()));
  }
  const int64_t m_size = (*a)->shape()[*trans_a ? 1 : 0];
  const int64_t k_size = (*a)->shape()[*trans_a ? 0 : 1];
  const int64_t n_size = (*b)->shape()[*trans_b ? 0 : 1];
  if ((*b)->shape()[*trans_b ? 1 : 0] != k_size) {
    return Invalid("Gemm inner dimensions differ: A ", ShapeToString((*a)->shape()), " (transA=",
                   *trans_a, "), B ", ShapeToString((*b)->shape()), " (transB=", *trans_b, ")");
  }
  const std::vector<int64_t> out_shape = {m_size, n_size};
  if (c != nullptr) {
    absl::StatusOr<std::vector<int64_t>> bc = BroadcastShapes({c->shape(), out_shape});
    if (!bc.ok() || *bc != out_shape) {
      return Invalid("Gemm C ", ShapeToString(c->shape()), " does not broadcast to ",
                     ShapeToString(out_shape));
    }
  }
  absl::StatusOr<Tensor> out = NewOutput((*a)->dtype(), out_shape);
  if (!out.ok()) return out.status();
  absl::Status st = VisitNumeric(args, (*a)->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t a_cols = (*a)->shape()[1];
    const int64_t b_cols = (*b)->shape()[1];
    T* y = out->mutable_data<T>();
    MatMulKernel<T>((*a)->data<T>(), *trans_a ? 1 : a_cols, *trans_a ? a_cols : 1,
                    (*b)->data<T>(), *trans_b ? 1 : b_cols, *trans_b ? b_cols : 1, y, m_size,
                    k_size, n_size, *alpha);
    if (c != nullptr) {
      const T* pc = c->data<T>();
      IndexWalker walk = IndexWalker::Broadcast(out_shape, {c->shape()});
      for (int64_t i = 0; i < m_size * n_size; ++i, walk.Next()) {
        y[i] = static_cast<T>(y[i] + static_cast<double>(*beta) * pc[walk.offset(0)]);
      }
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return std::vector<Tensor>{*std::move(out)};
}

}  // namespace

void RegisterMatMulKernels(KernelRegistry& registry) {
  registry.Add("MatMul", MatMul, HalfPrecision::kViaF32);
  registry.Add("Gemm", Gemm, HalfPrecision::kViaF32);
}

}  // namespace shapeshift::reference
