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
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "runtime/specialization/recompile_event.h"
#include "tools/args.h"
#include "tools/command.h"
#include "tools/explain_text.h"
#include "tools/terminal_text.h"

namespace shapeshift::tools {
namespace {

using runtime::RecompileEvent;

constexpr char kUsage[] =
    "usage: shapeshift explain LOG [--summary] [--json]\n"
    "  LOG is a recompile log (JSON lines, from run --recompile-log PATH or SHAPESHIFT_RECOMPILE_LOG).\n"
    "  Prints one block per compile: trigger, input, each entry tried with its failing atoms and who\n"
    "  asked them, the unsat core and the new guards. --summary counts events by trigger and misses by\n"
    "  who asked the failing question; --json re-emits the validated events as one JSON array.\n"
    "  Exit: 0 rendered, 2 bad usage, an unreadable log or a malformed line.\n";

int UsageError(absl::string_view message) { return ReportError("explain", kExitUsage, message); }

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
    out = RenderRecompileSummary(*events);
  } else {
    out = RenderRecompileEvents(*events);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace

SHAPESHIFT_COMMAND(explain, "explain", "render a recompile log: why each compile happened, and who asked", kUsage,
                   RunExplain);

}  // namespace shapeshift::tools
