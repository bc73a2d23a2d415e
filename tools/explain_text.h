// The text `shapeshift explain` prints for recompile events: one block per
// event (trigger, input, each entry tried with its failing atoms and who
// asked them, the unsat core, the new guards) or a summary by trigger and
// by who asked the failing question.
//
// Why a library file and not inside cmd_explain.cc: the Python package's
// `InferenceSession.explain()` must print exactly what the CLI prints, from
// this one renderer. Every text from the events is Escaped() where it
// enters the output (terminal_text.h).
#ifndef SHAPESHIFT_TOOLS_EXPLAIN_TEXT_H_
#define SHAPESHIFT_TOOLS_EXPLAIN_TEXT_H_

#include <string>
#include <vector>

#include "runtime/specialization/recompile_event.h"

namespace shapeshift::tools {

// One event's block (ends in '\n').
std::string RenderRecompileEvent(const runtime::RecompileEvent& event);
// Every event's block, separated by blank lines; "no recompile events\n"
// when there are none.
std::string RenderRecompileEvents(const std::vector<runtime::RecompileEvent>& events);
// `explain --summary`: events by trigger, misses by who asked.
std::string RenderRecompileSummary(const std::vector<runtime::RecompileEvent>& events);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_EXPLAIN_TEXT_H_
