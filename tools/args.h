// A small flag parser shared by the subcommands: `--name value`, `--name=value`,
// repeated flags, boolean switches and positional arguments. Unknown flags are
// errors (exit 2), never silently ignored.
#ifndef SHAPESHIFT_TOOLS_ARGS_H_
#define SHAPESHIFT_TOOLS_ARGS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shapeshift::tools {

struct FlagSpec {
  std::set<std::string> valued;    // flags that take a value, e.g. "dim"
  std::set<std::string> switches;  // boolean flags, e.g. "json"
};

struct ParsedArgs {
  std::map<std::string, std::vector<std::string>> values;  // all occurrences
  std::set<std::string> switches;
  std::vector<std::string> positional;

  bool Has(const std::string& flag) const {
    return switches.count(flag) > 0 || values.count(flag) > 0;
  }
  // The last value of `flag`, or `fallback` when absent.
  std::string Get(const std::string& flag, const std::string& fallback = "") const;
  const std::vector<std::string>& All(const std::string& flag) const;
};

absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     const FlagSpec& spec);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_ARGS_H_
