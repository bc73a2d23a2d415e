// Model: what `shapeshift._core.Model` is — one imported ONNX model served by
// a runtime::Session (the policy's tiers, the recompile limit,
// the persistent cache), plus the model's input/output signature as ONNX
// Runtime describes it. python/shapeshift/session.py builds the
// ORT-compatible InferenceSession on top (names, output selection, options).
//
// Thread-safety: Run releases the GIL and may be called from any number of
// Python threads at once (Session::Run is thread-safe); each call
// owns its inputs' references and its outputs.
#ifndef SHAPESHIFT_PYTHON_SRC_MODEL_H_
#define SHAPESHIFT_PYTHON_SRC_MODEL_H_

#include <nanobind/nanobind.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/onnx/importer.h"
#include "graph/tensor_type.h"
#include "runtime/session.h"

namespace shapeshift::python {

struct ModelOptions {
  std::map<std::string, DimRange> dims;  // overrides of the declared ranges
  std::string policy = "auto";
  std::string cache_dir;  // empty: no persistent cache
  int recompile_limit = 64;
  std::string device = "cpu";
  int intra_op_threads = 0;  // 0: OpenMP's default
  // The weights in an unlinked file under this directory, resident only
  // while read (SessionOptions::weights_dir); empty: in memory.
  std::string weights_dir;
  // Seconds a model file's first session with a cache_dir may spend measuring
  // its GEMM classes (tools/lazy_tuning.h); 0: never.
  double tune_budget_s = 10;
};

class Model {
 public:
  // `source` is a path, or the model's bytes when `is_bytes`. Errors raise
  // (errors.h) with the importer's or compiler's message.
  static std::unique_ptr<Model> Load(const std::string& source, bool is_bytes, const ModelOptions& options);

  // Inputs in graph order; returns every output in graph order.
  nanobind::list Run(nanobind::list inputs);

  // [(name, type, [dim, ...])]: type as ORT names it, each dim an int or
  // the symbolic expression's text.
  nanobind::list Inputs() const { return Signature(inputs_); }
  nanobind::list Outputs() const { return Signature(outputs_); }
  const std::string& name() const { return name_; }
  const std::vector<std::string>& notes() const { return notes_; }

  // Introspection, as the CLI's texts and JSON (decoded by the Python side).
  std::vector<std::string> RecompileEventsJson() const;  // one JSON object per event
  std::string Explain(bool summary) const;               // `shapeshift explain` text
  std::string Metrics(const std::string& format) const;  // "json" | "text" | "prometheus"
  // Where the weights live (WeightsPlacement and the bytes the polymorphic
  // program gave back), as one JSON object.
  std::string WeightsJson() const;
  // `prove`'s report for `dims` (each within its declared range; empty: the
  // declared domain), as one JSON object.
  std::string Prove(const std::map<std::string, DimRange>& dims) const;
  void WaitForTierUps() { session_->WaitForTierUps(); }
  int64_t input_copies() const { return input_copies_.load(std::memory_order_relaxed); }

 private:
  struct Port {
    std::string name;
    TensorType type;
  };
  static nanobind::list Signature(const std::vector<Port>& ports);
  // Raises for a failed run: TypeError when an input's element type is what
  // is wrong, else by status code.
  [[noreturn]] void RaiseRunError(const absl::Status& status, const std::vector<runtime::TensorView>& views) const;

  std::string name_;
  std::vector<std::string> notes_;
  std::vector<Port> inputs_;
  std::vector<Port> outputs_;
  int intra_op_threads_ = 0;
  runtime::SpecializationPolicy policy_ = runtime::SpecializationPolicy::kAuto;
  std::unique_ptr<runtime::Session> session_;
  std::atomic<int64_t> input_copies_{0};
};

}  // namespace shapeshift::python

#endif  // SHAPESHIFT_PYTHON_SRC_MODEL_H_
