#include "tools/run_cache_dir.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/persist/artifact_cache.h"

namespace shapeshift::tools {

namespace {

// A `--DIR_FLAG PATH` / `--OFF_FLAG` pair: "" for the switch, the path when
// given (never empty), nullopt for neither (the caller's default).
absl::StatusOr<std::optional<std::string>> ChosenDir(const ParsedArgs& args, const char* dir_flag,
                                                     const char* off_flag, const char* empty_hint) {
  if (args.Has(off_flag)) {
    if (args.Has(dir_flag)) {
      return absl::InvalidArgumentError(absl::StrCat("--", dir_flag, " and --", off_flag, " are exclusive"));
    }
    return std::optional<std::string>(std::string());
  }
  if (!args.Has(dir_flag)) return std::optional<std::string>();
  std::string dir = args.Get(dir_flag);
  if (dir.empty()) return absl::InvalidArgumentError(absl::StrCat("--", dir_flag, ": empty path (", empty_hint, ")"));
  return std::optional<std::string>(std::move(dir));
}

}  // namespace

absl::StatusOr<std::string> CacheDirFromFlags(const ParsedArgs& args) {
  absl::StatusOr<std::optional<std::string>> chosen =
      ChosenDir(args, kCacheDirFlag, kNoCacheFlag, "use --no-cache to turn the cache off");
  if (!chosen.ok()) return chosen.status();
  if (chosen->has_value()) return **chosen;
  absl::StatusOr<std::string> dir = runtime::persist::DefaultCacheDir();
  if (!dir.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("no default cache directory (", dir.status().message(),
                                                      "): pass --cache-dir DIR or --no-cache"));
  }
  return *dir;
}

absl::StatusOr<std::string> WeightsDirFromFlags(const ParsedArgs& args, const std::string& cache_dir) {
  absl::StatusOr<std::optional<std::string>> chosen =
      ChosenDir(args, kWeightsDirFlag, kWeightsInMemoryFlag, "use --weights-in-memory");
  if (!chosen.ok()) return chosen.status();
  if (chosen->has_value()) return **chosen;
  return runtime::persist::DefaultWeightsDir(cache_dir);
}

}  // namespace shapeshift::tools
