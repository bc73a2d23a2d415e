// Request traces for `shapeshift run --trace`: the sequence of request
// shapes (one symbol assignment per request) a replay sends to a model.
//
// Why traces and not one shape: recompilation behaviour is a property of a
// stream of shapes — how many compiles a policy makes, whether any request
// misses, how latency is spread — so the CLI replays a stream and counts.
// Three sources, all deterministic:
//
//  - `lognormal:N[:SEED]` — sentence-like traffic. The length symbol (`seq`,
//    or `sequence` as torch's exporter names it) is drawn from a log-normal
//    distribution with median 24 tokens (mu = 3.2, sigma = 0.75: a long tail
//    of longer sentences), rounded and clipped to the symbol's declared range.
//    The batch symbol (`batch` or `batch_size`), if any, is its declared
//    minimum 80% of the time, else 2 (10%), 4 (6%) or 8 (4%), clipped to its
//    declared range. Other symbols take their declared minimum. SEED
//    defaults to 1; the generator is std::mt19937_64 through
//    examples::WeightGenerator, so a trace is the same on every machine.
//  - `decode:N` — token-by-token decoding with a growing KV cache: `seq` = 1,
//    `past` = its declared minimum, then +1 per step, for N steps; other
//    symbols at their minimum. Torch-exported models name them `sequence`
//    and `past_sequence`, which are accepted too. An error when the model
//    has no past symbol or the N steps would run past its declared maximum.
//  - `file:PATH` — one request per line, written `batch=1 seq=37`; `#`
//    starts a comment; blank lines are skipped; unnamed symbols take their
//    declared minimum. Dims go by the same names as in the generated traces
//    (`seq` or `sequence`, `batch` or `batch_size`, `past` or
//    `past_sequence`, whichever the model has). Errors name PATH:LINE
//    (unknown symbol, bad number, value outside the declared range, a symbol
//    given twice).
#ifndef SHAPESHIFT_TOOLS_TRACE_H_
#define SHAPESHIFT_TOOLS_TRACE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shapes/shape_env.h"
#include "shapes/sym_expr.h"

namespace shapeshift::tools {

// The requests of the trace `spec` (`lognormal:N[:SEED]`, `decode:N`,
// `file:PATH`) for a model whose symbols and declared ranges are `env`'s.
// Every assignment binds every symbol of `env`, inside its declared range.
// Errors name the flag the spec came with (`--trace`, or `--warm` for
// `prove`), the spec (or PATH:LINE) and what is wrong with it.
absl::StatusOr<std::vector<Assignment>> MakeTrace(const std::string& spec, const ShapeEnv& env,
                                                  absl::string_view flag = "--trace");

// `batch=1 seq=37` for the symbols of `env`, in their declaration order.
std::string FormatRequest(const Assignment& request, const ShapeEnv& env);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_TRACE_H_
