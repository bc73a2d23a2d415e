#include "runtime/specialization/recompile_event.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"

namespace shapeshift::runtime {
namespace {

using nlohmann::json;

// Reads `object[key]` as T; errors name the field by its path in the event.
template <typename T>
absl::Status GetField(const json& object, const std::string& path, const char* key, T* out) {
  const std::string where = path.empty() ? key : absl::StrCat(path, ".", key);
  if (!object.is_object()) return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not an object"));
  auto it = object.find(key);
  if (it == object.end()) return absl::InvalidArgumentError(absl::StrCat("missing field '", where, "'"));
  try {
    *out = it->get<T>();
  } catch (const json::exception&) {
    return absl::InvalidArgumentError(
        absl::StrCat("field '", where, "' has the wrong type (", it->type_name(), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<const json*> GetArray(const json& object, const std::string& path, const char* key) {
  const std::string where = path.empty() ? key : absl::StrCat(path, ".", key);
  auto it = object.find(key);
  if (it == object.end()) return absl::InvalidArgumentError(absl::StrCat("missing field '", where, "'"));
  if (!it->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat("field '", where, "' is not an array (", it->type_name(), ")"));
  }
  return &*it;
}

json AtomToJson(const AtomRecord& atom) {
  return json{{"atom", atom.atom},
              {"pass", atom.provenance.pass},
              {"node", atom.provenance.node},
              {"reason", atom.provenance.reason}};
}

absl::Status AtomFromJson(const json& j, const std::string& path, AtomRecord* out) {
  SS_RETURN_IF_ERROR(GetField(j, path, "atom", &out->atom));
  SS_RETURN_IF_ERROR(GetField(j, path, "pass", &out->provenance.pass));
  SS_RETURN_IF_ERROR(GetField(j, path, "node", &out->provenance.node));
  return GetField(j, path, "reason", &out->provenance.reason);
}

json AtomsToJson(const std::vector<AtomRecord>& atoms) {
  json out = json::array();
  for (const AtomRecord& a : atoms) out.push_back(AtomToJson(a));
  return out;
}

absl::Status AtomsFromJson(const json& object, const std::string& path, const char* key,
                           std::vector<AtomRecord>* out) {
  absl::StatusOr<const json*> array = GetArray(object, path, key);
  if (!array.ok()) return array.status();
  for (size_t i = 0; i < (*array)->size(); ++i) {
    AtomRecord atom;
    SS_RETURN_IF_ERROR(AtomFromJson((**array)[i], absl::StrCat(path.empty() ? "" : path + ".", key, "[", i, "]"),
                                    &atom));
    out->push_back(std::move(atom));
  }
  return absl::OkStatus();
}

absl::Status TierFromJson(const json& object, const std::string& path, const char* key, Tier* out) {
  std::string text;
  SS_RETURN_IF_ERROR(GetField(object, path, key, &text));
  absl::StatusOr<Tier> tier = ParseTier(text);
  if (!tier.ok()) return absl::InvalidArgumentError(absl::StrCat("field '", key, "': ", tier.status().message()));
  *out = *tier;
  return absl::OkStatus();
}

}  // namespace

const char* RecompileTriggerName(RecompileTrigger trigger) {
  switch (trigger) {
    case RecompileTrigger::kInitial:
      return "initial";
    case RecompileTrigger::kMiss:
      return "miss";
    case RecompileTrigger::kTierUp:
      return "tier-up";
  }
  return "?";
}

absl::StatusOr<RecompileTrigger> ParseRecompileTrigger(absl::string_view text) {
  for (RecompileTrigger t : {RecompileTrigger::kInitial, RecompileTrigger::kMiss, RecompileTrigger::kTierUp}) {
    if (text == RecompileTriggerName(t)) return t;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown trigger '", text, "' (expected initial, miss or tier-up)"));
}

std::string RecompileTimestampNow() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
}

json RecompileEventToJson(const RecompileEvent& event) {
  json symbols = json::array();
  for (const SymbolValue& s : event.symbols) symbols.push_back(json{{"name", s.name}, {"value", s.value}});
  json tried = json::array();
  for (const TriedEntry& t : event.tried) {
    tried.push_back(json{{"entry", t.entry_id},
                         {"tier", TierName(t.tier)},
                         {"guards", t.guards},
                         {"failing", AtomsToJson(t.failing)}});
  }
  json out{{"sequence", event.sequence},
              {"time", event.timestamp},
              {"trigger", RecompileTriggerName(event.trigger)},
              {"policy", SpecializationPolicyName(event.policy)},
              {"symbols", std::move(symbols)},
              {"tried", std::move(tried)},
              {"unsat_core", AtomsToJson(event.unsat_core)},
              {"new_entry",
               json{{"id", event.new_entry_id},
                    {"tier", TierName(event.new_tier)},
                    {"guards", AtomsToJson(event.new_guards)}}},
              {"compile_ms", event.compile_ms}};
  if (event.cost) {
    const TierUpCost& c = *event.cost;
    out["cost"] = json{{"requests", c.requests},
                       {"latency_ms", c.latency_ms},
                       {"speedup", c.speedup},
                       {"gain_ms", c.gain_ms},
                       {"compile_ms", c.compile_ms}};
  }
  return out;
}

absl::StatusOr<RecompileEvent> RecompileEventFromJson(const json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat("an event must be an object, not ", j.type_name()));
  RecompileEvent e;
  SS_RETURN_IF_ERROR(GetField(j, "", "sequence", &e.sequence));
  SS_RETURN_IF_ERROR(GetField(j, "", "time", &e.timestamp));
  std::string text;
  SS_RETURN_IF_ERROR(GetField(j, "", "trigger", &text));
  absl::StatusOr<RecompileTrigger> trigger = ParseRecompileTrigger(text);
  if (!trigger.ok()) return absl::InvalidArgumentError(absl::StrCat("field 'trigger': ", trigger.status().message()));
  e.trigger = *trigger;
  SS_RETURN_IF_ERROR(GetField(j, "", "policy", &text));
  absl::StatusOr<SpecializationPolicy> policy = ParseSpecializationPolicy(text);
  if (!policy.ok()) return absl::InvalidArgumentError(absl::StrCat("field 'policy': ", policy.status().message()));
  e.policy = *policy;

  absl::StatusOr<const json*> symbols = GetArray(j, "", "symbols");
  if (!symbols.ok()) return symbols.status();
  for (size_t i = 0; i < (*symbols)->size(); ++i) {
    SymbolValue s;
    const std::string path = absl::StrCat("symbols[", i, "]");
    SS_RETURN_IF_ERROR(GetField((**symbols)[i], path, "name", &s.name));
    SS_RETURN_IF_ERROR(GetField((**symbols)[i], path, "value", &s.value));
    e.symbols.push_back(std::move(s));
  }
  absl::StatusOr<const json*> tried = GetArray(j, "", "tried");
  if (!tried.ok()) return tried.status();
  for (size_t i = 0; i < (*tried)->size(); ++i) {
    const json& item = (**tried)[i];
    const std::string path = absl::StrCat("tried[", i, "]");
    TriedEntry t;
    SS_RETURN_IF_ERROR(GetField(item, path, "entry", &t.entry_id));
    SS_RETURN_IF_ERROR(TierFromJson(item, path, "tier", &t.tier));
    SS_RETURN_IF_ERROR(GetField(item, path, "guards", &t.guards));
    SS_RETURN_IF_ERROR(AtomsFromJson(item, path, "failing", &t.failing));
    e.tried.push_back(std::move(t));
  }
  SS_RETURN_IF_ERROR(AtomsFromJson(j, "", "unsat_core", &e.unsat_core));
  json new_entry;
  SS_RETURN_IF_ERROR(GetField(j, "", "new_entry", &new_entry));
  SS_RETURN_IF_ERROR(GetField(new_entry, "new_entry", "id", &e.new_entry_id));
  SS_RETURN_IF_ERROR(TierFromJson(new_entry, "new_entry", "tier", &e.new_tier));
  SS_RETURN_IF_ERROR(AtomsFromJson(new_entry, "new_entry", "guards", &e.new_guards));
  SS_RETURN_IF_ERROR(GetField(j, "", "compile_ms", &e.compile_ms));
  if (j.contains("cost")) {
    json cost;
    SS_RETURN_IF_ERROR(GetField(j, "", "cost", &cost));
    TierUpCost c;
    SS_RETURN_IF_ERROR(GetField(cost, "cost", "requests", &c.requests));
    SS_RETURN_IF_ERROR(GetField(cost, "cost", "latency_ms", &c.latency_ms));
    SS_RETURN_IF_ERROR(GetField(cost, "cost", "speedup", &c.speedup));
    SS_RETURN_IF_ERROR(GetField(cost, "cost", "gain_ms", &c.gain_ms));
    SS_RETURN_IF_ERROR(GetField(cost, "cost", "compile_ms", &c.compile_ms));
    e.cost = c;
  }
  return e;
}

absl::StatusOr<std::unique_ptr<RecompileLogWriter>> RecompileLogWriter::Open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("recompile log '", path, "': cannot open for appending: ", std::strerror(errno)));
  }
  return std::unique_ptr<RecompileLogWriter>(new RecompileLogWriter(path, file));
}

absl::StatusOr<std::unique_ptr<RecompileLogWriter>> RecompileLogWriter::OpenFromEnvironment() {
  const char* path = std::getenv("SHAPESHIFT_RECOMPILE_LOG");
  if (path == nullptr || *path == '\0') return std::unique_ptr<RecompileLogWriter>();
  return Open(path);
}

RecompileLogWriter::~RecompileLogWriter() {
  absl::MutexLock lock(&mu_);
  std::fclose(file_);
}

absl::Status RecompileLogWriter::Append(const RecompileEvent& event) {
  // Names come from the model: bytes that are not UTF-8 are replaced (U+FFFD)
  // rather than making the dump throw.
  const std::string line =
      RecompileEventToJson(event).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  absl::MutexLock lock(&mu_);
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    return absl::InternalError(absl::StrCat("recompile log '", path_, "': write failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RecompileEvent>> ParseRecompileLog(absl::string_view text, absl::string_view source) {
  std::vector<RecompileEvent> events;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == absl::string_view::npos) continue;
    json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    absl::StatusOr<RecompileEvent> event =
        j.is_discarded() ? absl::InvalidArgumentError("not valid JSON") : RecompileEventFromJson(j);
    if (!event.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line_number, ": ", event.status().message()));
    }
    events.push_back(*std::move(event));
  }
  return events;
}

absl::StatusOr<std::vector<RecompileEvent>> ReadRecompileLog(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(absl::StrCat("recompile log '", path, "': is a directory, not a log file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("recompile log '", path, "': cannot open: ", std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return ParseRecompileLog(text.str(), path);
}

}  // namespace shapeshift::runtime
