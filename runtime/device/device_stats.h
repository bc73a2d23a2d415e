// DeviceStats: what a Device::kCuda Program reports about itself
// (Program::device_stats(); runtime/device/device_program.h).
#ifndef SHAPESHIFT_RUNTIME_DEVICE_DEVICE_STATS_H_
#define SHAPESHIFT_RUNTIME_DEVICE_DEVICE_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cuda/ptxas_report.h"

namespace shapeshift::runtime {

// Counters over the program's life (all contexts).
struct DeviceStats {
  std::string device;          // DeviceInfo::Describe()
  std::string arch;            // the module's: "sm_90", "host emulation"
  int64_t kernels = 0;         // distinct generated kernels in the module
  int64_t gemm_configs = 0;    // distinct cuBLASLt operations
  int64_t requests = 0;
  int64_t direct_runs = 0;     // requests whose steps were enqueued one by one
  int64_t graph_captures = 0;  // graphs captured (one per bucket key per context)
  int64_t graph_replays = 0;   // requests served by replaying captured graphs
  int64_t graph_invalidations = 0;  // graphs dropped because the arena moved
  int64_t host_to_device_copies = 0;
  int64_t device_to_host_copies = 0;
  int64_t constant_bytes = 0;  // weights resident on the device
  std::vector<codegen::cuda::PtxasReport> ptxas;  // per kernel (empty under emulation)
};

}  // namespace shapeshift::runtime

#endif  // SHAPESHIFT_RUNTIME_DEVICE_DEVICE_STATS_H_
