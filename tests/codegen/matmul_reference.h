// The OnednnMatmul contract computed naively in double, for the matmul tests
// (onednn_matmul_test.cc, small_rows_matmul_test.cc).
#ifndef SHAPESHIFT_TESTS_CODEGEN_MATMUL_REFERENCE_H_
#define SHAPESHIFT_TESTS_CODEGEN_MATMUL_REFERENCE_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "codegen/cpu/onednn_matmul.h"

namespace shapeshift::codegen::testing {

using cpu::MatmulActivation;
using cpu::MatmulConfig;
using cpu::MatmulShape;

inline double Gelu(double v, MatmulActivation act) {
  if (act == MatmulActivation::kGeluErf) return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
}

// The documented contract, in double: C = act(scale * (A·op(B)) + bias) + R
// (the bias is not scaled: passes/fusion_plan.h).
inline std::vector<double> MatmulReference(const MatmulConfig& cfg, const MatmulShape& s,
                                           const std::vector<float>& a,
                                           const std::vector<float>& b, const std::vector<float>& bias,
                                           const std::vector<float>& residual) {
  int64_t batch = cfg.batch == 0 ? 1 : s.batch;
  std::vector<double> c(batch * s.m * s.n);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < s.k; ++q) {
          double bv = cfg.transpose_b ? b[(p * s.n + j) * s.k + q] : b[(p * s.k + q) * s.n + j];
          acc += double(a[(p * s.m + i) * s.k + q]) * bv;
        }
        double v = cfg.scale * acc + (cfg.bias ? bias[j] : 0.0);
        if (cfg.activation != MatmulActivation::kNone) v = Gelu(v, cfg.activation);
        int64_t at = (p * s.m + i) * s.n + j;
        c[at] = v + (cfg.residual ? residual[at] : 0.0);
      }
  return c;
}

}  // namespace shapeshift::codegen::testing

#endif  // SHAPESHIFT_TESTS_CODEGEN_MATMUL_REFERENCE_H_
