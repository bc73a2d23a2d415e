// CheckProgram: would Program::Compile succeed on this graph, and if not,
// which nodes stop it — answered without compiling anything (no LLVM, no
// oneDNN primitive, nothing runs). It runs the same pass pipeline and the
// same lowering (codegen/lower: fusion groups to kernel IR and GEMM
// configurations) that Program::Compile runs, but collects every failure
// instead of stopping at the first, and reads the op table
// (graph/op_table.h) to say *why* a node has no lowering.
//
// Why it exists: `inspect` once printed "unsupported ops: none" for models
// whose compile then failed, because each layer kept its own idea of what
// the compiler supports. `shapeshift check`, `inspect` and the tests that
// hold the op table to its promise all call this, so what it accepts is what
// Program::Compile compiles (only a backend failure inside LLVM itself could
// still differ).
#ifndef SHAPESHIFT_RUNTIME_COMPILE_CHECK_H_
#define SHAPESHIFT_RUNTIME_COMPILE_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "runtime/compile_options.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

// One reason the model does not compile.
struct CompileProblem {
  std::string node;     // the node at fault; empty when no single node is
  std::string op_type;  // its op; empty with `node`
  std::string reason;   // what is missing, in a sentence
};

struct ProgramCheck {
  std::vector<CompileProblem> problems;  // empty = compilable
  // The plan's size when compilable (what Program::Compile would build).
  int64_t groups = 0;
  int64_t kernels = 0;  // kernel-IR kernels before deduplication
  int64_t gemms = 0;
  bool compilable() const { return problems.empty(); }
};

// `graph`/`env` are rewritten and may record guards, exactly as a compile
// would: pass a copy (runtime/specialization/compile_tiers.h does).
// `device` picks the op table's column; for Device::kCuda every lowered
// kernel is also emitted as CUDA C (text only: no NVRTC, no GPU), so an IR
// operation the CUDA emitter cannot spell is a problem naming the node.
ProgramCheck CheckProgram(Graph& graph, ShapeEnv& env, Device device = Device::kCpu);

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_COMPILE_CHECK_H_
