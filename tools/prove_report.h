// The parts of `shapeshift prove MODEL --json`'s report that describe a
// session's coverage: the verdict (covered / witness / unknown), the domain
// and each cache entry with its guards (and, for CUDA programs, its graph
// buckets). cmd_prove.cc composes them into its report; the Python
// package's `InferenceSession.prove()` returns the same objects as dicts.
// One builder, so the CLI and Python can never describe an entry differently.
#ifndef SHAPESHIFT_TOOLS_PROVE_REPORT_H_
#define SHAPESHIFT_TOOLS_PROVE_REPORT_H_

#include "nlohmann/json.hpp"
#include "runtime/specialization/specialization_cache.h"
#include "shapes/shape_env.h"
#include "shapes/z3_bridge.h"

namespace shapeshift::tools {

// {"covered": bool, "witness": {symbol: value} | null[, "unknown": detail]}
// for `result`, with the witness's symbols in `env`'s order.
nlohmann::ordered_json CoverageVerdictJson(const CoverageResult& result, const ShapeEnv& env);
// {symbol: "lo..hi"} for every symbol of `env`.
nlohmann::ordered_json DomainJson(const ShapeEnv& env);
// ["past_sequence + sequence <= 1024", ...]: the domain's relations between
// dims (ShapeEnv::domain_constraints()), which the ranges do not show.
nlohmann::ordered_json DomainRelationsJson(const ShapeEnv& env);
// [{"id", "tier", "guards"[, "cuda_graphs"]}] for every entry of `cache`.
nlohmann::ordered_json EntriesJson(const runtime::SpecializationCache& cache, Z3Bridge& z3);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_PROVE_REPORT_H_
