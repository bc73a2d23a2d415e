#include "runtime/tuning/gemm_tuning.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "codegen/cpu/host_target.h"
#include "codegen/cpu/object_store.h"
#include "codegen/cpu/panel_rows_matmul.h"
#include "nlohmann/json.hpp"
#include "runtime/bundle/bundle_file.h"
#include "runtime/persist/signing.h"

namespace shapeshift::runtime {
namespace {

using nlohmann::json;

constexpr char kFormat[] = "shapeshift-gemm-tuning/1";
// A tuning file holds a few hundred GEMM classes at most; anything far larger
// is not one (and must not be read into memory whole).
constexpr int64_t kMaxFileBytes = int64_t{16} << 20;
// The row counts a choice may give the skinny GEMM: it computes any m, but a
// request of more rows than this is a prefill, where oneDNN's blocked GEMM
// belongs; a larger figure in a file is a damaged or hand-made file.

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, "model name")) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  return codegen::cpu::DetectHostTarget().cpu;
}

json MachineJson(const MachineKey& k) {
  return json{{"cpu", k.cpu},         {"features", k.features}, {"isa", k.isa},
              {"threads", k.threads}, {"onednn", k.onednn},     {"compiler", k.compiler}};
}

}  // namespace

MachineKey HostMachineKey(codegen::cpu::SkinnyMatmul::Isa isa, int threads) {
  MachineKey key;
  key.cpu = CpuModelName();
  key.features = codegen::cpu::DetectHostTarget().features;
  key.isa = codegen::cpu::IsaName(isa);
  key.threads = threads;
  key.onednn = codegen::cpu::OnednnVersion();
  key.compiler = codegen::cpu::GemmEngineIdentity();
  return key;
}

absl::Status CheckMachineKey(const MachineKey& file, const MachineKey& host) {
  auto differs = [](const char* field, const std::string& f, const std::string& h) {
    return absl::FailedPreconditionError(absl::StrCat("the tuning was measured on another ", field, " (the file's: '", f,
                                                      "', this machine's: '", h, "'): run `shapeshift tune` here"));
  };
  if (file.cpu != host.cpu) return differs("CPU", file.cpu, host.cpu);
  if (file.features != host.features) return differs("CPU feature set", file.features, host.features);
  if (file.isa != host.isa) return differs("instruction set", file.isa, host.isa);
  if (file.threads != host.threads) {
    return differs("thread count", absl::StrCat(file.threads), absl::StrCat(host.threads));
  }
  if (file.onednn != host.onednn) return differs("oneDNN version", file.onednn, host.onednn);
  if (file.compiler != host.compiler) return differs("build of the GEMM engines", file.compiler, host.compiler);
  return absl::OkStatus();
}

const char* LongRowsName(LongRows long_rows) {
  return long_rows == LongRows::kPanels ? codegen::cpu::PanelRowsMatmul::kOnednnPanelsEngine : "onednn";
}

LongRows LongRowsFor(bool long_rows_on_panels, codegen::cpu::SkinnyMatmul::Isa isa) {
  return long_rows_on_panels && isa == codegen::cpu::SkinnyMatmul::Isa::kAvx512 ? LongRows::kPanels : LongRows::kPlain;
}

const GemmChoice* GemmTuning::Find(const codegen::cpu::MatmulConfig& config, LongRows long_rows) const {
  const std::map<std::string, GemmChoice>& choices = Choices(long_rows);
  auto it = choices.find(codegen::cpu::DescribeConfig(config));
  return it == choices.end() || !it->second.complete() ? nullptr : &it->second;
}

codegen::cpu::SkinnyOptions SkinnyOptionsFor(const GemmTuning* tuning, const codegen::cpu::MatmulConfig& config,
                                             LongRows long_rows, int threads) {
  codegen::cpu::SkinnyOptions options;
  options.threads = threads;
  if (const GemmChoice* choice = tuning == nullptr ? nullptr : tuning->Find(config, long_rows)) {
    options.max_rows = choice->skinny_max_rows;
    options.min_rows = choice->skinny_min_rows;
    options.prefetch_rows = choice->prefetch_rows;
  }
  return options;
}

namespace {

json ChoicesJson(const std::map<std::string, GemmChoice>& choices) {
  json gemms = json::array();
  for (const auto& [config, choice] : choices) {
    json measured = json::array();
    for (const GemmTiming& t : choice.measured) {
      measured.push_back(json{{"m", t.m}, {"skinny_us", t.skinny_us}, {"onednn_us", t.onednn_us}});
    }
    gemms.push_back(json{{"config", config},
                         {"skinny_min_rows", choice.skinny_min_rows},
                         {"skinny_max_rows", choice.skinny_max_rows},
                         {"prefetch_rows", choice.prefetch_rows},
                         {"measured", measured}});
    if (!choice.complete()) gemms.back()["resume_at_rows"] = choice.resume_at_rows;
  }
  return gemms;
}

}  // namespace

std::string TuningFileJson(const GemmTuning& tuning) {
  json out{{"format", kFormat}, {"machine", MachineJson(tuning.machine)}, {"gemms", ChoicesJson(tuning.gemms)}};
  if (!tuning.panel_gemms.empty()) out["panel_gemms"] = ChoicesJson(tuning.panel_gemms);
  if (!tuning.models.empty()) out["models"] = tuning.models;
  return out.dump(2) + "\n";
}

namespace {

// `obj[name]` as a T, or an error naming `where` and the field.
template <typename T>
absl::StatusOr<T> Field(const json& obj, const char* name, const std::string& where) {
  if (!obj.is_object() || !obj.contains(name)) return absl::InvalidArgumentError(absl::StrCat(where, name, " is missing"));
  const json& v = obj.at(name);
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return absl::InvalidArgumentError(absl::StrCat(where, name, " is not a string"));
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) return absl::InvalidArgumentError(absl::StrCat(where, name, " is not an integer"));
    if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max())
                               : v.get<int64_t>() < std::numeric_limits<T>::min() ||
                                     v.get<int64_t>() > std::numeric_limits<T>::max()) {
      return absl::InvalidArgumentError(absl::StrCat(where, name, " is out of range"));
    }
  } else {
    if (!v.is_number()) return absl::InvalidArgumentError(absl::StrCat(where, name, " is not a number"));
  }
  return v.get<T>();
}

absl::StatusOr<MachineKey> ParseMachine(const json& j) {
  if (!j.is_object() || !j.contains("machine")) return absl::InvalidArgumentError("machine is missing");
  const json& m = j.at("machine");
  const std::string where = "machine.";
  MachineKey key;
  SS_ASSIGN_OR_RETURN(cpu, Field<std::string>(m, "cpu", where));
  SS_ASSIGN_OR_RETURN(features, Field<std::string>(m, "features", where));
  SS_ASSIGN_OR_RETURN(isa, Field<std::string>(m, "isa", where));
  SS_ASSIGN_OR_RETURN(threads, Field<int>(m, "threads", where));
  SS_ASSIGN_OR_RETURN(onednn, Field<std::string>(m, "onednn", where));
  SS_ASSIGN_OR_RETURN(compiler, Field<std::string>(m, "compiler", where));
  if (isa != "avx512" && isa != "avx2") {
    return absl::InvalidArgumentError(absl::StrCat("machine.isa '", isa, "' is neither avx512 nor avx2"));
  }
  if (threads < 1) return absl::InvalidArgumentError(absl::StrCat("machine.threads ", threads, " < 1"));
  return MachineKey{cpu, features, isa, threads, onednn, compiler};
}

absl::StatusOr<GemmChoice> ParseChoice(const json& g, const char* list, size_t index) {
  SS_ASSIGN_OR_RETURN(config, Field<std::string>(g, "config", absl::StrCat(list, "[", index, "].")));
  const std::string where = absl::StrCat(list, ": gemm '", config, "': ");
  if (!absl::StartsWith(config, "matmul[")) return absl::InvalidArgumentError(absl::StrCat(where, "not a GEMM configuration"));
  SS_ASSIGN_OR_RETURN(min_rows, Field<int64_t>(g, "skinny_min_rows", where));
  SS_ASSIGN_OR_RETURN(max_rows, Field<int64_t>(g, "skinny_max_rows", where));
  SS_ASSIGN_OR_RETURN(prefetch, Field<int64_t>(g, "prefetch_rows", where));
  if (max_rows < 0 || max_rows > kMaxSkinnyRows) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "skinny_max_rows ", max_rows, " is outside 0..", kMaxSkinnyRows));
  }
  if (min_rows < 1 || (max_rows > 0 && min_rows > max_rows)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "skinny_min_rows ", min_rows, " is outside 1..skinny_max_rows (", max_rows, ")"));
  }
  if (prefetch < 0 || prefetch > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(where, "prefetch_rows ", prefetch, " is outside 0..1024"));
  }
  GemmChoice choice{config, min_rows, max_rows, prefetch, {}};
  const json& measured = g.contains("measured") ? g.at("measured") : json::array();
  if (!measured.is_array()) return absl::InvalidArgumentError(absl::StrCat(where, "measured is not a list"));
  for (const json& t : measured) {
    SS_ASSIGN_OR_RETURN(m, Field<int64_t>(t, "m", absl::StrCat(where, "measured.")));
    SS_ASSIGN_OR_RETURN(skinny_us, Field<double>(t, "skinny_us", absl::StrCat(where, "measured.")));
    SS_ASSIGN_OR_RETURN(onednn_us, Field<double>(t, "onednn_us", absl::StrCat(where, "measured.")));
    if (m < 1 || m > kMaxSkinnyRows || (!choice.measured.empty() && m <= choice.measured.back().m)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "measured m ", m, " is outside 1..", kMaxSkinnyRows, " or not ascending"));
    }
    choice.measured.push_back({m, skinny_us, onednn_us});
  }
  if (g.contains("resume_at_rows")) {
    SS_ASSIGN_OR_RETURN(resume, Field<int64_t>(g, "resume_at_rows", where));
    // Past the points measured: a later run goes on from there.
    const int64_t after = choice.measured.empty() ? 0 : choice.measured.back().m;
    if (resume <= after || resume > kMaxSkinnyRows) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "resume_at_rows ", resume, " is outside ", after + 1, "..", kMaxSkinnyRows));
    }
    choice.resume_at_rows = resume;
  }
  return choice;
}

absl::StatusOr<GemmTuning> ParseTuning(const json& j) {
  if (!j.is_object() || !j.contains("format") || j.at("format") != kFormat) {
    return absl::InvalidArgumentError(absl::StrCat("format is not \"", kFormat, "\""));
  }
  GemmTuning tuning;
  SS_ASSIGN_OR_RETURN(machine, ParseMachine(j));
  tuning.machine = std::move(machine);
  if (!j.contains("gemms") || !j.at("gemms").is_array()) return absl::InvalidArgumentError("gemms is not a list");
  for (const char* list : {"gemms", "panel_gemms"}) {
    if (!j.contains(list)) continue;  // panel_gemms is optional
    const json& gemms = j.at(list);
    if (!gemms.is_array()) return absl::InvalidArgumentError(absl::StrCat(list, " is not a list"));
    std::map<std::string, GemmChoice>& into = std::string(list) == "gemms" ? tuning.gemms : tuning.panel_gemms;
    for (size_t i = 0; i < gemms.size(); ++i) {
      SS_ASSIGN_OR_RETURN(choice, ParseChoice(gemms[i], list, i));
      std::string config = choice.config;
      if (!into.emplace(config, std::move(choice)).second) {
        return absl::InvalidArgumentError(absl::StrCat(list, ": gemm '", config, "' appears twice"));
      }
    }
  }
  if (!j.contains("models")) return tuning;
  const json& models = j.at("models");
  if (!models.is_array()) return absl::InvalidArgumentError("models is not a list");
  for (size_t i = 0; i < models.size(); ++i) {
    if (!models[i].is_string()) return absl::InvalidArgumentError(absl::StrCat("models[", i, "] is not a string"));
    tuning.models.insert(models[i].get<std::string>());
  }
  return tuning;
}

}  // namespace

absl::StatusOr<GemmTuning> ParseTuningFile(absl::string_view text, absl::string_view source) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  absl::StatusOr<GemmTuning> tuning =
      j.is_discarded() ? absl::InvalidArgumentError("not JSON") : ParseTuning(j);
  if (!tuning.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("tuning file ", source, ": ", tuning.status().message()));
  }
  return tuning;
}

absl::StatusOr<GemmTuning> ReadTuningFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("tuning file ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat("tuning file ", path, ": not a regular file"));
  if (st.st_size > kMaxFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("tuning file ", path, ": ", st.st_size, " bytes, more than any tuning file (", kMaxFileBytes, ")"));
  }
  absl::StatusOr<std::string> bytes = bundle::ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status();
  return ParseTuningFile(*bytes, path);
}

absl::Status WriteTuningFile(const GemmTuning& tuning, const std::string& path) {
  return bundle::WriteFileAtomically(path, TuningFileJson(tuning));
}

std::string TuningPathInCache(const std::string& cache_dir, const MachineKey& key) {
  // Each field length-prefixed, so no two keys share the hashed text.
  std::string text;
  for (const std::string& field : {key.cpu, key.features, key.isa, std::to_string(key.threads), key.onednn,
                                   key.compiler}) {
    absl::StrAppend(&text, field.size(), ":", field, ";");
  }
  const std::string digest = absl::BytesToHexString(persist::Sha256(text)).substr(0, 16);
  return absl::StrCat(cache_dir, "/tuning/", digest, ".json");
}

}  // namespace shapeshift::runtime
