// machine_probe: this machine's measured FP32 FMA peak and stream bandwidth
// (machine_probe.h says how each is measured), as one JSON object on stdout,
// for scripts that put a benchmark's figures against the machine's limits
// (bench/peers/run.sh records it before and after its runs; report.py reads
// it). Threads: OMP_NUM_THREADS, default all of the machine's.
//
//   build/bench/machine_probe
//   {"threads": 2, "fma_peak_gflops": 229.8, "triad_gbytes_s": 28.4, "read_gbytes_s": 30.9, ...}
#include <cstdio>
#include <cstring>

#include "bench/machine_probe.h"

int main(int argc, char** argv) {
  if (argc > 1) {
    const bool help = std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0;
    std::fprintf(help ? stdout : stderr,
                 "usage: machine_probe   (prints the FMA peak and stream bandwidths as JSON; takes no arguments)\n");
    return help ? 0 : 2;
  }
  const shapeshift::bench::MachineProbe probe = shapeshift::bench::ProbeMachine();
  std::printf(
      "{\"threads\": %d, \"fma_lanes\": %d, \"fma_peak_gflops\": %.1f, \"fma_peak_gflops_by_cpu_time\": %.1f, "
      "\"triad_gbytes_s\": %.1f, \"triad_gbytes_s_by_cpu_time\": %.1f, \"read_gbytes_s\": %.1f}\n",
      probe.threads, probe.fma_lanes, probe.fma_gflops, probe.fma_gflops_cpu, probe.triad_gbytes_s,
      probe.triad_gbytes_s_cpu, probe.read_gbytes_s);
  return 0;
}
