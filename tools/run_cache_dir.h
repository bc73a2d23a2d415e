// `--cache-dir DIR` / `--no-cache`: where `run` and `prove` keep compiled
// artifacts between processes (runtime/persist, through
// SessionOptions::cache_dir).
//
// Why on by default: the second process serving the same model should pay
// no compile at all (issue 5: "a second process with the same --cache-dir:
// 0 compiles"). The default is persist::DefaultCacheDir()
// ($XDG_CACHE_HOME/shapeshift, else $HOME/.cache/shapeshift); when neither
// variable is usable the commands say so and ask for an explicit choice
// rather than silently running without a cache. `--no-cache` turns it off
// (tests asserting compile counts use it, and so should benchmarks that
// measure compile time).
#ifndef SHAPESHIFT_TOOLS_RUN_CACHE_DIR_H_
#define SHAPESHIFT_TOOLS_RUN_CACHE_DIR_H_

#include <string>

#include "absl/status/statusor.h"
#include "tools/args.h"

namespace shapeshift::tools {

// The flag names, for FlagSpec: valued "cache-dir", switch "no-cache".
constexpr char kCacheDirFlag[] = "cache-dir";
constexpr char kNoCacheFlag[] = "no-cache";

// The cache directory the flags select; empty = no persistent cache. Errors:
// both flags given, an empty --cache-dir, or no default location.
absl::StatusOr<std::string> CacheDirFromFlags(const ParsedArgs& args);

// `--weights-dir DIR` / `--weights-in-memory`: where `run` keeps the model's
// weights (SessionOptions::weights_dir, graph/constant_spill.h). Default:
// persist::DefaultWeightsDir(cache_dir) (`weights` under the cache
// directory, or under the default one when the cache is off); empty (in
// memory) with --weights-in-memory.
constexpr char kWeightsDirFlag[] = "weights-dir";
constexpr char kWeightsInMemoryFlag[] = "weights-in-memory";
absl::StatusOr<std::string> WeightsDirFromFlags(const ParsedArgs& args, const std::string& cache_dir);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_RUN_CACHE_DIR_H_
