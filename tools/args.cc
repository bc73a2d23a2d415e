#include "tools/args.h"

#include "absl/strings/str_cat.h"

namespace shapeshift::tools {

std::string ParsedArgs::Get(const std::string& flag, const std::string& fallback) const {
  auto it = values.find(flag);
  return it == values.end() || it->second.empty() ? fallback : it->second.back();
}

const std::vector<std::string>& ParsedArgs::All(const std::string& flag) const {
  static const std::vector<std::string> kEmpty;
  auto it = values.find(flag);
  return it == values.end() ? kEmpty : it->second;
}

absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     const FlagSpec& spec) {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 3 || a.rfind("--", 0) != 0) {
      out.positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    std::string value;
    bool has_inline_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline_value = true;
    }
    if (spec.switches.count(name)) {
      if (has_inline_value) {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " takes no value"));
      }
      out.switches.insert(name);
    } else if (spec.valued.count(name)) {
      if (!has_inline_value) {
        if (i + 1 >= args.size()) {
          return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
        }
        value = args[++i];
      }
      out.values[name].push_back(value);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
  }
  return out;
}

}  // namespace shapeshift::tools
