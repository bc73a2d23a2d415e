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

}  // namespace shapeshift::tools
