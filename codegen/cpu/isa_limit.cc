#include "codegen/cpu/isa_limit.h"

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace shapeshift::codegen::cpu {

absl::StatusOr<IsaLimit> ProcessIsaLimit() {
  static const absl::StatusOr<IsaLimit>* limit = [] {
    const char* raw = std::getenv(kIsaLimitVariable);
    const std::string value = raw == nullptr ? "" : raw;
    if (value.empty() || value == "host") return new absl::StatusOr<IsaLimit>(IsaLimit::kHost);
    if (value == "avx2") return new absl::StatusOr<IsaLimit>(IsaLimit::kAvx2);
    return new absl::StatusOr<IsaLimit>(absl::InvalidArgumentError(
        absl::StrCat(kIsaLimitVariable, "='", value, "': expected avx2 or host (or unset)")));
  }();
  return *limit;
}

bool Avx512Allowed() {
  absl::StatusOr<IsaLimit> limit = ProcessIsaLimit();
  return limit.ok() && *limit == IsaLimit::kHost;
}

bool Avx512FmaUsable() {
  return Avx512Allowed() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
}

bool Avx2FmaUsable() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

bool FeatureAllowed(std::string_view feature) {
  if (Avx512Allowed()) return true;
  // AVX-512 and what only AVX-512 machines have (AMX tiles use its state).
  return feature.rfind("avx512", 0) != 0 && feature.rfind("amx", 0) != 0;
}

}  // namespace shapeshift::codegen::cpu
