#include "runtime/dim_ranges.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shapeshift::runtime {

absl::Status UnknownDimError(const std::string& name, const ShapeEnv& env) {
  std::vector<std::string> known;
  for (const SymbolInfo& s : env.symbols()) known.push_back(s.name);
  return absl::InvalidArgumentError(absl::StrCat("--dim ", name, ": the model has no dim named '", name,
                                                 "'; its dims are: ", absl::StrJoin(known, ", ")));
}

absl::StatusOr<std::unique_ptr<ShapeEnv>> RedeclareWithRanges(
    const ShapeEnv& env, const std::map<std::string, DimRange>& dims) {
  for (const auto& [name, range] : dims) {
    if (!env.HasSymbol(name)) return UnknownDimError(name, env);
  }
  auto out = std::make_unique<ShapeEnv>();
  for (SymbolInfo info : env.symbols()) {
    if (auto it = dims.find(info.name); it != dims.end()) {
      info.min = it->second.min;
      info.max = it->second.max;
      if (info.hint && (*info.hint < info.min || *info.hint > info.max)) info.hint.reset();
    }
    absl::StatusOr<SymExpr> declared = out->DeclareSymbol(info);
    if (!declared.ok()) return declared.status();
  }
  // The model's relations between dims hold whatever ranges are declared.
  if (absl::Status s = out->CopyDomainConstraintsFrom(env); !s.ok()) return s;
  return out;
}

}  // namespace shapeshift::runtime
