// The data caches of this machine, as Linux describes cpu0's in sysfs
// (/sys/devices/system/cpu/cpu0/cache/index*/). Not the C library's
// sysconf: in a virtual machine it reads the physical host's CPUID (on this
// project's test machine, a 256 MiB L3 where the guest has 32 MiB). The
// skinny GEMM sizes its row chunks from these (skinny_matmul.h), the GEMM
// tuner its cold-cache copies (runtime/tuning/gemm_tuner.h).
#ifndef SHAPESHIFT_CODEGEN_CPU_CACHE_SIZES_H_
#define SHAPESHIFT_CODEGEN_CPU_CACHE_SIZES_H_

#include <cstdint>

namespace shapeshift::codegen::cpu {

// The bytes of cpu0's level-`level` data or unified cache, or -1 where
// sysfs describes none.
int64_t SysfsCacheBytes(int level);

struct CacheSizes {
  int64_t l2_bytes = 512 << 10;  // one core's
  int64_t l3_bytes = 32 << 20;   // shared
};
// This host's L2 and L3 (SysfsCacheBytes); the defaults above where sysfs
// describes none.
CacheSizes HostCacheSizes();

}  // namespace shapeshift::codegen::cpu

#endif  // SHAPESHIFT_CODEGEN_CPU_CACHE_SIZES_H_
