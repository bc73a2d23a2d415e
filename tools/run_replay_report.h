// The report of a trace replay (`shapeshift run --trace`): one JSON object
// with every count of tools/run_replay.h's ReplayResult, and its rendering
// as text.
//
// Why the JSON is the source: tests, bench/peers/shapeshift_bench.py and
// people read the same numbers; the text form is printed from the JSON so
// the two cannot disagree. Field names are a contract (tools/README.md
// lists them), including the peer benchmarks' trace schema (engine_s,
// time_to_first_result_s, recompiles, per_request).
#ifndef SHAPESHIFT_TOOLS_RUN_REPLAY_REPORT_H_
#define SHAPESHIFT_TOOLS_RUN_REPLAY_REPORT_H_

#include <cstdint>
#include <string>

#include "nlohmann/json.hpp"
#include "tools/run_replay.h"

namespace shapeshift::tools {

// How the replay was run, as the report states it.
struct ReplaySetup {
  std::string model;      // the MODEL argument
  std::string policy;     // SpecializationPolicyName
  std::string trace;      // the --trace spec
  std::string cache_dir;  // empty: no persistent cache
  uint64_t seed = 1;
  int64_t check_every = 50;
  double load_us = 0;     // reading and importing the model, before the session
  double create_us = 0;   // session creation (any ahead-of-time compile)
};

nlohmann::ordered_json ReplayReportJson(const ReplaySetup& setup, const ReplayResult& result);

// Prints a ReplayReportJson object for people.
void PrintReplayReport(const nlohmann::ordered_json& report);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_RUN_REPLAY_REPORT_H_
