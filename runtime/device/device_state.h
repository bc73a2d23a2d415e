// Internal to runtime/device: what one ExecutionContext holds for a device
// program — its stream, device arena, parameter block, GEMM workspace and
// the CUDA graphs captured in it (graphs hold this context's addresses, so
// they are per context).
#ifndef SHAPESHIFT_RUNTIME_DEVICE_DEVICE_STATE_H_
#define SHAPESHIFT_RUNTIME_DEVICE_DEVICE_STATE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "codegen/cuda/device_api.h"
#include "runtime/execution_context.h"
#include "shapes/guard_program.h"

namespace shapeshift::runtime {

// One captured bucket key: graph segments, and the GEMMs run between them.
struct GraphSegment {
  std::unique_ptr<codegen::cuda::DeviceGraph> graph;  // or, when null:
  int direct_step = -1;                                // a step run directly
};

struct GraphEntry {
  std::vector<GraphSegment> segments;
  GuardProgram guards;  // the bucket's bounds, checked before each replay
  int64_t replays = 0;
};

class DeviceState : public DeviceContextState {
 public:
  DeviceState(std::shared_ptr<codegen::cuda::DeviceApi> api, uint64_t owner) : api(std::move(api)), owner(owner) {}
  ~DeviceState() override;

  // Creates the stream, parameter block and workspace.
  absl::Status Init(int64_t param_words, size_t workspace_bytes);
  // An arena of at least `bytes`; growing moves it, which invalidates the
  // graphs (returned: how many were dropped).
  absl::StatusOr<int64_t> EnsureArena(size_t bytes);

  std::shared_ptr<codegen::cuda::DeviceApi> api;
  uint64_t owner;  // the id of the DeviceProgram this state belongs to
  codegen::cuda::StreamHandle stream = nullptr;
  codegen::cuda::DevicePtr arena = 0;
  size_t arena_capacity = 0;
  int64_t arena_generation = 0;
  codegen::cuda::DevicePtr params = 0;
  codegen::cuda::DevicePtr workspace = 0;
  size_t workspace_bytes = 0;
  std::vector<uint64_t> host_params;
  std::vector<int64_t> placement;  // tape slots at the placement sizes
  std::vector<int64_t> status;     // gather status words read back
  absl::flat_hash_map<std::string, GraphEntry> graphs;  // by bucket key
  absl::flat_hash_map<std::string, int64_t> sightings;  // requests per bucket key
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_DEVICE_DEVICE_STATE_H_
