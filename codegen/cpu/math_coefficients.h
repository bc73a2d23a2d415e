// The constants of shapeshift's f32 exp and erf approximations, in one place.
//
// Two implementations evaluate them: the LLVM IR emitters (vector_math.h,
// for JIT-compiled kernels) and the C++ GELU epilogue of the skinny GEMM
// (skinny_kernel_impl.h). Both read these arrays, so the two cannot drift
// apart; vector_math.h documents the methods and their accuracy.
#ifndef SHAPESHIFT_CODEGEN_CPU_MATH_COEFFICIENTS_H_
#define SHAPESHIFT_CODEGEN_CPU_MATH_COEFFICIENTS_H_

#include <array>

namespace shapeshift::codegen::cpu::math {

// exp: x = n ln2 + r with ln2 split in two (kLn2High has few mantissa bits,
// so n * kLn2High is exact), then Taylor to r^7 on |r| <= ln2/2.
inline constexpr double kLn2High = 0.693359375;
inline constexpr double kLn2Low = -2.12194440e-4;
inline constexpr std::array<double, 8> kExpTaylor = {1.0,       1.0,        1.0 / 2,   1.0 / 6,
                                                     1.0 / 24,  1.0 / 120,  1.0 / 720, 1.0 / 5040};

// erf for |x| >= 0.5: Abramowitz & Stegun 7.1.26,
//   erf(x) = 1 - t * P(t) * exp(-x^2), t = 1 / (1 + kErfP * x), x >= 0,
// with P's coefficients lowest first; absolute error <= 1.5e-7.
inline constexpr double kErfP = 0.3275911;
inline constexpr std::array<double, 5> kErfPoly = {0.254829592, -0.284496736, 1.421413741, -1.453152027,
                                                   1.061405429};

// erf for |x| < 0.5: 2/sqrt(pi) * x * S(x^2), S = sum (-1)^k y^k / (k! (2k+1)).
inline constexpr std::array<double, 7> kErfTaylor = {1.0, -1.0 / 3, 1.0 / 10, -1.0 / 42, 1.0 / 216, -1.0 / 1320,
                                                     1.0 / 9360};

}  // namespace shapeshift::codegen::cpu::math

#endif  // SHAPESHIFT_CODEGEN_CPU_MATH_COEFFICIENTS_H_
