// PassManager: runs named graph passes in order, verifies the graph after
// each, and prints it after the passes the user asked about.
//
// Why: a miscompile is found by looking at the IR between passes
// (`--print-after=simplify`), and an invariant broken by a pass is caught
// at that pass (Graph::Verify after each), not three passes later.
#ifndef SHAPESHIFT_PASSES_PASS_MANAGER_H_
#define SHAPESHIFT_PASSES_PASS_MANAGER_H_

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "shapes/shape_env.h"

namespace shapeshift::passes {

// A graph pass rewrites in place and says whether it changed anything.
using GraphPassFn = std::function<absl::StatusOr<bool>(Graph&, ShapeEnv&)>;

struct PassManagerOptions {
  std::vector<std::string> print_after;  // pass names
  std::ostream* print_stream = nullptr;  // std::cerr when null
  bool verify_each_pass = true;
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options) : options_(std::move(options)) {}

  void Add(std::string name, GraphPassFn pass);
  std::vector<std::string> names() const;

  // Runs every pass once, in order; true when some pass changed the graph.
  // Errors are prefixed with the pass name.
  absl::StatusOr<bool> Run(Graph& graph, ShapeEnv& env) const;
  // Runs the sequence until a round changes nothing (at most `max_rounds`):
  // folding exposes simplifications, which expose more folding and CSE.
  absl::Status RunToFixpoint(Graph& graph, ShapeEnv& env, int max_rounds) const;

  // True when `name` is in print_after; PrintIfRequested prints `text` under
  // a header naming the pass (for stages that are not graph passes).
  bool ShouldPrintAfter(const std::string& name) const;
  void PrintIfRequested(const std::string& name, const std::string& text) const;

 private:
  struct NamedPass {
    std::string name;
    GraphPassFn run;
  };
  PassManagerOptions options_;
  std::vector<NamedPass> passes_;
};

}  // namespace shapeshift::passes

#endif  // SHAPESHIFT_PASSES_PASS_MANAGER_H_
