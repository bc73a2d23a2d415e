#include "tools/run_cache_dir.h"

#include "absl/strings/str_cat.h"
#include "runtime/persist/artifact_cache.h"

namespace shapeshift::tools {

absl::StatusOr<std::string> CacheDirFromFlags(const ParsedArgs& args) {
  if (args.Has(kNoCacheFlag)) {
    if (args.Has(kCacheDirFlag)) return absl::InvalidArgumentError("--cache-dir and --no-cache are exclusive");
    return std::string();
  }
  if (args.Has(kCacheDirFlag)) {
    std::string dir = args.Get(kCacheDirFlag);
    if (dir.empty()) return absl::InvalidArgumentError("--cache-dir: empty path (use --no-cache to turn the cache off)");
    return dir;
  }
  absl::StatusOr<std::string> dir = runtime::persist::DefaultCacheDir();
  if (!dir.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("no default cache directory (", dir.status().message(),
                                                      "): pass --cache-dir DIR or --no-cache"));
  }
  return *dir;
}

absl::StatusOr<std::string> WeightsDirFromFlags(const ParsedArgs& args, const std::string& cache_dir) {
  if (args.Has(kWeightsInMemoryFlag)) {
    if (args.Has(kWeightsDirFlag)) return absl::InvalidArgumentError("--weights-dir and --weights-in-memory are exclusive");
    return std::string();
  }
  if (args.Has(kWeightsDirFlag)) {
    std::string dir = args.Get(kWeightsDirFlag);
    if (dir.empty()) return absl::InvalidArgumentError("--weights-dir: empty path (use --weights-in-memory)");
    return dir;
  }
  if (!cache_dir.empty()) return absl::StrCat(cache_dir, "/weights");
  absl::StatusOr<std::string> dir = runtime::persist::DefaultCacheDir();
  return dir.ok() ? absl::StrCat(*dir, "/weights") : std::string();
}

}  // namespace shapeshift::tools
