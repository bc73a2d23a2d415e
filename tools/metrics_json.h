// runtime::FormatMetricsText's `name value` lines as one JSON object of
// numbers, under the same names: what `run --json` reports as `metrics` and
// what the Python package's `InferenceSession.metrics()` returns as a dict.
// One parser of the one text form, so the two can never disagree on a field.
#ifndef SHAPESHIFT_TOOLS_METRICS_JSON_H_
#define SHAPESHIFT_TOOLS_METRICS_JSON_H_

#include <string>

#include "nlohmann/json.hpp"

namespace shapeshift::tools {

nlohmann::ordered_json MetricsJson(const std::string& text);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_METRICS_JSON_H_
