#include "tools/explain_text.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/terminal_text.h"

namespace shapeshift::tools {
namespace {

using runtime::AtomRecord;
using runtime::RecompileEvent;
using runtime::RecompileTrigger;

// Every text below comes from the log, i.e. from outside: each is Escaped()
// where it enters the output, so a name cannot forge lines or reach the
// terminal as control bytes.

// "memory-plan at node 't3': reuse a dead buffer's slot"
std::string Origin(const Provenance& p) {
  return ProvenanceText(Provenance{Escaped(p.pass), Escaped(p.node), Escaped(p.reason)});
}

std::string AtomLine(const AtomRecord& atom) {
  return absl::StrCat(Escaped(atom.atom), "    [asked by ", Origin(atom.provenance), "]");
}

std::string Milliseconds(double ms) { return absl::StrFormat("%.1f ms", ms); }

}  // namespace

std::string RenderRecompileEvent(const RecompileEvent& e) {
  std::string out = absl::StrCat("event ", e.sequence, ": ", runtime::RecompileTriggerName(e.trigger),
                                 " (policy ", runtime::SpecializationPolicyName(e.policy), ") at ", Escaped(e.timestamp),
                                 "\n");
  std::vector<std::string> values;
  for (const runtime::SymbolValue& s : e.symbols) values.push_back(absl::StrCat(Escaped(s.name), "=", s.value));
  // The polymorphic compile happens before any request, so it has no input.
  const char* no_values =
      e.trigger == RecompileTrigger::kInitial ? "none (compiled before the first request)" : "(no dynamic dims)";
  absl::StrAppend(&out, "  input: ", values.empty() ? no_values : absl::StrJoin(values, " "), "\n");
  if (e.cost) {
    const runtime::TierUpCost& c = *e.cost;
    absl::StrAppend(&out, "  cost model: ", c.requests, " requests x ", absl::StrFormat("%.3f", c.latency_ms),
                    " ms x ", absl::StrFormat("%.0f%%", 100 * c.speedup), " expected saving = ",
                    Milliseconds(c.gain_ms), " > estimated compile ", Milliseconds(c.compile_ms), "\n");
  }
  if (e.tried.empty()) {
    absl::StrAppend(&out, "  tried: no entries",
                    e.trigger == RecompileTrigger::kInitial ? " (first compile)" : "", "\n");
  }
  for (const runtime::TriedEntry& t : e.tried) {
    absl::StrAppend(&out, "  tried entry #", t.entry_id, " (", runtime::TierName(t.tier), "): ",
                    t.guards.empty() ? "no guards" : Escaped(absl::StrJoin(t.guards, " && ")), "\n");
    if (t.failing.empty()) absl::StrAppend(&out, "    passed\n");
    for (const AtomRecord& a : t.failing) absl::StrAppend(&out, "    failed: ", AtomLine(a), "\n");
  }
  if (!e.unsat_core.empty()) {
    absl::StrAppend(&out, "  unsat core:\n");
    for (const AtomRecord& a : e.unsat_core) absl::StrAppend(&out, "    ", AtomLine(a), "\n");
  }
  absl::StrAppend(&out, "  compiled entry #", e.new_entry_id, " (", runtime::TierName(e.new_tier), ") in ",
                  Milliseconds(e.compile_ms), "; guards:", e.new_guards.empty() ? " none (serves the whole declared domain)" : "",
                  "\n");
  for (const AtomRecord& a : e.new_guards) absl::StrAppend(&out, "    ", AtomLine(a), "\n");
  return out;
}

std::string RenderRecompileSummary(const std::vector<RecompileEvent>& events) {
  std::map<RecompileTrigger, int> by_trigger;
  std::map<std::string, int> misses_by_origin;
  double total_ms = 0;
  for (const RecompileEvent& e : events) {
    ++by_trigger[e.trigger];
    total_ms += e.compile_ms;
    if (e.trigger != RecompileTrigger::kMiss) continue;
    // One count per event and origin, however many core atoms share it.
    std::map<std::string, bool> seen;
    for (const AtomRecord& a : e.unsat_core) seen[Origin(a.provenance)] = true;
    for (const auto& [origin, unused] : seen) ++misses_by_origin[origin];
  }
  std::string out = absl::StrCat(events.size(), " events: ", by_trigger[RecompileTrigger::kInitial], " initial, ",
                                 by_trigger[RecompileTrigger::kMiss], " miss, ", by_trigger[RecompileTrigger::kTierUp],
                                 " tier-up; compile time ", Milliseconds(total_ms), "\n");
  if (!misses_by_origin.empty()) {
    absl::StrAppend(&out, "misses by who asked the failing question:\n");
    for (const auto& [origin, count] : misses_by_origin) absl::StrAppend(&out, "  ", count, "  ", origin, "\n");
  }
  return out;
}

std::string RenderRecompileEvents(const std::vector<RecompileEvent>& events) {
  if (events.empty()) return "no recompile events\n";
  std::vector<std::string> blocks;
  for (const RecompileEvent& e : events) blocks.push_back(RenderRecompileEvent(e));
  return absl::StrJoin(blocks, "\n");
}

}  // namespace shapeshift::tools
