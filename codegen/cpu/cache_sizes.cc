#include "codegen/cpu/cache_sizes.h"

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace shapeshift::codegen::cpu {

int64_t SysfsCacheBytes(int level) {
  for (int index = 0; index < 16; ++index) {
    const std::string dir = absl::StrCat("/sys/devices/system/cpu/cpu0/cache/index", index, "/");
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    int found = 0;
    std::string type, size;
    if (!(level_file >> found) || !(type_file >> type) || !(size_file >> size)) break;
    if (found != level || type == "Instruction") continue;
    int64_t value = 0;
    size_t used = 0;
    while (used < size.size() && size[used] >= '0' && size[used] <= '9') value = value * 10 + (size[used++] - '0');
    const std::string unit = size.substr(used);  // "512K", "32768K", "1M"
    if (unit == "K") return value << 10;
    if (unit == "M") return value << 20;
    if (unit.empty()) return value;
    return -1;
  }
  return -1;
}

CacheSizes HostCacheSizes() {
  CacheSizes sizes;
  if (const int64_t l2 = SysfsCacheBytes(2); l2 > 0) sizes.l2_bytes = l2;
  if (const int64_t l3 = SysfsCacheBytes(3); l3 > 0) sizes.l3_bytes = l3;
  return sizes;
}

}  // namespace shapeshift::codegen::cpu
