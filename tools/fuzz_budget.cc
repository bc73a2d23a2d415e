#include "tools/fuzz_budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/dtype.h"

namespace shapeshift::tools {
namespace {

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > kUnbounded - b ? kUnbounded : a + b; }

uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? kUnbounded : product;
}

// The cgroup v2 limit of this process's memory, or kUnbounded.
uint64_t CgroupMemoryLimit() {
  std::ifstream file("/sys/fs/cgroup/memory.max");
  std::string text;
  uint64_t limit = 0;
  if (!(file >> text) || !absl::SimpleAtoi(text, &limit) || limit == 0) return kUnbounded;  // "max": none
  return limit;
}

}  // namespace

uint64_t CaseFootprint::served_total() const {
  return SaturatingAdd(SaturatingAdd(inputs, interpreter_peak), SaturatingAdd(arena, outputs));
}

uint64_t CaseFootprint::refused_total() const { return SaturatingMul(inputs, 2); }

CaseFootprintEstimator::CaseFootprintEstimator(const Graph& graph) {
  std::vector<int> index(graph.value_id_bound(), -1);
  auto add = [&](const Value* v) {
    if (v == nullptr || v->constant() != nullptr || index[v->id()] >= 0) return;
    index[v->id()] = static_cast<int>(values_.size());
    values_.push_back({DTypeSize(v->type().dtype), v->type().shape});
  };
  for (const Value* v : graph.inputs()) {
    add(v);
    inputs_.push_back(index[v->id()]);
  }
  const std::vector<Node*> nodes = graph.nodes();
  std::vector<int> reads(graph.value_id_bound(), 0);
  for (const Node* node : nodes) {
    for (const Value* in : node->inputs()) {
      if (in != nullptr) ++reads[in->id()];
    }
  }
  std::vector<bool> is_input(graph.value_id_bound(), false);
  for (const Value* v : graph.inputs()) is_input[v->id()] = true;
  for (const Value* out : graph.outputs()) ++reads[out->id()];  // kept to the end
  for (const Node* node : nodes) {
    Step step;
    for (const Value* out : node->outputs()) {
      add(out);
      if (out != nullptr && index[out->id()] >= 0) step.defines.push_back(index[out->id()]);
    }
    for (const Value* in : node->inputs()) {
      if (in == nullptr || index[in->id()] < 0 || is_input[in->id()]) continue;  // inputs: the caller's
      if (--reads[in->id()] == 0) step.frees.push_back(index[in->id()]);
    }
    steps_.push_back(std::move(step));
  }
  for (const Value* out : graph.outputs()) {
    if (index[out->id()] >= 0) outputs_.push_back(index[out->id()]);
  }
}

uint64_t CaseFootprintEstimator::Bytes(int value, const Assignment& dims) const {
  const SizedValue& v = values_[value];
  uint64_t bytes = v.element_bytes;
  for (const SymExpr& dim : v.dims) {
    absl::StatusOr<int64_t> size = dim.Evaluate(dims);
    if (!size.ok()) {
      // An overflowing size is over every budget; one that depends on data
      // (an unbound symbol) cannot be known before running.
      if (absl::IsOutOfRange(size.status())) return kUnbounded;
      return 0;
    }
    bytes = SaturatingMul(bytes, static_cast<uint64_t>(std::max<int64_t>(*size, 0)));
  }
  return bytes;
}

CaseFootprint CaseFootprintEstimator::Estimate(const Assignment& dims) const {
  CaseFootprint f;
  for (int v : inputs_) f.inputs = SaturatingAdd(f.inputs, Bytes(v, dims));
  for (int v : outputs_) f.outputs = SaturatingAdd(f.outputs, Bytes(v, dims));
  uint64_t live = 0;
  for (const Step& step : steps_) {
    for (int v : step.defines) {
      const uint64_t bytes = Bytes(v, dims);
      live = SaturatingAdd(live, bytes);
      f.intermediates_total = SaturatingAdd(f.intermediates_total, bytes);
    }
    f.interpreter_peak = std::max(f.interpreter_peak, live);
    for (int v : step.frees) {
      const uint64_t bytes = Bytes(v, dims);
      live = live == kUnbounded ? kUnbounded : live - std::min(live, bytes);
    }
  }
  f.arena = f.intermediates_total;
  return f;
}

uint64_t DefaultMaxCaseBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  uint64_t memory = pages > 0 && page_size > 0 ? SaturatingMul(pages, page_size) : uint64_t{4} << 30;
  memory = std::min(memory, CgroupMemoryLimit());
  uint64_t budget = memory / 4;
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    budget = std::min<uint64_t>(budget, limit.rlim_cur / 2);
  }
  return std::max<uint64_t>(budget, 1);
}

absl::StatusOr<uint64_t> ParseByteCount(const std::string& text) {
  std::string digits = text;
  uint64_t scale = 1;
  if (!digits.empty()) {
    switch (absl::ascii_toupper(digits.back())) {
      case 'K': scale = uint64_t{1} << 10; break;
      case 'M': scale = uint64_t{1} << 20; break;
      case 'G': scale = uint64_t{1} << 30; break;
      case 'T': scale = uint64_t{1} << 40; break;
      default: break;
    }
    if (scale != 1) digits.pop_back();
  }
  uint64_t count = 0;
  uint64_t bytes = 0;
  if (!absl::SimpleAtoi(digits, &count) || count == 0 || __builtin_mul_overflow(count, scale, &bytes) ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-case-bytes ", text, ": expected a positive number of bytes, optionally with K, M, G or T"));
  }
  return bytes;
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes == kUnbounded) return "more than 16 EiB";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", value, units[unit]);
}

}  // namespace shapeshift::tools
