// `shapeshift explain LOG [--summary] [--json]`: renders a recompile log
// (JSON lines written by the Dispatcher, see
// runtime/specialization/recompile_event.h) for people.
//
// The point of the log is answering "why did this compile happen?" without
// reading JSON: one block per event says what triggered it, for which input,
// every entry that was tried and the atoms that failed there — each with the
// pass, node and reason that asked the question — the minimal unsat core,
// and the guard set of the entry that was compiled. `--summary` counts
// events by trigger and misses by who installed the failing atoms (the
// place to look when a workload recompiles too often); `--json` re-emits the
// validated events as one JSON array for other tools.
//
// Exit codes: 0 rendered; 2 bad usage, an unreadable log, or a malformed
// line (the message names the file and line).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "runtime/specialization/recompile_event.h"
#include "tools/args.h"
#include "tools/command.h"
#include "tools/terminal_text.h"

namespace shapeshift::tools {
namespace {

using runtime::AtomRecord;
using runtime::RecompileEvent;
using runtime::RecompileTrigger;

constexpr char kUsage[] =
    "usage: shapeshift explain LOG [--summary] [--json]\n"
    "  LOG is a recompile log (JSON lines, from run --recompile-log PATH or SHAPESHIFT_RECOMPILE_LOG).\n"
    "  Prints one block per compile: trigger, input, each entry tried with its failing atoms and who\n"
    "  asked them, the unsat core and the new guards. --summary counts events by trigger and misses by\n"
    "  who asked the failing question; --json re-emits the validated events as one JSON array.\n"
    "  Exit: 0 rendered, 2 bad usage, an unreadable log or a malformed line.\n";

int UsageError(absl::string_view message) { return ReportError("explain", kExitUsage, message); }

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

std::string RenderEvent(const RecompileEvent& e) {
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

std::string RenderSummary(const std::vector<RecompileEvent>& events) {
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

int RunExplain(const std::vector<std::string>& argv) {
  FlagSpec spec;
  spec.switches = {"summary", "json"};
  absl::StatusOr<ParsedArgs> args = ParseArgs(argv, spec);
  if (!args.ok()) return tools::UsageError("explain", kUsage, std::string(args.status().message()));
  if (args->positional.size() != 1) return tools::UsageError("explain", kUsage, "expected exactly one LOG");
  if (args->Has("summary") && args->Has("json")) return UsageError("--summary and --json are exclusive");
  absl::StatusOr<std::vector<RecompileEvent>> events = runtime::ReadRecompileLog(args->positional[0]);
  if (!events.ok()) return UsageError(events.status().message());
  std::string out;
  if (args->Has("json")) {
    nlohmann::json array = nlohmann::json::array();
    for (const RecompileEvent& e : *events) array.push_back(runtime::RecompileEventToJson(e));
    out = JsonText(array, 2) + "\n";
  } else if (args->Has("summary")) {
    out = RenderSummary(*events);
  } else {
    std::vector<std::string> blocks;
    for (const RecompileEvent& e : *events) blocks.push_back(RenderEvent(e));
    out = events->empty() ? "no recompile events\n" : absl::StrJoin(blocks, "\n");
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace

SHAPESHIFT_COMMAND(explain, "explain", "render a recompile log: why each compile happened, and who asked", kUsage,
                   RunExplain);

}  // namespace shapeshift::tools
