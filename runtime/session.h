// Session: the public C++ API — compile a model once, serve requests of any
// shape in its declared domain.
//
//   auto session = Session::Create(ModelSource::OnnxFile("bert.onnx"),
//                                  {.dims = {{"batch", {1, 8}}, {"seq", {1, 512}}}});
//   auto outputs = (*session)->Run({TensorView{DType::kI64, shape, ids.data()}, ...});
//
// A Session owns the (optimized) graph, its ShapeEnv and one compiled
// Program. Compilation happens exactly once, in Create; stats().compiles
// says so and tests assert it. A request whose dims fall outside the
// declared ranges is an error naming the input, dim and range — never a
// silent recompile or a fallback.
//
// Run is thread-safe: each call borrows an ExecutionContext (arena) from a
// pool, so concurrent requests never share scratch memory and steady-state
// requests allocate only their output tensors.
#ifndef SHAPESHIFT_RUNTIME_SESSION_H_
#define SHAPESHIFT_RUNTIME_SESSION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "runtime/compile_options.h"
#include "runtime/program.h"
#include "runtime/tensor_view.h"
#include "shapes/shape_env.h"

namespace shapeshift::runtime {

// Where a model comes from: an ONNX file, ONNX bytes, or a graph already
// built in memory (examples/ builders) with the ShapeEnv declaring its dims.
class ModelSource {
 public:
  static ModelSource OnnxFile(std::string path);
  static ModelSource OnnxBytes(std::string bytes, std::string name = "<bytes>");
  static ModelSource Built(std::unique_ptr<Graph> graph, std::unique_ptr<ShapeEnv> env);

 private:
  friend class Session;
  enum class Kind { kOnnxFile, kOnnxBytes, kBuilt };
  Kind kind_ = Kind::kBuilt;
  std::string text_;  // the path, or the bytes
  std::string name_;  // for messages
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<ShapeEnv> env_;
};

struct SessionStats {
  int64_t compiles = 0;    // always 1 for a live session
  int64_t recompiles = 0;  // compiles triggered by requests: none (one polymorphic program)
  int64_t requests = 0;    // successful Run calls
  ProgramStats program;    // compile_ms, kernels, gemms, ...
};

class Session {
 public:
  static absl::StatusOr<std::unique_ptr<Session>> Create(ModelSource model, const CompileOptions& options = {});
  ~Session();

  // Inputs in graph-input order (see graph().inputs()).
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const TensorView> inputs);
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs);

  // The reference interpreter on the same (optimized) graph: the oracle
  // tests compare Run against.
  absl::StatusOr<std::vector<Tensor>> RunReference(const std::vector<Tensor>& inputs) const;

  SessionStats stats() const;
  const Graph& graph() const { return *graph_; }
  const ShapeEnv& env() const { return *env_; }
  const Program& program() const { return *program_; }

 private:
  Session() = default;
  std::unique_ptr<ExecutionContext> AcquireContext();
  void ReleaseContext(std::unique_ptr<ExecutionContext> context);

  std::unique_ptr<Graph> graph_;
  std::unique_ptr<ShapeEnv> env_;
  std::unique_ptr<Program> program_;
  std::atomic<int64_t> requests_{0};
  absl::Mutex mu_;
  std::vector<std::unique_ptr<ExecutionContext>> idle_contexts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_SESSION_H_
