#include "tools/step_profile_report.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "tools/terminal_text.h"

namespace shapeshift::tools {

nlohmann::ordered_json StepProfileJson(const runtime::StepProfile& profile) {
  const double requests = static_cast<double>(std::max<int64_t>(profile.requests(), 1));
  const double request_ms = static_cast<double>(profile.request_ns()) / 1e6 / requests;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  double steps_ms = 0;
  for (const runtime::StepProfileRow& row : profile.Rows()) {
    const double ms = static_cast<double>(row.ns) / 1e6 / requests;
    steps_ms += ms;
    nlohmann::ordered_json r;
    r["kind"] = row.kind;
    r["label"] = row.label;
    r["calls"] = static_cast<double>(row.calls) / requests;
    r["ms"] = ms;
    r["share"] = request_ms > 0 ? ms / request_ms : 0.0;
    rows.push_back(std::move(r));
  }
  nlohmann::ordered_json j;
  j["requests"] = profile.requests();
  j["request_ms"] = request_ms;
  j["steps_ms"] = steps_ms;
  j["rows"] = std::move(rows);
  return j;
}

void PrintStepProfile(const nlohmann::ordered_json& profile) {
  const double request_ms = profile["request_ms"].get<double>();
  const double steps_ms = profile["steps_ms"].get<double>();
  std::printf("step profile: %lld request(s), %.3f ms per request, %.3f ms of it in steps\n",
              profile["requests"].get<long long>(), request_ms, steps_ms);
  std::printf("  %9s %6s %7s  %-10s %s\n", "ms", "share", "calls", "kind", "what");
  double shown_ms = 0;
  int shown = 0;
  const auto& rows = profile["rows"];
  for (const auto& row : rows) {
    if (shown >= 10 && shown_ms >= 0.99 * steps_ms) break;
    const double ms = row["ms"].get<double>();
    std::printf("  %9.3f %5.1f%% %7.1f  %-10s %s\n", ms, 100 * row["share"].get<double>(), row["calls"].get<double>(),
                row["kind"].get<std::string>().c_str(), Escaped(row["label"].get<std::string>()).c_str());
    shown_ms += ms;
    ++shown;
  }
  if (static_cast<size_t>(shown) < rows.size()) {
    std::printf("  %9.3f %5.1f%% %7s  (%zu more rows)\n", steps_ms - shown_ms,
                request_ms > 0 ? 100 * (steps_ms - shown_ms) / request_ms : 0.0, "", rows.size() - shown);
  }
}

}  // namespace shapeshift::tools
