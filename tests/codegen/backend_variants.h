// The CPU backend configurations a kernel test runs under: the host's vector
// width, a fixed width of 4, the host width with a scalar remainder loop, and
// width 1 (no explicit vectors). Use:
//   INSTANTIATE_TEST_SUITE_P(Widths, MyTest, BackendVariants(), BackendVariantName);
#ifndef SHAPESHIFT_TESTS_CODEGEN_BACKEND_VARIANTS_H_
#define SHAPESHIFT_TESTS_CODEGEN_BACKEND_VARIANTS_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "codegen/cpu/cpu_backend.h"
#include "gtest/gtest.h"

namespace shapeshift::codegen::cpu {

inline auto BackendVariants() {
  return ::testing::Values(CpuBackendOptions{.vector_width = 0}, CpuBackendOptions{.vector_width = 4},
                           CpuBackendOptions{.vector_width = 0, .remainder = RemainderKind::kScalarLoop},
                           CpuBackendOptions{.vector_width = 1});
}

inline std::string BackendVariantName(const ::testing::TestParamInfo<CpuBackendOptions>& info) {
  std::string width = info.param.vector_width == 0 ? std::string("HostWidth")
                                                    : absl::StrCat("Width", info.param.vector_width);
  return width + (info.param.remainder == RemainderKind::kScalarLoop ? "ScalarRemainder" : "");
}

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_TESTS_CODEGEN_BACKEND_VARIANTS_H_
