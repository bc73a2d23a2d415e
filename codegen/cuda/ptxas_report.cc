#include "codegen/cuda/ptxas_report.h"

#include <cstdlib>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace shapeshift::codegen::cuda {
namespace {

// The number just before `unit` in `line` ("368 bytes cmem" -> 368), or -1.
int64_t NumberBefore(absl::string_view line, absl::string_view unit) {
  size_t at = line.find(unit);
  if (at == absl::string_view::npos) return -1;
  size_t end = at;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  if (begin == end) return -1;
  return std::strtoll(std::string(line.substr(begin, end - begin)).c_str(), nullptr, 10);
}

// 'name' -> name
std::string Quoted(absl::string_view line, size_t from) {
  size_t a = line.find('\'', from);
  if (a == absl::string_view::npos) return "";
  size_t b = line.find('\'', a + 1);
  if (b == absl::string_view::npos) return "";
  return std::string(line.substr(a + 1, b - a - 1));
}

}  // namespace

std::string PtxasReport::ToString() const {
  return absl::StrCat(entry, " ", arch, ": ", registers, " registers, ", barriers, " barriers, ", shared_bytes,
                      " B smem, ", stack_bytes, " B stack, ", spill_store_bytes, "/", spill_load_bytes,
                      " B spilled (stores/loads)");
}

std::vector<PtxasReport> ParsePtxasInfo(const std::string& log) {
  std::vector<PtxasReport> reports;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (size_t at = line.find("Compiling entry function"); at != absl::string_view::npos) {
      PtxasReport r;
      r.entry = Quoted(line, at);
      size_t for_at = line.find(" for ", at);
      r.arch = for_at == absl::string_view::npos ? "" : Quoted(line, for_at);
      reports.push_back(std::move(r));
      continue;
    }
    if (reports.empty()) continue;
    PtxasReport& r = reports.back();
    if (absl::StrContains(line, "bytes stack frame")) {
      r.stack_bytes = std::max<int64_t>(0, NumberBefore(line, "bytes stack frame"));
      r.spill_store_bytes = std::max<int64_t>(0, NumberBefore(line, "bytes spill stores"));
      r.spill_load_bytes = std::max<int64_t>(0, NumberBefore(line, "bytes spill loads"));
    } else if (absl::StrContains(line, "registers")) {
      r.registers = static_cast<int>(NumberBefore(line, "registers"));
      r.barriers = static_cast<int>(std::max<int64_t>(0, NumberBefore(line, "barriers")));
      r.shared_bytes = std::max<int64_t>(0, NumberBefore(line, "bytes smem"));
    }
  }
  return reports;
}

}  // namespace shapeshift::codegen::cuda
