#include "runtime/step_profile.h"

#include <algorithm>
#include <tuple>

namespace shapeshift::runtime {

void StepProfile::Add(std::string_view kind, std::string_view label, int64_t ns) {
  absl::MutexLock lock(&mu_);
  std::string key(kind);
  key.append(1, '\n').append(label);
  StepProfileRow& row = rows_[key];
  if (row.calls == 0) {
    row.kind = std::string(kind);
    row.label = std::string(label);
  }
  ++row.calls;
  row.ns += ns;
}

void StepProfile::AddRequest(int64_t ns) {
  absl::MutexLock lock(&mu_);
  ++requests_;
  request_ns_ += ns;
}

std::vector<StepProfileRow> StepProfile::Rows() const {
  std::vector<StepProfileRow> rows;
  {
    absl::MutexLock lock(&mu_);
    rows.reserve(rows_.size());
    for (const auto& [key, row] : rows_) rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(), [](const StepProfileRow& a, const StepProfileRow& b) {
    if (a.ns != b.ns) return a.ns > b.ns;
    return std::tie(a.kind, a.label) < std::tie(b.kind, b.label);
  });
  return rows;
}

int64_t StepProfile::requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

int64_t StepProfile::request_ns() const {
  absl::MutexLock lock(&mu_);
  return request_ns_;
}

void StepProfile::Reset() {
  absl::MutexLock lock(&mu_);
  rows_.clear();
  requests_ = 0;
  request_ns_ = 0;
}

}  // namespace shapeshift::runtime
