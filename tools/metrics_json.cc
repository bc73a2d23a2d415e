#include "tools/metrics_json.h"

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace shapeshift::tools {

// FormatMetricsText's `name value` lines as a JSON object of numbers (so the
// JSON keeps every field the text has, under the same names).
nlohmann::ordered_json MetricsJson(const std::string& text) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> name_value = absl::StrSplit(line, absl::MaxSplits(' ', 1));
    int64_t integer = 0;
    double real = 0;
    if (name_value.size() != 2) continue;
    if (absl::SimpleAtoi(name_value[1], &integer)) {
      out[name_value[0]] = integer;
    } else if (absl::SimpleAtod(name_value[1], &real)) {
      out[name_value[0]] = real;
    } else {
      out[name_value[0]] = name_value[1];
    }
  }
  return out;
}

}  // namespace shapeshift::tools
