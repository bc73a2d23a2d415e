// RecompileEvent: the structured record of one compile — why it happened,
// for which input, which guards failed and who installed them.
//
// Why a record and not a log line: users ask "why did this recompile?" after
// the fact, and tools (`shapeshift explain`, tests, dashboards) need the
// answer as data. Every compile — the initial one, a miss, a tier-up — is
// one event: the trigger's symbol values, each cache entry tried with its
// failing atoms and their provenance (pass, node, reason), the minimal
// unsat core that forced the compile, the new entry's guard set and the
// compile time. Events are JSON lines (one object per line, appended as they
// happen) so a crashed process still leaves a readable log.
#ifndef SHAPESHIFT_RUNTIME_SPECIALIZATION_RECOMPILE_EVENT_H_
#define SHAPESHIFT_RUNTIME_SPECIALIZATION_RECOMPILE_EVENT_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "runtime/specialization/policy.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

enum class RecompileTrigger {
  kInitial,  // the first compile of a model
  kMiss,     // a request no entry served
  kTierUp,   // a background specialization the cost model asked for
};
const char* RecompileTriggerName(RecompileTrigger trigger);  // "initial" | "miss" | "tier-up"
absl::StatusOr<RecompileTrigger> ParseRecompileTrigger(absl::string_view text);

// One guard atom as text, with who asked it.
struct AtomRecord {
  std::string atom;  // Predicate::ToString()
  Provenance provenance;
};

// A cache entry the dispatcher tried for the trigger input.
struct TriedEntry {
  int64_t entry_id = 0;
  Tier tier = Tier::kPolymorphic;
  std::vector<std::string> guards;  // the entry's whole guard set
  std::vector<AtomRecord> failing;  // the atoms false at the trigger input
};

struct SymbolValue {
  std::string name;
  int64_t value = 0;
};

// Why the cost model asked for a tier-up (tier_up.h): it fires when
// requests × latency_ms × speedup (= gain_ms) exceeds compile_ms.
struct TierUpCost {
  int64_t requests = 0;   // traffic the region (or shape) saw: the predicted remaining traffic
  double latency_ms = 0;  // EWMA latency of the entry serving it so far
  double speedup = 0;     // expected fraction of latency saved by the tier
  double gain_ms = 0;     // requests × latency_ms × speedup
  double compile_ms = 0;  // estimated compile time
};

struct RecompileEvent {
  int64_t sequence = 0;    // 1, 2, ... within one process's log
  std::string timestamp;   // RFC 3339, UTC
  RecompileTrigger trigger = RecompileTrigger::kInitial;
  SpecializationPolicy policy = SpecializationPolicy::kAuto;
  std::vector<SymbolValue> symbols;    // the trigger input's symbol values, in slot order
  std::vector<TriedEntry> tried;       // most specific first
  std::vector<AtomRecord> unsat_core;  // minimal atoms no completion of the input satisfies
  int64_t new_entry_id = 0;
  Tier new_tier = Tier::kPolymorphic;
  std::vector<AtomRecord> new_guards;  // the new entry's guard set (after generalization)
  double compile_ms = 0;
  std::optional<TierUpCost> cost;  // tier-up events only
};

// The current time as RecompileEvent::timestamp text.
std::string RecompileTimestampNow();

nlohmann::json RecompileEventToJson(const RecompileEvent& event);
// An error names the missing or mistyped field.
absl::StatusOr<RecompileEvent> RecompileEventFromJson(const nlohmann::json& json);

// Appends events as JSON lines, one flushed line per event. Thread-safe.
class RecompileLogWriter {
 public:
  // Opens `path` for appending; an error names the path.
  static absl::StatusOr<std::unique_ptr<RecompileLogWriter>> Open(const std::string& path);
  // The log named by SHAPESHIFT_RECOMPILE_LOG, or nullptr when it is unset
  // or empty.
  static absl::StatusOr<std::unique_ptr<RecompileLogWriter>> OpenFromEnvironment();
  ~RecompileLogWriter();
  RecompileLogWriter(const RecompileLogWriter&) = delete;
  RecompileLogWriter& operator=(const RecompileLogWriter&) = delete;

  absl::Status Append(const RecompileEvent& event);
  const std::string& path() const { return path_; }

 private:
  RecompileLogWriter(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  std::string path_;
  absl::Mutex mu_;
  std::FILE* file_ ABSL_GUARDED_BY(mu_);
};

// Parses a JSON-lines log; blank lines are skipped. An error names `source`
// and the 1-based line number of the first malformed line.
absl::StatusOr<std::vector<RecompileEvent>> ParseRecompileLog(absl::string_view text, absl::string_view source);
absl::StatusOr<std::vector<RecompileEvent>> ReadRecompileLog(const std::string& path);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SPECIALIZATION_RECOMPILE_EVENT_H_
